"""Sandbox processes: plans run in pre-started worker processes under OS limits.

:func:`run_in_sandbox` is what ``Interpreter(isolation="process")`` uses; the pool of
workers is shared by the whole process (:func:`shared_pool`).

Each name is imported from its module on first use: a sandbox process imports this
package for its own module and never needs the host's pool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcbrain._lazy import lazy_exports

if TYPE_CHECKING:
    from dcbrain.tfplan.sandbox.pool import WorkerPool, shared_pool

__all__ = ["WorkerPool", "shared_pool"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "WorkerPool": "dcbrain.tfplan.sandbox.pool",
    "shared_pool": "dcbrain.tfplan.sandbox.pool",
})
