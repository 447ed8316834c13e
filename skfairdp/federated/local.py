"""The local backend: silos and server in one process, one loop, silos vectorised.

Each round: the server broadcasts its public state; every silo checks it, checks
its budget and draws its own Poisson batch; one forward pass and one per-sample
gradient computation serve all silos' batches (:func:`~.release.clipped_sums`,
each silo's rows clipped with its own norm and summed apart); every silo noises
its own sums with its own stream and records the release; the server averages
and steps. The module the silos differentiate is the server's, which holds the
broadcast ``theta`` (in one process the copy is free).

With local steps (``local_steps > 1``) each silo steps its own copy of the model
between its steps, so the silos are not vectorised: each runs
:meth:`~.silo.Silo.release` on its copy, loaded with the broadcast ``theta``, as a
Flower silo does.
"""

from __future__ import annotations

import copy
import time

import torch
from skorch.history import History

from ..engine import PerSampleGradients
from ..engine.loop import check_finite_parameters
from .release import clipped_sums
from .server import Server
from .silo import Silo

__all__ = ["progress_line", "run_local"]


def progress_line(done: int, rounds: int, elapsed: float) -> str:
    """``round 12/60, 3.1 s elapsed, about 12.4 s remaining`` (from the mean round so far)."""
    remaining = elapsed / done * (rounds - done) if done else float("nan")
    return (
        f"round {done}/{rounds}, {_duration(elapsed)} elapsed, "
        f"about {_duration(remaining)} remaining"
    )


def _duration(seconds: float) -> str:
    if seconds != seconds:  # nan: nothing measured yet
        return "?"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def run_local(server: Server, silos: list[Silo], rounds: int, verbose: int = 0) -> History:
    """Run ``rounds`` rounds; returns the per-epoch history (rounds, duration).

    Raises
    ------
    SiloBudgetExceeded
        If a silo refuses a round (the run stops; every silo's recorder holds
        exactly the releases it made).
    """
    history = History()
    local = any(silo.config.local_steps > 1 for silo in silos)
    # with local steps: each silo's own copy of the model (and its gradients)
    copies = [copy.deepcopy(server.module) for _ in silos] if local else [server.module]
    grads = [PerSampleGradients(module) for module in copies]
    per_epoch = server.rounds_per_epoch
    try:
        start = began = time.perf_counter()
        for t in range(rounds):
            broadcast = server.broadcast()
            if local:
                replies = []
                for silo, module, grads_of in zip(silos, copies, grads):
                    _copy_parameters(server.module, module)
                    replies.append(silo.release(broadcast, module, grads_of))
            else:
                batches = [silo.begin_round(broadcast) for silo in silos]
                problem = silos[0].problem(broadcast)
                sums = clipped_sums(grads[0], problem, batches)
                replies = [silo.finish_round(p, d) for silo, (p, d) in zip(silos, sums)]
            server.apply(replies)
            if (t + 1) % per_epoch == 0 or t + 1 == rounds:
                check_finite_parameters(server.module, (t + 1 + per_epoch - 1) // per_epoch)
                history.new_epoch()
                history.record("epoch", len(history))
                history.record("rounds", t + 1)
                history.record("dur", time.perf_counter() - start)
                if verbose:
                    print(progress_line(t + 1, rounds, time.perf_counter() - began), flush=True)
                start = time.perf_counter()
    finally:
        for grads_of in grads:
            grads_of.close()
    return history


def _copy_parameters(source, target) -> None:
    """Load ``source``'s parameters (the broadcast ``theta``) into ``target``."""
    with torch.no_grad():
        for p, q in zip(target.parameters(), source.parameters(), strict=True):
            p.copy_(q)
