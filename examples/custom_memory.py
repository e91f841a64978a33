"""A memory of your own: implement ``Memory`` only, keep runs in a ``SQLiteRunStore``.

``WordVectorMemory`` keeps items in a list and ranks them by cosine similarity of
hashed bag-of-words vectors — a stand-in for a real vector store. The brain recalls from
it while planning; the server (not started here) would keep runs in the run store.
"""

from __future__ import annotations

import math
import re
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.memory import ALL_KINDS, Memory, MemoryItem, MemoryKind, SQLiteRunStore
from dcbrain.messages import TextMessage, as_message


def embed(text: str) -> Counter[int]:
    """A toy embedding: counts of hashed lower-case words."""
    return Counter(zlib.crc32(word.encode()) % 1024 for word in re.findall(r"\w+", text.lower()))


def cosine(a: Counter[int], b: Counter[int]) -> float:
    dot = sum(count * b[key] for key, count in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


class WordVectorMemory(Memory):
    """Items in a list, searched by vector similarity."""

    def __init__(self) -> None:
        self._items: list[MemoryItem] = []
        self._lock = threading.Lock()

    def _add(self, conversation_id: str, kind: MemoryKind, text: str, **fields: Any) -> int:
        with self._lock:
            item = MemoryItem(kind=kind, id=len(self._items) + 1,
                              conversation_id=conversation_id, text=text,
                              created_at=fields.pop("created_at", time.time()), **fields)
            self._items.append(item)
            return item.id

    def commit_message(
        self, conversation_id: str, message: TextMessage | str, role: str = "user"
    ) -> int:
        msg = as_message(message, role=role)
        return self._add(conversation_id, "message", msg.content, role=msg.role,
                         created_at=msg.created_at, metadata=dict(msg.additional_kwargs))

    def add_document(
        self,
        conversation_id: str,
        text: str,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
        chunk_tokens: int = 512,
    ) -> int:
        return self._add(conversation_id, "document", text, source=source,
                         metadata=dict(metadata or {}))

    def add_knowledge(
        self, conversation_id: str, text: str, metadata: dict[str, Any] | None = None
    ) -> int:
        return self._add(conversation_id, "knowledge", text, metadata=dict(metadata or {}))

    def messages(self, conversation_id: str, limit: int | None = None) -> list[TextMessage]:
        turns = [i.to_message() for i in self._of(conversation_id, "message")]
        return turns if limit is None else turns[-limit:] if limit > 0 else []

    def recent(
        self,
        conversation_id: str,
        kind: MemoryKind,
        *,
        limit: int = 100,
        before_id: int | None = None,
    ) -> list[MemoryItem]:
        items = [i for i in reversed(self._of(conversation_id, kind))
                 if before_id is None or i.id < before_id]
        return items[:limit]

    def search(
        self,
        query: str,
        conversation_id: str | None = None,
        kinds: Sequence[MemoryKind] = ALL_KINDS,
        limit: int = 10,
        offset: int = 0,
    ) -> list[MemoryItem]:
        wanted = embed(query)
        scored = [(cosine(wanted, embed(i.text)), i) for i in list(self._items)
                  if i.kind in kinds and conversation_id in (None, i.conversation_id)]
        ranked = sorted((pair for pair in scored if pair[0] > 0),
                        key=lambda pair: (-pair[0], -pair[1].id))
        return [replace(item, score=score) for score, item in ranked[offset:offset + limit]]

    def delete_conversation(self, conversation_id: str) -> int:
        with self._lock:
            kept = [i for i in self._items if i.conversation_id != conversation_id]
            deleted, self._items = len(self._items) - len(kept), kept
            return deleted

    def _of(self, conversation_id: str, kind: MemoryKind) -> list[MemoryItem]:
        return [i for i in self._items if i.conversation_id == conversation_id and i.kind == kind]


memory = WordVectorMemory()
memory.add_knowledge("demo", "The user's flight LH454 leaves Frankfurt at 9:40.")
memory.add_knowledge("demo", "The user prefers aisle seats.")
planner = ScriptedLLM(["Your flight leaves at 9:40."])
brain = DCBrain(default_llm=planner, memory=memory)
result = brain.run("When does my flight leave?", conversation_id="demo")
print(f"= {result.status}: {result.final_result}")
print(memory.recall("demo", "flight time").knowledge_text(), end="")

with tempfile.TemporaryDirectory() as directory, \
        SQLiteRunStore(Path(directory) / "runs.db") as runs:
    # create_app(Runtime(brain, runs, memory=memory)) would serve this pair over HTTP.
    runs.save_run("r1", "demo", result.status, {"question": "When does my flight leave?"})
    print([(run.run_id, run.status) for run in runs.list_runs("demo")])
