"""Processes share one file, a killed writer loses no acknowledged write, old files migrate."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dcbrain.exceptions import TFMemoryError
from dcbrain.llm.tokens import cl100k_base_length
from dcbrain.memory import SCHEMA_VERSION, SQLiteMemory
from dcbrain.memory.recall import render_entry

WRITER = Path(__file__).with_name("writer_process.py")
sys.path.insert(0, str(WRITER.parent))
from writer_process import document_text  # noqa: E402


def start_writer(db_path: Path, name: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(db_path), name, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def acknowledged(output: str) -> list[tuple[str, int, int]]:
    """The complete lines a writer printed: (kind, n, id) of each acknowledged write."""
    lines = output.split("\n")[:-1]  # a line cut by the kill has no newline yet
    return [(kind, int(n), int(item_id)) for kind, n, item_id in (line.split() for line in lines)]


def expected_chunks(name: str, n: int) -> int:
    with SQLiteMemory(":memory:") as scratch:
        scratch.add_document("x", document_text(name, n), chunk_tokens=40)
        return len(scratch.recent("x", "document", limit=1000))


def assert_consistent(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO items_fts (items_fts) VALUES ('integrity-check')")
        indexed = conn.execute("SELECT count(*) FROM items_fts").fetchone()[0]
        stored = conn.execute("SELECT count(*) FROM items").fetchone()[0]
        assert indexed == stored
        # A document is stored whole or not at all.
        for source, chunks in conn.execute(
            "SELECT source, count(*) FROM items WHERE kind = 'document' GROUP BY document_id"
        ):
            name, n = source.rsplit("-", 1)
            assert chunks == expected_chunks(name, int(n)), source
    finally:
        conn.close()


def test_two_processes_writing_one_file_lose_nothing(db_path: Path) -> None:
    SQLiteMemory(db_path).close()  # create the schema before the race starts
    writers = {name: start_writer(db_path, name, 150) for name in ("alpha", "beta")}
    outputs = {}
    for name, process in writers.items():
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        outputs[name] = acknowledged(stdout)

    with SQLiteMemory(db_path) as memory:
        contents = [m.content for m in memory.messages("shared")]
        documents = memory.recent("shared", "document", limit=100_000)
        for name, writes in outputs.items():
            assert len(writes) == 150
            expected = [f"{name} message {n}" for kind, n, _ in writes if kind == "message"]
            assert [c for c in contents if c.startswith(f"{name} ")] == expected
            sources = {d.source for d in documents if d.source and d.source.startswith(name)}
            assert sources == {f"{name}-{n}" for kind, n, _ in writes if kind == "document"}
        assert len(memory.search("alpha message", "shared", limit=1000)) >= 120
    assert_consistent(db_path)


def test_a_killed_writer_loses_no_acknowledged_commit(db_path: Path) -> None:
    SQLiteMemory(db_path).close()
    for round_number in range(3):
        name = f"w{round_number}"
        writer = start_writer(db_path, name, 0)
        assert writer.stdout is not None
        lines = []
        for line in writer.stdout:  # let it commit for a while, then kill it mid-loop
            lines.append(line)
            if len(lines) == 120 + 37 * round_number:
                break
        writer.send_signal(signal.SIGKILL)
        # read the rest through the same buffered stream: communicate() would read the pipe
        # underneath it and lose what the line iterator had already buffered
        rest = writer.stdout.read()
        writer.wait(timeout=60)
        assert writer.stderr is not None
        writer.stderr.close()
        writer.stdout.close()
        assert writer.returncode == -signal.SIGKILL
        writes = acknowledged("".join(lines) + rest)
        assert len(writes) >= len(lines)

        assert_consistent(db_path)
        with SQLiteMemory(db_path) as memory:
            contents = {m.content for m in memory.messages("shared")}
            sources = {d.source for d in memory.recent("shared", "document", limit=100_000)}
        for kind, n, _ in writes:
            if kind == "message":
                assert f"{name} message {n}" in contents
            else:
                assert f"{name}-{n}" in sources


def test_threads_of_one_process_share_a_file_store(memory: SQLiteMemory) -> None:
    def write(worker: int) -> None:
        for n in range(40):
            memory.commit_message("c1", f"worker {worker} turn {n}")

    threads = [threading.Thread(target=write, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    contents = [m.content for m in memory.messages("c1")]
    assert len(contents) == 240
    for worker in range(6):
        mine = [c for c in contents if c.startswith(f"worker {worker} ")]
        assert mine == [f"worker {worker} turn {n}" for n in range(40)]


def test_the_file_uses_wal_and_a_versioned_schema(memory: SQLiteMemory, db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
    assert memory.schema_version() == SCHEMA_VERSION


# A frozen copy of schema version 1, as files written by that version look.
VERSION_1 = """
CREATE TABLE documents (
    id INTEGER PRIMARY KEY, conversation_id TEXT NOT NULL, source TEXT,
    metadata TEXT NOT NULL DEFAULT '{}', created_at REAL NOT NULL);
CREATE TABLE items (
    id INTEGER PRIMARY KEY, conversation_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('message', 'document', 'knowledge')),
    role TEXT, source TEXT,
    document_id INTEGER REFERENCES documents(id) ON DELETE CASCADE,
    chunk_index INTEGER, content TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL);
CREATE INDEX items_by_conversation ON items (conversation_id, kind, id);
INSERT INTO items (conversation_id, kind, role, content, created_at)
    VALUES ('c1', 'message', 'user', 'where is the spare key?', 1.0),
           ('c1', 'knowledge', NULL, 'the spare key is under the blue pot', 2.0);
PRAGMA user_version = 1;
"""


def write_version_1(db_path: Path, extra: str = "") -> None:
    conn = sqlite3.connect(db_path)
    conn.executescript(VERSION_1 + extra)
    conn.close()


def test_a_version_1_file_is_migrated_and_its_data_indexed(db_path: Path) -> None:
    write_version_1(db_path)

    with SQLiteMemory(db_path) as memory:
        assert memory.schema_version() == SCHEMA_VERSION
        assert [m.content for m in memory.messages("c1")] == ["where is the spare key?"]
        assert memory.search("blue pot", "c1")[0].text == "the spare key is under the blue pot"
        assert memory.recall("c1", "spare key").knowledge[0].kind == "knowledge"
        memory.save_run("r1", "c1", "succeeded", {})
        memory.commit_message("c1", "thanks")
        assert [hit.text for hit in memory.search("thanks", "c1")] == ["thanks"]
        newest, oldest = memory.recent("c1", "message")
        assert oldest.entry_tokens is None  # stored before counts were: recall counts it
        assert newest.entry_tokens == cl100k_base_length(render_entry(newest))
        assert [m.content for m in memory.recall("c1", "?!").conversation] == [
            "where is the spare key?", "thanks"]
    assert_consistent(db_path)


def test_a_failed_migration_changes_nothing(db_path: Path) -> None:
    write_version_1(db_path, "CREATE TABLE runs (anything TEXT);")

    with pytest.raises(TFMemoryError, match="from version 1 to 3 failed, nothing was changed"):
        SQLiteMemory(db_path)

    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "items_fts" not in tables  # version 2's step was rolled back with version 3's
    conn.close()


def test_a_file_from_a_newer_version_is_refused(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(TFMemoryError, match="Upgrade dcbrain"):
        SQLiteMemory(db_path)


def test_opening_is_idempotent(db_path: Path) -> None:
    with SQLiteMemory(db_path) as first:
        first.commit_message("c1", "kept")
    with SQLiteMemory(db_path) as second:
        assert [m.content for m in second.messages("c1")] == ["kept"]
