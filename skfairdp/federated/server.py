"""The server: averages what the silos send, steps theta down and W up.

It holds only public values: the model ``theta``, the dual variable ``W`` (one
``k x l`` block, or one per label for equalized odds), the released priors, and
the aggregation weights. Its update is Algorithm 1's line 11:

    theta <- theta - lr * sum_j a_j v_j        (v_j: silo j's noisy mean theta-gradient)
    W     <- Proj_ball(W + lr_dual * sum_j a_j h_j)   (h_j: its noisy mean of lambda grad_W psi)

(with local steps, ``v_j`` and ``h_j`` are sums of a silo's noisy mean gradients over its
steps: then the new theta is the average of the silos' local iterates).

with ``a_j = 1/N`` (``aggregation="uniform"``, the paper's) or ``a_j`` proportional
to silo ``j``'s released (noisy) row count (``"size"``). It never sees a row, a
group, a batch or a clipping norm.
"""

from __future__ import annotations

import numpy as np
import torch

from ..engine.iterates import TailAverage
from . import objective
from .silo import REPLY_KEYS

__all__ = ["Server", "aggregation_weights"]


def aggregation_weights(aggregation: str, sizes: np.ndarray | None, n_silos: int) -> np.ndarray:
    """``a_j``: uniform, or proportional to the released silo sizes (clamped at 1)."""
    if aggregation == "uniform":
        return np.full(n_silos, 1.0 / n_silos)
    if aggregation != "size":
        raise ValueError(f"aggregation must be 'uniform' or 'size', got {aggregation!r}")
    if sizes is None:
        raise ValueError("aggregation='size' needs the silos' released sizes (round 0)")
    sizes = np.maximum(np.asarray(sizes, dtype=float), 1.0)
    return sizes / sizes.sum()


