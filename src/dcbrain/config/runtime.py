"""The composition root: what a process is built from, resolved once, and what it builds.

Every command builds the same way: :class:`AppSettings` (the config file, the
``DCBRAIN_...`` variables over it, and the command's own flags, resolved once), then
:func:`build_runtime`, which makes the parts every surface shares: the brain, the store of
runs, the conversation memory, the durable engine when runs are durable, and the
process's telemetry. A surface (the HTTP app, a worker, the MCP server) is built from the
:class:`Runtime`, never again from the config; closing the runtime closes what it opened.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from dcbrain.brain import DCBrain
    from dcbrain.config import Config
    from dcbrain.durable import DurableEngine, EventHub
    from dcbrain.durable.store import DurableStore
    from dcbrain.memory import Memory, RunStore


@dataclass(frozen=True)
class AppSettings:
    """What a process is configured with: the config (TOML + ``DCBRAIN_...``) and flags.

    ``db`` is ``--db`` (a PostgreSQL URL shared with workers: conversations live there
    too); ``outage_wait_s`` how long the process waits out an outage of that database;
    ``brain`` whether the process builds a brain (an API node does not: workers run);
    ``trace_path`` a JSONL file every event of its runs is appended to; ``keep_runs``
    whether runs are kept in a store (a server's and a worker's are; ``ask`` keeps none).

    ``role`` (``serve``, ``worker``, ``ask``, ``mcp``) turns the process's telemetry on
    (``[telemetry]``: the OTLP span exporter, spans marked with the role); ``None``
    leaves tracing as it is. ``durable`` says whether runs are durable workflows:
    ``"on"`` (required: ``durable_for`` names what needs them in the error), ``"auto"``
    (when DBOS can be imported; required with ``db``) or ``"off"``. ``executes``: the
    engine takes runs from the queue (else it only queues and follows them, as
    ``mcp --shared`` does); ``concurrency``, ``executor_id``, ``app_version`` and
    ``dead_after_s`` configure that engine (``None``: the engine's defaults).
    """

    config: Config
    db: str | None = None
    outage_wait_s: float = 0.0
    brain: bool = True
    trace_path: str | Path | None = None
    keep_runs: bool = True
    role: str | None = None
    durable: Literal["off", "auto", "on"] = "off"
    durable_for: str = "this command"
    executes: bool = True
    concurrency: int = 16
    executor_id: str | None = None
    app_version: str | None = None
    dead_after_s: float | None = None

    @classmethod
    def resolve(cls, path: str | Path | None = None, **flags: Any) -> AppSettings:
        """The config ``path`` (else ``$DCBRAIN_CONFIG``, else ``./dcbrain.toml`` if
        present, else none) with ``DCBRAIN_...`` over it, and the command's ``flags``."""
        from dcbrain.config import find_config

        return cls(find_config(None if path is None else Path(path)), **flags)


@dataclass
class Durable:
    """Durable runs: the engine (a worker when it has an executor), the store of runs,
    their journals and events, and the hub that streams events to followers.

    ``capacity`` caps the conversations with a live run a node accepts when it executes
    them itself (``None``: runs wait in the queue for a worker).
    """

    engine: DurableEngine
    store: DurableStore
    hub: EventHub
    capacity: int | None = None


@dataclass
class Telemetry:
    """The process's span exporter (``[telemetry]``): flushed and stopped by :meth:`close`,
    else when the process exits."""

    role: str
    shutdown: Callable[[], None] | None = None

    def close(self) -> None:
        shutdown, self.shutdown = self.shutdown, None
        if shutdown is not None:
            atexit.unregister(shutdown)
            shutdown()


@dataclass
class Runtime:
    """The parts one process shares between its runs, built once by :func:`build_runtime`.

    ``brain`` is the one brain every run executes on (``None`` on an API node); ``store``
    keeps runs and their events; ``memory`` the conversations when they live apart from
    the brain (``--db``); ``durable`` the engine when runs are durable; ``telemetry``
    the process's exporter; ``output_type`` the type answers are validated into;
    ``retention`` how long finished runs are kept and how often they are pruned.
    ``brains`` replaces the one brain by a factory called per run (tests, embedders).
    """

    brain: DCBrain | None = None
    store: RunStore | None = None
    memory: Memory | None = None
    durable: Durable | None = None
    telemetry: Telemetry | None = None
    output_type: Any = None
    retention: tuple[float, float] | None = None
    brains: Callable[[], DCBrain] | None = None
    settings: AppSettings | None = None
    _closed: list[bool] = field(default_factory=lambda: [False], repr=False)

    @property
    def engine(self) -> DurableEngine | None:
        """The durable engine (``None``: runs execute in this process, not durably)."""
        return None if self.durable is None else self.durable.engine

    @property
    def conversations(self) -> Memory | None:
        """Where conversations are read: the shared memory, else the store when it is one."""
        from dcbrain.memory import Memory

        if self.memory is not None:
            return self.memory
        return self.store if isinstance(self.store, Memory) else None

    def brain_factory(self) -> Callable[[], DCBrain] | None:
        """The brain as a factory (what the in-process run manager calls per run): it
        returns the one shared brain (or calls ``brains``); ``None`` without a brain."""
        if self.brains is not None:
            return self.brains
        brain = self.brain
        if brain is None:
            return None

        def factory() -> DCBrain:
            return brain

        return factory

    def close(self) -> None:
        """Close the stores this runtime opened and flush its telemetry (once)."""
        if self._closed[0]:
            return
        self._closed[0] = True
        durable = None if self.durable is None else self.durable.store
        for part in {id(part): part for part in (durable, self.store, self.memory)
                     if part is not None}.values():
            part.close()
        if self.telemetry is not None:
            self.telemetry.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def build_runtime(settings: AppSettings) -> Runtime:
    """The :class:`Runtime` ``settings`` describe.

    Raises :class:`~dcbrain.exceptions.ConfigError` for a bad config and ``ValueError``
    (or ``OSError``) for what cannot be opened (``--db`` without the durable extra).
    """
    from dcbrain.config.composition import (
        FALLBACK_DB,
        build_brain,
        load_output_type,
        retention_periods,
        shared_memory,
    )
    from dcbrain.memory import RunStore, SQLiteRunStore

    config = settings.config
    telemetry = None if settings.role is None else start_telemetry(config, settings.role)
    output_type = load_output_type(config)
    memory = shared_memory(config, settings.db, outage_wait_s=settings.outage_wait_s)
    brain: DCBrain | None = None
    store: RunStore | None = None
    if settings.brain:
        brain = build_brain(config, trace_path=settings.trace_path, memory=memory)
        if isinstance(brain.memory, RunStore):
            store = brain.memory
        elif settings.keep_runs:  # memory is off: runs go to a store of their own
            store = SQLiteRunStore(config.resolve(FALLBACK_DB))
    runtime = Runtime(brain, store, memory, telemetry=telemetry, output_type=output_type,
                      retention=retention_periods(config), settings=settings)
    runtime.durable = open_durable(settings, runtime)
    return runtime


def open_durable(settings: AppSettings, runtime: Runtime) -> Durable | None:
    """The durable engine ``settings`` ask for, on ``runtime``'s store (or ``--db``);
    ``None`` when runs are not durable (``durable="auto"`` without DBOS and ``--db``)."""
    if settings.durable == "off":
        return None
    missing = durable_runs_missing()
    if missing is not None:
        if settings.durable == "auto" and settings.db is None:
            return None
        raise ValueError(f"{settings.durable_for} needs durable runs, but {missing}")
    if settings.db is None and runtime.store is None:
        raise ValueError("the config's [memory] path must name the SQLite file `dcbrain "
                         "serve` uses (or give --db)")
    from dcbrain.durable.setup import build_engine, open_store

    db_url, store = open_store(settings.db, runtime.store,
                               outage_wait_s=settings.outage_wait_s)
    factory = runtime.brain_factory() if settings.executes else None
    tuning: dict[str, Any] = {} if settings.dead_after_s is None \
        else {"dead_after_s": settings.dead_after_s}
    engine, hub = build_engine(db_url, store, settings.config, factory,
                               concurrency=settings.concurrency,
                               executor_id=settings.executor_id,
                               app_version=settings.app_version, **tuning)
    return Durable(engine, store, hub, settings.concurrency if factory is not None else None)


def start_telemetry(config: Config, role: str) -> Telemetry:
    """The OTLP span exporter of ``config``'s ``[telemetry]`` for a process of ``role``
    (flushed at exit if the runtime is not closed before)."""
    from dcbrain.telemetry import configure_tracing

    endpoint = config.telemetry.otlp_endpoint
    shutdown = configure_tracing(None if endpoint is None else str(endpoint), role=role,
                                 arguments=config.telemetry.span_arguments)
    if shutdown is not None:
        atexit.register(shutdown)  # the last spans are sent before the process exits
    return Telemetry(role, shutdown)


def durable_runs_missing() -> str | None:
    """Why durable runs cannot be had in this Python (``None``: they can)."""
    try:
        import dcbrain.durable.setup  # noqa: F401
    except ImportError as exc:
        return (f"DBOS cannot be imported ({exc}); reinstall dcbrain with its dependencies "
                '(pip install -e ".[local]")')
    return None


def outage_wait(db: str | None) -> float:
    """How long a process that executes runs on ``db`` waits out a database outage."""
    if db is None or durable_runs_missing() is not None:
        return 0.0
    from dcbrain.durable.setup import OUTAGE_WAIT_S

    return OUTAGE_WAIT_S
