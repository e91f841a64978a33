"""Memory (conversation, documents, knowledge, keyword index) and the run store.

``Memory`` is what planning recalls; ``RunStore`` keeps runs, their events and
key/values. ``SQLiteMemory`` is both on one file; ``SQLiteRunStore`` is the run store
alone, for a deployment whose memory lives elsewhere.
"""

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
