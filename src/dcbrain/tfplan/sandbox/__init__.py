"""Sandbox processes: plans run in pre-started worker processes under OS limits.

:func:`run_in_sandbox` is what ``Interpreter(isolation="process")`` uses; the pool of
workers is shared by the whole process (:func:`shared_pool`).
"""

from dcbrain.tfplan.sandbox.pool import WorkerPool, shared_pool

__all__ = ["WorkerPool", "shared_pool"]
