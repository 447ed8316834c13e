"""RaCO-DP's post-processing of a released histogram, in float64 on the host (issue 39).

Everything :meth:`RacoProblem.release_batch_statistics` computes after
:meth:`RacoProblem.privatize` (the rates, the constraint values, the per-part weights
``W``, the dual steps and the tolerance margins) and the dual ascent of
:meth:`RacoProblem.dual_update` is arithmetic on the released histogram ``H_hat``
(``Q x K``, a few cells) and on earlier released values: post-processing, free of
privacy cost whatever arithmetic computes it. :class:`HostDual` does that arithmetic in
NumPy float64 on arrays of a few numbers (a NumPy call costs a fraction of a torch
kernel's dispatch) instead of about 45 float32 torch kernels, keeping the multipliers
and the running counts in float64 between steps. The formulas are the problem's, term
for term; only the rounding differs (float64 instead of float32), so the multipliers
and the per-part weights agree with the torch version to about float32's precision
(``tests/test_raco_linear_step.py`` checks 1e-6 relative on random histograms). Nothing
here reads data: its only input per step is the released ``H_hat``.
"""

from __future__ import annotations

import numpy as np
import torch

from .problem import LR_DUAL_MAX, MIN_COUNT, RacoProblem


class HostDual:
    """The dual player of a :class:`RacoProblem` in float64 NumPy (see the module docstring).

    Parameters
    ----------
    problem : RacoProblem
        Read for its constants (membership, coefficients, bounds, step rules) and its
        state at the start; :meth:`store` writes the state and the logs back.
    """

    def __init__(self, problem: RacoProblem):
        def host(t):
            return t.detach().cpu().double().numpy()

        self.S = host(problem.S)  # (M, Q)
        self.S_T = np.ascontiguousarray(self.S.T)
        self.A_flat = host(problem.A_flat)  # (J, M K)
        self.gamma = host(problem.gamma)
        self.A_sq = host(problem._A_sq)  # (J, M)
        self.parts_per_set = host(problem.parts_per_set)
        self.margin_caps = host(problem._margin_caps)
        self.n_sets, self.n_classes = problem.A.shape[1], problem.A.shape[2]
        self.batch_denominators = problem.denominators == "batch"
        self.scale = float(problem.expected_batch_size)
        self.lr_dual = problem.lr_dual
        self.dual_bound = problem.dual_bound
        self.margin_z = problem.margin_z
        self.sampling_rate = problem.sampling_rate
        self.dual_walk_per_step = problem.dual_walk / problem._sqrt_steps
        s2 = 0.0
        if problem.histogram_noise is not None:
            std = problem.histogram_scale * problem.max_weight
            s2 = std**2 * (2.0 if problem.histogram_noise == "laplace" else 1.0)
        self.s2_parts = self.parts_per_set * s2
        self.load(problem)

    def load(self, problem: RacoProblem) -> None:
        """Start from the problem's state (at the start, or after an engine step)."""
        state = problem.state
        self.lam = state["lambda"].detach().cpu().double().numpy()
        self.count_sum = state["count_sum"].detach().cpu().double().numpy()
        self.count_steps = float(state["count_steps"])
        self.violations: list[np.ndarray] = []
        self.lambdas: list[np.ndarray] = []
        self.last_steps = self.last_margins = None
        self.stored = state  # the problem's state these values continue

    def statistics(self, H: np.ndarray) -> tuple[np.ndarray, tuple]:
        """The per-part weights ``W`` (``(Q, K)``) and ``(values, counts, steps, margins)``
        of the released histogram ``H`` (float64), as ``release_batch_statistics``."""
        sums = self.S @ H  # (M, K)
        counts = sums.sum(axis=1)
        running = (self.count_sum + counts) / (self.count_steps + 1.0)
        if self.batch_denominators:
            denom = np.maximum(counts, MIN_COUNT)
            column = denom[:, None]
            rates = np.clip(sums / column, 0.0, 1.0)
        else:
            denom = np.maximum(running, MIN_COUNT)
            column = denom[:, None]
            rates = sums / column
        values = self.A_flat @ rates.reshape(-1)
        coef = (self.lam @ self.A_flat).reshape(self.n_sets, self.n_classes)
        W = self.S_T @ (coef * (self.scale / column))
        margins = steps = None
        if self.margin_z > 0:  # sigma_j = sqrt(sum_m a_jm^2 / (4 n_m)), n_m = running / q
            rows = np.maximum(running / self.sampling_rate, MIN_COUNT)
            sigma = np.sqrt(self.A_sq @ (0.25 / rows))
            margins = np.minimum(self.margin_z * sigma, self.margin_caps)
        if self.lr_dual is None:  # sigma_j of one step's estimate (dual_steps)
            var = (self.s2_parts + 0.25 * denom) / (denom * denom)
            sigma = np.sqrt(self.A_sq @ var)
            # a constraint without coefficients has sigma 0: step LR_DUAL_MAX, as torch's
            steps = np.minimum(self.dual_walk_per_step / np.maximum(sigma, 1e-300), LR_DUAL_MAX)
        return W, (values, counts, steps, margins)

    def update(self, values, counts, steps, margins) -> None:
        """``lambda <- clip(lambda + step (values - (gamma - margins)), 0, dual_bound)``; the
        running counts; the logs (``dual_update``'s)."""
        violation = values - self.gamma
        ascent = violation if margins is None else violation + margins
        step = self.lr_dual if steps is None else steps
        lam = self.lam + step * ascent
        if self.dual_bound is None:
            np.maximum(lam, 0.0, out=lam)
        else:
            np.clip(lam, 0.0, self.dual_bound, out=lam)
        self.lam = lam
        self.count_sum = self.count_sum + counts
        self.count_steps += 1.0
        self.violations.append(violation)
        self.lambdas.append(lam)
        self.last_steps = steps
        if margins is not None:
            self.last_margins = margins

    def store(self, problem: RacoProblem) -> None:
        """Make the steps since :meth:`load` the problem's: its state (float32 tensors, as
        the torch steps keep it), logs, last dual steps and margins."""
        if not self.violations:
            return
        device = problem.A.device

        def tensor(value):
            return torch.as_tensor(np.asarray(value, dtype=np.float32), device=device)

        problem.state = {
            "lambda": tensor(self.lam),
            "count_sum": tensor(self.count_sum),
            "count_steps": tensor(self.count_steps),
        }
        problem.violation_log.extend(tensor(np.stack(self.violations)).unbind(0))
        problem.lambda_log.extend(tensor(np.stack(self.lambdas)).unbind(0))
        problem.last_dual_steps = None if self.last_steps is None else tensor(self.last_steps)
        if self.last_margins is not None:
            problem.last_margins = tensor(self.last_margins)
        self.violations, self.lambdas = [], []
        self.stored = problem.state
