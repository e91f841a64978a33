"""Memory: conversation, documents, knowledge and a keyword index, recalled within budgets."""

from dcbrain.memory.base import (
    ALL_KINDS,
    DEFAULT_CHUNK_TOKENS,
    Memory,
    MemoryItem,
    MemoryKind,
    RunEventRecord,
    RunRecord,
)
from dcbrain.memory.recall import (
    DEFAULT_MEMORY_CHUNK_SIZE,
    TRUNCATION_MARKER,
    MemoryChunkSize,
    Recall,
    RecallBudget,
    recall,
)
from dcbrain.memory.sqlite import SCHEMA_VERSION, SQLiteMemory

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
    "SQLiteMemory",
    "recall",
]
