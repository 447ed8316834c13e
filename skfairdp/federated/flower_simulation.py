"""``backend="flower-simulation"``: the Flower app on Flower's Simulation Engine, one machine.

For single-machine studies of the Flower app: the same ServerApp
(:data:`~.flower.server_app`), ClientApp handlers (:mod:`~.flower_client`) and silo code
(:class:`~.flower_silo.SiloHost`) as ``backend="flower"``, run by Flower's Simulation
Engine (``flwr[simulation]``, which needs ``ray``) in this process and Ray's workers
instead of a SuperLink and SuperNodes: no process per message, no polls.

**What it gives up against a deployment** (``backend="flower"``, or the multi-machine
recipe of doc/federated.md): every silo runs on this machine, in worker processes of this
driver, so the silos are not isolated from each other or from the server (their rows are
files in one temporary directory); each silo's privacy settings (its node config) reach
it through this process, not from a SuperNode the server cannot touch; there is no
network, TLS, heartbeat or node failure. The privacy accounting is the same (each silo
calibrates, noises and records its own releases), but the setting is a simulation of
ISRL-DP, not a deployment of it.

Flower 1.41's public ``flwr.simulation.run_simulation`` runs the ServerApp with an empty
run config and gives each simulated node only ``partition-id`` and ``num-partitions`` as
node config; the app needs both (the protocol in the run config, each silo's privacy in
its node config). So this runs ``flwr.simulation.run_simulation._run_simulation`` (the
function ``run_simulation`` calls) with the run config, and the ClientApp gets each silo's
node config by its partition id from a mod (:class:`SiloNodeConfigs`). Tied to flwr 1.41
(the ``federated`` extra pins ``<1.42``).
"""

from __future__ import annotations

import importlib.util
import logging
import random

from . import silo_files
from .flower_install import require_flwr

__all__ = ["SiloNodeConfigs", "require_simulation", "run_simulated"]


def require_simulation() -> None:
    """Raise an ImportError naming the extra when flwr or ray is missing."""
    require_flwr()
    if importlib.util.find_spec("ray") is None:
        raise ImportError(
            "backend='flower-simulation' needs Flower's Simulation Engine (ray): "
            'pip install "flwr[simulation]>=1.41,<1.42" (or pip install -e ".[simulation]" '
            "from a checkout)"
        )


class SiloNodeConfigs:
    """A ClientApp mod: each simulated node answers as the silo of its partition id.

    Replaces the node config the Simulation Engine gives (``partition-id``,
    ``num-partitions``) by that silo's node config (the ``partition-id`` kept), and the
    run config (which the engine fills from an installed app only) by the run's, before
    the message reaches the handlers, and opens the fit's ``key`` of the sealed silo
    files (:func:`~.silo_files.key_scope`) around them. An object (not a closure) so
    that it is pickled, with the configs and the key, to Ray's workers: a task argument
    of a few kB, which Ray passes in memory (only objects of its object store, 100 kB
    and more, can be spilled to disk).
    """

    def __init__(self, node_configs: list[dict], run_config: dict, key: bytes | None = None):
        self.node_configs = [dict(node) for node in node_configs]
        self.run_config = dict(run_config)
        self.key = key

    def __call__(self, message, context, call_next):
        partition = int(context.node_config["partition-id"])
        context.node_config = {**self.node_configs[partition], "partition-id": partition}
        engine_run_config = context.run_config
        context.run_config = dict(self.run_config)
        try:
            with silo_files.key_scope(self.key):
                return call_next(message, context)
        finally:  # the engine refuses a context whose run config changed
            context.run_config = engine_run_config


def _client_app(node_configs: list[dict], run_config: dict, key: bytes | None = None):
    from flwr.clientapp import ClientApp

    from .flower_client import histogram, train

    app = ClientApp(mods=[SiloNodeConfigs(node_configs, run_config, key)])
    app.query("histogram")(histogram)
    app.train()(train)
    return app


def run_simulated(
    node_configs: list[dict], run_config: dict, app_dir: str, key: bytes | None = None
) -> None:
    """Run the app once on the Simulation Engine; the ServerApp writes ``output-path``.

    Each silo answers in its Ray worker (``silo-worker=false``: no process of its own),
    with ``key`` to its sealed files (:mod:`~.silo_files`).

    Raises
    ------
    RuntimeError
        When the ServerApp fails (a silo's refusal, a budget exceeded).
    """
    require_simulation()
    from flwr.app import Context, RecordDict
    from flwr.common.constant import SUPERLINK_NODE_ID
    from flwr.simulation.run_simulation import _run_simulation
    from flwr.supercore.constant import NOOP_FEDERATION_ID
    from flwr.supercore.run import Run
    from flwr.supercore.task_identity import TaskIdentity
    from flwr.supercore.telemetry import EventType

    from .flower import server_app

    nodes = [{**node, "silo-worker": False} for node in node_configs]
    run_id = random.SystemRandom().randrange(1, 2**63)
    run = Run.create_empty(run_id=run_id)
    run.override_config = dict(run_config)
    run.primary_task_id = random.SystemRandom().randrange(1, 2**63)
    run.federation_id = NOOP_FEDERATION_ID
    # what run_simulation sets: the ServerApp's messages come from the SuperLink's node
    TaskIdentity.task_id, TaskIdentity.run_id = 1, run_id
    TaskIdentity.node_id = SUPERLINK_NODE_ID
    context = Context(
        run_id=run_id, node_id=0, node_config={}, state=RecordDict(), run_config=dict(run_config)
    )
    level = logging.getLogger("flwr").level
    try:
        _run_simulation(
            num_supernodes=len(nodes),
            exit_event=EventType.PYTHON_API_RUN_SIMULATION_LEAVE,
            client_app=_client_app(nodes, run_config, key),
            server_app=server_app,
            backend_name="ray",
            backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}},
            server_app_context=context,
            app_dir=app_dir,
            run=run,
        )
    finally:
        logging.getLogger("flwr").setLevel(level)