class Server:
    """Descent on theta, projected ascent on W, from the silos' replies.

    Parameters
    ----------
    module : torch.nn.Module
        The model (its parameters are ``theta``).
    optimizer : torch.optim.Optimizer
    statistics : dict
        From :func:`~skfairdp.federated.objective.public_statistics`.
    fairness, fairness_weight, privacy_unit, private, dual_rates
        The objective.
    dual_bound : float
        Radius of W's Frobenius ball (per block).
    lr_dual : float
        W's step on the averaged ``lambda grad_W psi``.
    weights : ndarray of shape (n_silos,)
        Aggregation weights ``a_j``.
    rounds : int
        Planned rounds (for the tail average).
    n_classes : int
        Outputs of the module.
    iterate : {"average", "last"}
        Return the mean of the last half of the iterates (post-processing) or the last.
    lr_decay : float
        Factor applied to ``lr`` after each epoch of ``rounds_per_epoch`` rounds.
    rounds_per_epoch : int
    """

    def __init__(
        self,
        module,
        optimizer,
        statistics: dict,
        *,
        fairness: str,
        fairness_weight: float,
        privacy_unit: str,
        private: bool,
        dual_rates: str,
        dual_bound: float,
        lr_dual: float,
        weights: np.ndarray,
        rounds: int,
        n_classes: int,
        iterate: str = "average",
        lr_decay: float = 1.0,
        rounds_per_epoch: int = 1,
    ):
        self.module = module
        self.optimizer = optimizer
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.sizes = [p.numel() for p in self.params]
        self.statistics = statistics
        self.weights = np.asarray(weights, dtype=float)
        blocks = objective.n_blocks(fairness, n_classes)
        n_groups = statistics["pinv"].shape[1]
        average = TailAverage(module, rounds) if iterate == "average" else None
        self.problem = objective.make_problem(
            W=torch.zeros(blocks, n_groups, n_classes),
            pinv=statistics["pinv"],
            fairness=fairness,
            fairness_weight=fairness_weight,
            privacy_unit=privacy_unit,
            private=private,
            dual_rates=dual_rates,
            dual_bound=dual_bound,
            lr_dual=lr_dual,
            average=average,
        )
        # the public statistics as broadcast every round (read-only copies, made once)
        self._pinv = _read_only(statistics["pinv"].cpu().numpy())
        self._label_weights = _read_only(np.asarray(statistics["label_weights"], dtype=np.float64))
        self.lr_decay = float(lr_decay)
        self.rounds_per_epoch = max(1, int(rounds_per_epoch))
        self.round = 0

    @property
    def W(self) -> torch.Tensor:
        return self.problem.W

    def theta(self) -> np.ndarray:
        """The flat parameter vector (float32)."""
        with torch.no_grad():
            return torch.cat([p.detach().reshape(-1) for p in self.params]).cpu().numpy()

    def broadcast(self) -> dict:
        """What every silo receives this round (public values only).

        With the step sizes (:data:`~.silo.LOCAL_STEP_KEYS`) a silo taking local steps
        steps with: ``lr`` (this round's, after any decay), ``lr_dual``, ``dual_bound``.
        """
        return {
            "round": self.round,
            "theta": self.theta(),
            "W": self.W.cpu().numpy(),
            "pinv": self._pinv,
            "label_weights": self._label_weights,
            "lr": float(self.optimizer.param_groups[0]["lr"]),
            "lr_dual": float(self.problem.lr_dual),
            "dual_bound": float(self.problem.dual_bound),
        }

    def check_reply(self, reply: dict, silo: str) -> None:
        """A reply holds exactly the declared noisy arrays, of the right shapes."""
        expected = {"theta"} | ({"W"} if self.problem.lam > 0 else set())
        if set(reply) != expected or not set(reply) <= REPLY_KEYS:
            raise ValueError(f"{silo} replied {sorted(reply)}, expected {sorted(expected)}")
        if np.shape(reply["theta"]) != (sum(self.sizes),):
            raise ValueError(f"{silo}: theta-gradient of shape {np.shape(reply['theta'])}")
        if "W" in reply and np.size(reply["W"]) != self.W.numel():
            raise ValueError(f"{silo}: W-gradient of size {np.size(reply['W'])}")

    def apply(self, replies: list[dict]) -> None:
        """Average the replies (weights ``a_j``) and take the descent-ascent step."""
        if len(replies) != len(self.weights):
            raise ValueError(
                f"round {self.round}: {len(replies)} replies for {len(self.weights)} silos"
            )
        for j, reply in enumerate(replies):
            self.check_reply(reply, f"silo {j}")
        theta = _weighted(replies, "theta", self.weights)
        chunks = theta.split_with_sizes(self.sizes)
        for p, g in zip(self.params, chunks):
            p.grad = g.view_as(p).to(p.device)
        self.optimizer.step()
        if self.problem.lam > 0:
            self.problem.dual_step(_weighted(replies, "W", self.weights).to(self.W.device))
        else:  # no W step; the tail average still counts the round
            self.problem.dual_step(self.W.new_zeros(self.W.numel()))
        self.round += 1
        if self.lr_decay != 1.0 and self.round % self.rounds_per_epoch == 0:
            for group in self.optimizer.param_groups:
                group["lr"] *= self.lr_decay

    def finish(self) -> None:
        """Load the tail-averaged iterate into the module (``iterate="average"``)."""
        if self.problem.average is not None:
            self.problem.average.load()


def _read_only(values: np.ndarray) -> np.ndarray:
    """A copy that nobody can modify (it is handed to every silo, every round)."""
    array = np.array(values)
    array.flags.writeable = False
    return array


def _weighted(replies, key, weights) -> torch.Tensor:
    """``sum_j a_j reply_j[key]`` in float32, added in silo order."""
    total = None
    for a, reply in zip(weights, replies):
        part = np.asarray(reply[key], dtype=np.float32).reshape(-1) * np.float32(a)
        total = part if total is None else total + part
    return torch.from_numpy(total)
