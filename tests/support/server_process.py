"""A server process whose only run never ends: ``python server_process.py DB PORT_FILE``.

Tests kill it mid-run to check that the next server marks the run ``interrupted``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import uvicorn

from dcbrain import FunctionLLM, SQLiteMemory
from dcbrain.brain import DCBrain
from dcbrain.config.runtime import Runtime
from dcbrain.server import create_app


async def never(messages: list[dict[str, Any]]) -> str:
    await asyncio.sleep(3600)
    return "unreachable"


def main(db: str, port_file: str) -> None:
    memory = SQLiteMemory(db)
    app = create_app(Runtime(DCBrain(default_llm=FunctionLLM(never), memory=memory), memory))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))

    async def serve() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        Path(port_file + ".tmp").write_text(str(port))
        Path(port_file + ".tmp").rename(port_file)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
