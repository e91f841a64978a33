"""How long ``dcbrain serve`` takes to answer its first ``GET /v1/health``, against
``python -c "import dcbrain"`` measured in the same run.

Each measurement is a fresh process in a fresh directory holding a one-tool config and an
OpenAI-compatible model that is never called (``http://127.0.0.1:1/v1``): the time from
starting ``python -m dcbrain.cli serve`` (as the ``dcbrain`` script does) to the first
``200`` from ``/v1/health``, with durable runs in SQLite when DBOS is installed (the
default). The reference and the server alternate, ``--repeat`` times each; medians and
their ratio are printed. Run:

    python benchmarks/startup.py [--repeat N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

TOOLS = '''def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b
'''

CONFIG = '''tools = ["tools.py"]
[llm.main]
base_url = "http://127.0.0.1:1/v1"
model = "fake-model"
api_key_env = "FAKE_API_KEY"
max_retries = 0
[memory]
path = "brain.db"
'''

#: Seconds a server gets to answer before the measurement gives up on it.
PATIENCE_S = 120.0
TOKEN = "benchmark-token"


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), FAKE_API_KEY="x",
                DCBRAIN_API_TOKEN=TOKEN)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _healthy(port: int) -> bool:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/health",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def serve_seconds() -> float:
    """Seconds from starting ``dcbrain serve`` to its first healthy answer."""
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        (cwd / "tools.py").write_text(TOOLS, encoding="utf-8")
        (cwd / "dcbrain.toml").write_text(CONFIG, encoding="utf-8")
        port = _free_port()
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "dcbrain.cli", "serve", "--config", "dcbrain.toml",
             "--port", str(port)],
            cwd=cwd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            while not _healthy(port):
                if process.poll() is not None:
                    _, err = process.communicate()
                    raise SystemExit(f"dcbrain serve exited with {process.returncode}:\n"
                                     f"{err.decode(errors='replace')}")
                if time.perf_counter() - started > PATIENCE_S:
                    raise SystemExit(f"dcbrain serve did not answer within {PATIENCE_S:g} s")
                time.sleep(0.02)
            return time.perf_counter() - started
        finally:
            process.terminate()
            try:
                process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()


def import_seconds() -> float:
    """Seconds of ``python -c "import dcbrain"`` in a fresh process."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import dcbrain"], env=_env(), check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    reference: list[float] = []
    serve: list[float] = []
    for _ in range(max(1, args.repeat)):
        reference.append(import_seconds())
        serve.append(serve_seconds())
    ref, first = statistics.median(reference), statistics.median(serve)
    if args.json:
        print(json.dumps({"import_dcbrain_s": round(ref, 4), "serve_health_s": round(first, 4),
                          "ratio": round(first / ref, 2),
                          "serve_runs_s": [round(s, 4) for s in serve]}))
    else:
        print(f"python -c 'import dcbrain'  {ref * 1000:8.1f} ms")
        print(f"serve → first /v1/health   {first * 1000:8.1f} ms  {first / ref:5.1f}×  "
              f"(min {min(serve) * 1000:.0f}, max {max(serve) * 1000:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
