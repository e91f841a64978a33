"""The composition root: what a process is built from, resolved once, and what it builds.

Every command builds the same way: :class:`AppSettings` (the config file, the
``DCBRAIN_...`` variables over it, and the command's own flags, resolved once), then
:func:`build_runtime`, which makes the parts every surface shares: the brain, the store of
runs, the conversation memory, the output type and the retention periods. What a surface
adds (the HTTP app, a worker's engine, the MCP server) is built from the
:class:`Runtime`, never again from the config.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dcbrain.brain import DCBrain
    from dcbrain.config import Config
    from dcbrain.memory import Memory, RunStore


@dataclass(frozen=True)
class AppSettings:
    """What a process is configured with: the config (TOML + ``DCBRAIN_...``) and flags.

    ``db`` is ``--db`` (a PostgreSQL URL shared with workers: conversations live there
    too); ``outage_wait_s`` how long the process waits out an outage of that database;
    ``brain`` whether the process builds a brain (an API node does not: workers run);
    ``trace_path`` a JSONL file every event of its runs is appended to; ``keep_runs``
    whether runs are kept in a store (a server's and a worker's are; ``ask`` keeps none).
    """

    config: Config
    db: str | None = None
    outage_wait_s: float = 0.0
    brain: bool = True
    trace_path: str | Path | None = None
    keep_runs: bool = True

    @classmethod
    def resolve(cls, path: str | Path | None = None, **flags: Any) -> AppSettings:
        """The config ``path`` (else ``$DCBRAIN_CONFIG``, else ``./dcbrain.toml`` if
        present, else none) with ``DCBRAIN_...`` over it, and the command's ``flags``."""
        from dcbrain.config import find_config

        return cls(find_config(None if path is None else Path(path)), **flags)


@dataclass
class Runtime:
    """The parts one process shares between its runs, built once by :func:`build_runtime`.

    ``brain`` is the one brain every run executes on (``None`` on an API node); ``store``
    keeps runs and their events; ``memory`` the conversations when they live apart from
    the brain (``--db``); ``output_type`` the type answers are validated into;
    ``retention`` how long finished runs are kept and how often they are pruned.
    """

    settings: AppSettings
    brain: DCBrain | None
    store: RunStore | None
    memory: Memory | None
    output_type: Any = None
    retention: tuple[float, float] | None = None
    _closed: list[bool] = field(default_factory=lambda: [False], repr=False)

    @property
    def config(self) -> Config:
        return self.settings.config

    @property
    def conversations(self) -> Memory | None:
        """Where conversations are read: the shared memory, else the store when it is one."""
        from dcbrain.memory import Memory

        if self.memory is not None:
            return self.memory
        return self.store if isinstance(self.store, Memory) else None

    def brain_factory(self) -> Callable[[], DCBrain] | None:
        """The brain as a factory (what the in-process run manager calls per run): it
        returns the one shared brain; ``None`` without a brain."""
        brain = self.brain
        if brain is None:
            return None

        def factory() -> DCBrain:
            return brain

        return factory

    def close(self) -> None:
        """Close the stores this runtime opened (once)."""
        if self._closed[0]:
            return
        self._closed[0] = True
        for part in {id(part): part for part in (self.store, self.memory)
                     if part is not None}.values():
            part.close()


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
    return Runtime(settings, brain, store, memory, output_type, retention_periods(config))
