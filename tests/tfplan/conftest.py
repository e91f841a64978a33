"""Shared fixtures for the tf_plan tests.

``host_guard`` runs a plan the way an attacker would and then checks that the host is
untouched: no sentinel file, same environment, nothing on the real stdout, the registered
host callables unchanged, no large memory growth.
"""

from __future__ import annotations

import builtins
import copy
import faulthandler
import os
import resource
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# A plan stuck in a single C call cannot be interrupted from Python, so a watchdog dumps
# the stacks and ends the whole run (exit status 1) instead of hanging CI forever.
WATCHDOG_S = 120
# Headroom of address space granted to each guarded test: a blown size limit then shows
# up as an error in the test instead of the OOM killer taking the machine.
ADDRESS_SPACE_HEADROOM = 6 * 1024**3
MAX_MEMORY_GROWTH_KB = 200 * 1024

# Host data the plan may read through `catalog()`; it must never change.
CATALOG: dict[str, Any] = {"items": ["alpha", "beta"], "owner": "host"}
HOST_CALLS: list[tuple[str, dict[str, Any]]] = []


def search(query: str, k: int = 3) -> dict[str, Any]:
    """Pretend search: returns ``k`` hits for ``query``."""
    HOST_CALLS.append(("search", {"query": query, "k": k}))
    return {"query": query, "hits": [f"{query}-{i}" for i in range(k)]}


def catalog() -> dict[str, Any]:
    """Return the host's catalog object itself (as a cached lookup would)."""
    HOST_CALLS.append(("catalog", {}))
    return CATALOG


def lookup(key: str) -> str:
    """A typed tool: upper-cases its key."""
    HOST_CALLS.append(("lookup", {"key": key}))
    return key.upper()


#: Set by ``echo(x=2)`` as it returns: ``echo(x=1)`` waits for it, so the first call ends last.
_SECOND_RETURNED = threading.Event()


def echo(x: int) -> dict[str, int]:
    """Host callable for ``parallel``: the first call finishes last."""
    HOST_CALLS.append(("f", {"x": x}))
    if x == 1:
        assert _SECOND_RETURNED.wait(30), "echo(x=2) never ran beside echo(x=1)"
        _SECOND_RETURNED.clear()
    else:
        _SECOND_RETURNED.set()
    return {"x": x}


HOST_FUNCTIONS = (search, catalog, lookup, echo)


def _function_state(func: Any) -> dict[str, Any]:
    return {
        "code": func.__code__,
        "defaults": func.__defaults__,
        "kwdefaults": copy.copy(func.__kwdefaults__),
        "dict": dict(func.__dict__),
        "name": func.__name__,
        "qualname": func.__qualname__,
        "module": func.__module__,
        "closure": func.__closure__,
        "globals": sorted(func.__globals__),
    }


def _environment() -> dict[str, str]:
    # pytest rewrites PYTEST_CURRENT_TEST between setup and call
    return {key: value for key, value in os.environ.items() if key != "PYTEST_CURRENT_TEST"}


def _address_space_bytes() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


@dataclass
class HostGuard:
    """Snapshot of the host taken before a plan runs, and the checks made after it."""

    sentinel: Path
    capfd: pytest.CaptureFixture[str]
    environ: dict[str, str] = field(default_factory=lambda: _environment())
    builtins_ids: dict[str, int] = field(
        default_factory=lambda: {name: id(value) for name, value in vars(builtins).items()}
    )
    functions: list[dict[str, Any]] = field(
        default_factory=lambda: [_function_state(func) for func in HOST_FUNCTIONS]
    )
    catalog: dict[str, Any] = field(default_factory=lambda: copy.deepcopy(CATALOG))
    maxrss_kb: int = field(
        default_factory=lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    )
    cwd: str = field(default_factory=os.getcwd)
    #: What a plan may call: ``Interpreter(callables=..., tools=...)`` of the attacks.
    callables: dict[str, Any] = field(
        default_factory=lambda: {"search": search, "catalog": catalog, "f": echo}
    )
    tools: list[Any] = field(default_factory=lambda: [lookup])
    #: Every host call that got through, as ``(name, kwargs)``.
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=lambda: HOST_CALLS)
    #: The host's own catalog object, which plans must not be able to change.
    catalog_data: dict[str, Any] = field(default_factory=lambda: CATALOG)

    def assert_host_untouched(self) -> None:
        out, _err = self.capfd.readouterr()
        assert out == "", f"the plan wrote to the host's stdout: {out[:200]!r}"
        assert not self.sentinel.exists(), "the plan created a file on the host"
        assert _environment() == self.environ, "the plan changed os.environ"
        assert os.getcwd() == self.cwd, "the plan changed the working directory"
        now_builtins = {name: id(value) for name, value in vars(builtins).items()}
        assert now_builtins == self.builtins_ids, "the plan changed the builtins module"
        now_functions = [_function_state(func) for func in HOST_FUNCTIONS]
        assert now_functions == self.functions, "the plan mutated a host callable"
        assert self.catalog == CATALOG, "the plan mutated host data returned to it"
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - self.maxrss_kb
        assert grown < MAX_MEMORY_GROWTH_KB, f"peak memory grew by {grown // 1024} MB"


@pytest.fixture
def host_guard(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Iterator[HostGuard]:
    """Guard the host while a hostile plan runs; call ``assert_host_untouched()`` after."""
    capfd.readouterr()
    HOST_CALLS.clear()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _address_space_bytes() + ADDRESS_SPACE_HEADROOM
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True, file=sys.__stderr__)
    guard = HostGuard(sentinel=tmp_path / "sentinel", capfd=capfd)
    try:
        yield guard
    finally:
        faulthandler.cancel_dump_traceback_later()
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        # a plan that did mutate host data must not leak into the next test
        CATALOG.clear()
        CATALOG.update(copy.deepcopy(guard.catalog))
