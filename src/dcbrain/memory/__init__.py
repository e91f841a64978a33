"""Memory (conversation, documents, knowledge, keyword index) and the run store.

``Memory`` is what planning recalls; ``RunStore`` keeps runs, their events and
key/values. ``SQLiteMemory`` is both on one file; ``SQLiteRunStore`` is the run store
alone, for a deployment whose memory lives elsewhere. Both are imported on first use
(a brain without SQLite memory does not load ``sqlite3``).
"""

from typing import TYPE_CHECKING

from dcbrain._lazy import lazy_exports
from dcbrain.memory.base import (
    ALL_KINDS,
    DEFAULT_CHUNK_TOKENS,
    Memory,
    MemoryItem,
    MemoryKind,
)
from dcbrain.memory.recall import (
    DEFAULT_MEMORY_CHUNK_SIZE,
    TRUNCATION_MARKER,
    MemoryChunkSize,
    Recall,
    RecallBudget,
    recall,
)
from dcbrain.memory.run_store import RunEventRecord, RunRecord, RunStore, StoredRun

if TYPE_CHECKING:
    from dcbrain.memory.sqlite import SCHEMA_VERSION, SQLiteMemory
    from dcbrain.memory.sqlite_runs import SQLiteRunStore

__all__ = [
    "ALL_KINDS",
    "DEFAULT_CHUNK_TOKENS",
    "DEFAULT_MEMORY_CHUNK_SIZE",
    "SCHEMA_VERSION",
    "TRUNCATION_MARKER",
    "Memory",
    "MemoryChunkSize",
    "MemoryItem",
    "MemoryKind",
    "Recall",
    "RecallBudget",
    "RunEventRecord",
    "RunRecord",
    "RunStore",
    "SQLiteMemory",
    "SQLiteRunStore",
    "StoredRun",
    "recall",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "SCHEMA_VERSION": "dcbrain.memory.sqlite",
    "SQLiteMemory": "dcbrain.memory.sqlite",
    "SQLiteRunStore": "dcbrain.memory.sqlite_runs",
})
