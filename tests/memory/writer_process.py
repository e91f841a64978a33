"""A writer process for the durability tests.

Usage: python writer_process.py DB_PATH NAME COUNT   (COUNT 0: until killed)

Alternates messages and multi-chunk documents and prints one line per write *after* the
write returned, so every printed line is an acknowledged commit.
"""

from __future__ import annotations

import itertools
import sys

from dcbrain.memory import SQLiteMemory


def document_text(name: str, n: int) -> str:
    return "\n\n".join(f"{name} document {n} paragraph {p}. " * 6 for p in range(6))


def main() -> None:
    path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    memory = SQLiteMemory(path)
    numbers = itertools.count() if count == 0 else range(count)
    for n in numbers:
        if n % 5 == 4:
            document_id = memory.add_document(
                "shared", document_text(name, n), source=f"{name}-{n}", chunk_tokens=40
            )
            print(f"document {n} {document_id}", flush=True)
        else:
            item_id = memory.commit_message("shared", f"{name} message {n}")
            print(f"message {n} {item_id}", flush=True)
    memory.close()


if __name__ == "__main__":
    main()
