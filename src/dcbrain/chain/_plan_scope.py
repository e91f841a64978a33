"""Where the calls of a plan run read and write intermediate results.

A plan run has one :class:`PlanScope`; each ``parallel(...)`` branch gets one of its own
(:class:`BranchHooks`), and what the branches added is merged back in argument order.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from dcbrain.chain._usage import UsageCollector
from dcbrain.chain.intermediate import (
    changed_entries,
    join_intermediate_results,
    merge_intermediate_results,
    read_intermediate_results,
)
from dcbrain.chain.result import ChainResult
from dcbrain.chain.runnable import to_json
from dcbrain.journal import OccurrenceCounter
from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS
from dcbrain.tfplan.host_budget import HostBudget


class PlanScope:
    """Where the calls of one plan run (or of one ``parallel`` branch) read and write.

    The run's scope writes intermediate results into ``additional_info`` (the caller's
    dict) as its calls finish. A branch keeps only what its calls ``added`` over the cache
    it started from, and builds each call's cache from the two; joining merges every
    branch's additions into the parent at once. What the scopes keep is paid for from the
    run's host ``budget``.
    """

    def __init__(
        self,
        additional_info: dict[str, Any],
        collector: UsageCollector,
        budget: HostBudget,
        parent: PlanScope | None = None,
        counter: OccurrenceCounter | None = None,
    ) -> None:
        self.additional_info = additional_info
        self.collector = collector
        self.budget = budget
        self.parent = parent
        self.counter = counter if counter is not None else OccurrenceCounter()
        self.added: dict[str, Any] = {}
        self.charged = 0  # bytes of ``added``, paid for from ``budget``
        self.results: list[ChainResult] = []
        self.reused = 0  # calls the journal answered (counted in the run's scope)
        self._lock = threading.Lock()

    def chain_info(self) -> dict[str, Any]:
        """What a call in this scope starts from: ``additional_info`` with the cache as
        the scope sees it."""
        with self._lock:
            if not self.added:
                return self.additional_info
            info = dict(self.additional_info)
            merge_intermediate_results(info, self.added)
            return info

    def fork(self, count: int) -> list[PlanScope]:
        """One scope per branch of a ``parallel(...)`` made in this scope."""
        info = self.chain_info()
        with self._lock:
            counters = self.counter.fork(count)
        return [PlanScope(dict(info), self.collector, self.budget, parent=self, counter=counter)
                for counter in counters]

    def record(self, result: ChainResult) -> None:
        with self._lock:
            self.results.append(result)

    def count_reused(self) -> None:
        root = self
        while root.parent is not None:
            root = root.parent
        with root._lock:
            root.reused += 1

    def write(self, added: Mapping[str, Any], cache: Any = None, grown: int = 0) -> None:
        """Keep the intermediate results a call ``added``: ``cache`` is the whole cache the
        call ended with (``None``: none, as for a replayed call), ``grown`` how many bytes
        longer it is than the one the call started from."""
        if self.parent is None:
            if cache is None and added:
                cache = self._merged(added)
            self._adopt(cache)
        elif added:
            if cache is None:
                grown = text_bytes(to_json(dict(added)))
            grown = max(grown, 0)
            self.budget.charge(grown, "intermediate results")
            with self._lock:
                self.added.update(added)
                self.charged += grown

    def absorb(self, branches: Sequence[PlanScope]) -> None:
        """Merge finished branches: their new intermediate results, then their chain
        results, in argument order."""
        base = branches[0].additional_info if branches else self.additional_info
        charged = sum(branch.charged for branch in branches)
        if self.parent is None:
            info = dict(self.additional_info)
            join_intermediate_results(info, base, (branch.added for branch in branches))
            self.budget.release(charged)  # the branches' additions now live in the cache
            self._adopt(info.get(CHAINS_INTERMEDIATE_RESULTS))
        else:
            old = read_intermediate_results(base)
            with self._lock:
                for branch in branches:
                    self.added.update(changed_entries(old, branch.added))
                self.charged += charged
        with self._lock:
            for branch in branches:
                self.results.extend(branch.results)

    def _merged(self, added: Mapping[str, Any]) -> Any:
        info = {CHAINS_INTERMEDIATE_RESULTS: self.additional_info.get(
            CHAINS_INTERMEDIATE_RESULTS)}
        merge_intermediate_results(info, added)
        return info[CHAINS_INTERMEDIATE_RESULTS]

    def _adopt(self, cache: Any) -> None:
        """Make ``cache`` the run's cache, paying for what it adds."""
        old = self.additional_info.get(CHAINS_INTERMEDIATE_RESULTS)
        if cache is old or cache is None:
            return
        grown = text_bytes(cache) - text_bytes(old)
        if grown > 0:
            self.budget.charge(grown, "intermediate results")
        else:
            self.budget.release(-grown)
        self.additional_info[CHAINS_INTERMEDIATE_RESULTS] = cache


def text_bytes(text: Any) -> int:
    return sys.getsizeof(text) if isinstance(text, str) else 0


current_scope: contextvars.ContextVar[PlanScope | None] = contextvars.ContextVar(
    "tf_chain_scope", default=None
)


class BranchHooks:
    """Gives each ``parallel`` branch its own scope; merges them back in argument order."""

    def fork(self, count: int) -> list[Any]:
        parent = current_scope.get()
        if parent is None:
            return [None] * count
        return list(parent.fork(count))

    def enter(self, token: Any) -> None:
        if token is not None:
            current_scope.set(token)

    def join(self, tokens: list[Any]) -> None:
        branches = [branch for branch in tokens
                    if isinstance(branch, PlanScope) and branch.parent is not None]
        parent = branches[0].parent if branches else None
        if parent is not None:
            parent.absorb(branches)
