"""Human approval of consequential calls: what a run asks, what a person decides, and
where a run waits for the decisions.

A call of a tool or chain declared ``requires_approval`` stops its plan before it runs
(:class:`~dcbrain.exceptions.ApprovalRequired`) with an :class:`ApprovalRequest` per such
call the plan reached. The run then waits at an :class:`ApprovalDesk`; each request gets
an :class:`ApprovalDecision` — by a person, or denied when nobody decided within its
``timeout_s`` — and the plan runs again from the run's journal (finished calls are
answered by it, never made twice) up to the decided calls. A request is known by its
``call_id``, derived from the call's journal key (plan attempt, branch, name, arguments,
occurrence), so the same call of a run always has the same id, and by ``args_hash``,
the hash of its canonical arguments: a decision is bound to exactly those arguments.

:class:`ApprovalBoard` is the desk of runs that wait in this process (a coroutine
awaiting an event: no thread, no sandbox worker). A durable run's desk stores the
requests and ends its execution instead (:class:`~dcbrain.exceptions.RunSuspended`);
a decision queues it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from dcbrain.events.values import clip_arguments
from dcbrain.exceptions import TFApprovalError
from dcbrain.journal import JournalKey, canonical_args

#: How long a call waits for a decision unless its tool or brain says otherwise: 24 h.
DEFAULT_APPROVAL_TIMEOUT_S = 24 * 3600.0
#: The reason of a decision nobody took in time.
TIMED_OUT = "approval timed out"
#: ``decided_by`` of a decision taken because nobody decided in time.
BY_TIMEOUT = "timeout"
#: At most this often (seconds) a waiting run looks at its clock again: a clock that is
#: not the wall clock (a test's) is read, not slept on.
_CLOCK_CHECK_S = 1.0
#: Characters of a decision's reason (it is shown to the planner).
MAX_REASON_CHARS = 2000
#: Decisions one run may wait for at a time: a plan that reaches more calls needing
#: approval fails at the first call past it (a clear error, nothing is asked).
MAX_PENDING_PER_RUN = 64
#: Undecided requests an :class:`ApprovalBoard` holds across all its runs by default.
DEFAULT_MAX_PENDING = 4096
#: Decided calls of runs that stopped waiting, remembered to refuse a second decision.
_REMEMBERED_DECISIONS = 10_000
#: Arguments shown to the person deciding: whole up to these sizes (characters).
_SHOWN_ARGUMENT = 20_000
_SHOWN_ARGUMENTS = 100_000

Clock = Callable[[], float]


def args_hash(arguments: Mapping[str, Any]) -> str:
    """The hash a decision is bound to: SHA-256 of the call's canonical arguments."""
    return hashlib.sha256(canonical_args(dict(arguments)).encode()).hexdigest()


def approval_call_id(key: JournalKey) -> str:
    """The id of the call ``key`` in approval requests and decisions: stable across the
    executions of a run, distinct for distinct calls."""
    return "ap-" + hashlib.sha256(key.text.encode()).hexdigest()[:20]


def approval_call_key(key: JournalKey) -> str:
    """The call ``key`` across the plans of a run: its branch, name, arguments and
    occurrence, not its plan attempt. A decision answers a replan's call with this key
    (the same call made again), never a second call with the same arguments."""
    same = f"{key.path}|{key.name}|{key.args}|{key.occurrence}"
    return hashlib.sha256(same.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class ApprovalRequest:
    """A call waiting for a person's decision, and what the person needs to decide it.

    ``why`` says why it needs approval; ``plan`` is the plan that wants to make the call;
    ``requested_at`` and ``expires_at`` are wall-clock times (seconds since the epoch).
    """

    call_id: str
    tool: str
    kind: str
    arguments: dict[str, Any]
    args_hash: str
    line: int = 0
    col: int = 0
    why: str = ""
    plan: str = ""
    timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    requested_at: float = 0.0
    #: The run that wants to make the call (what :meth:`DCBrain.approve` takes).
    run_id: str = ""
    #: :func:`approval_call_key` of the call ("": answered by its ``call_id`` only).
    call_key: str = ""

    @property
    def expires_at(self) -> float:
        return self.requested_at + self.timeout_s

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "expires_at": self.expires_at}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalRequest:
        names = cls.__dataclass_fields__
        return cls(**{key: value for key, value in data.items() if key in names})


@dataclass(frozen=True)
class ApprovalDecision:
    """A person's (or the timeout's) answer to one request, bound to its ``args_hash``."""

    call_id: str
    approved: bool
    args_hash: str
    tool: str = ""
    reason: str = ""
    decided_by: str = "user"
    decided_at: float = 0.0
    #: Seconds the run waited for this decision (from its request to the decision).
    waited_s: float = 0.0
    #: The request's :func:`approval_call_key`.
    call_key: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalDecision:
        names = cls.__dataclass_fields__
        return cls(**{key: value for key, value in data.items() if key in names})

    def denial(self) -> str:
        """What the planner is told of a denial."""
        if self.decided_by == BY_TIMEOUT:
            return TIMED_OUT
        return f"denied by the user: {self.reason or 'no reason given'}"


def shown_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments as a request shows them: whole unless very long."""
    return clip_arguments(arguments, _SHOWN_ARGUMENT, _SHOWN_ARGUMENTS)


def decision_for(request: ApprovalRequest, *, approved: bool, reason: str = "",
                 by: str = "user", args_hash: str | None = None,
                 now: float | None = None) -> ApprovalDecision:
    """The decision on ``request``; refused (409) when ``args_hash`` is given and is not
    the request's: the arguments the person saw are not the call's."""
    if args_hash is not None and args_hash != request.args_hash:
        raise TFApprovalError(
            f"call {request.call_id} ({request.tool}) has other arguments than the ones "
            "decided on (args_hash differs): nothing was decided", status=409)
    decided_at = time.time() if now is None else now
    return ApprovalDecision(
        call_id=request.call_id, approved=approved, args_hash=request.args_hash,
        tool=request.tool, reason=reason, decided_by=by, decided_at=decided_at,
        waited_s=max(0.0, decided_at - request.requested_at) if request.requested_at else 0.0,
        call_key=request.call_key)


def waited_s(decisions: Iterable[ApprovalDecision]) -> float:
    """Seconds a run spent waiting for ``decisions``: requests asked together were waited
    for at once (the longest of them counts), rounds one after the other add up."""
    rounds: dict[float, float] = {}
    for decision in decisions:
        asked = decision.decided_at - decision.waited_s
        key = round(asked, 3)
        rounds[key] = max(rounds.get(key, 0.0), decision.waited_s)
    return sum(rounds.values())


#: What an ``on_approval`` handler answers: ``True`` (approve), ``False`` (deny),
#: ``(approved, reason)``, or ``None`` to leave the request pending for someone else.
ApprovalAnswer = bool | tuple[bool, str] | None
#: ``DCBrain(on_approval=...)``: sees every request as it opens, sync or async.
ApprovalHandler = Callable[[ApprovalRequest], "ApprovalAnswer | Awaitable[ApprovalAnswer]"]


async def ask_handler(handler: ApprovalHandler,
                      request: ApprovalRequest) -> tuple[bool, str] | None:
    """``handler``'s answer on ``request`` as ``(approved, reason)``, ``None`` when it left
    it pending. A sync handler runs in a thread (it may block); an answer of another type
    raises :class:`TypeError` naming it."""
    if inspect.iscoroutinefunction(handler):
        answer = await handler(request)
    else:
        answer = await asyncio.to_thread(handler, request)
        if inspect.isawaitable(answer):
            answer = await answer
    if answer is None:
        return None
    if isinstance(answer, bool):
        return answer, ""
    if (isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], bool)
            and isinstance(answer[1], str)):
        return answer[0], answer[1]
    raise TypeError(f"on_approval returned {type(answer).__name__} {answer!r:.80} for call "
                    f"{request.call_id} ({request.tool}): expected True, False, "
                    "(approved, reason) or None")


class ApprovalDesk(Protocol):
    """Where a run's requests go and its decisions come from."""

    async def decisions(self, run_id: str) -> Sequence[ApprovalDecision]:
        """Decisions on the run's requests taken before this execution of it began."""
        ...

    async def open(self, run_id: str, requests: Sequence[ApprovalRequest]) -> None:
        """Make the requests known (to list, show and decide), before they are announced."""
        ...

    async def wait(self, run_id: str, requests: Sequence[ApprovalRequest], *,
                   clock: Clock) -> Sequence[ApprovalDecision]:
        """A decision for each request, in order, once all are decided (a request past its
        ``timeout_s`` on ``clock`` is denied), each with the ``waited_s`` of this wait on
        ``clock``; or raise
        :class:`~dcbrain.exceptions.RunSuspended` to end this execution meanwhile."""
        ...


@dataclass(eq=False)
class _Waiting:
    """The requests of one waiting run and the decisions taken on them so far."""

    requests: dict[str, ApprovalRequest]
    loop: asyncio.AbstractEventLoop | None = None
    decided: dict[str, ApprovalDecision] = field(default_factory=dict)
    changed: asyncio.Event | None = None


class ApprovalBoard:
    """The desk of runs waiting in this process: decide with :meth:`decide` (any thread).

    A waiting run holds a coroutine only: its plan's thread and sandbox worker were given
    back when the plan stopped. At most ``max_pending`` requests wait here at once, across
    all runs: a run whose requests would pass it fails with a clear error (503) and asks
    nothing; the runs already waiting are unharmed.
    """

    def __init__(self, *, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        if max_pending < 1:
            raise ValueError("max_pending must be at least 1")
        self.max_pending = max_pending
        self._lock = threading.Lock()
        self._runs: dict[str, _Waiting] = {}
        #: Calls decided for runs that went on, so a late second decision is told so.
        self._decided: OrderedDict[tuple[str, str], None] = OrderedDict()
        #: Called with ``(run_id, request)`` when a request opens (a terminal prompt, an
        #: MCP elicitation): it may decide it right away.
        self.on_request: list[Callable[[str, ApprovalRequest], None]] = []

    async def decisions(self, run_id: str) -> Sequence[ApprovalDecision]:
        """Decisions taken while the run was not executing (it returned ``waiting``)."""
        with self._lock:
            waiting = self._runs.get(run_id)
            if waiting is None or waiting.loop is not None:
                return ()
            return list(waiting.decided.values())

    def close(self, run_id: str) -> None:
        """The run is done with its requests: a later decision on them is a conflict."""
        with self._lock:
            ended = self._runs.pop(run_id, None)
            if ended is not None:  # a second decision on these is a conflict, not unknown
                for call_id in ended.decided:
                    self._decided[(run_id, call_id)] = None
                while len(self._decided) > _REMEMBERED_DECISIONS:
                    self._decided.popitem(last=False)

    async def open(self, run_id: str, requests: Sequence[ApprovalRequest]) -> None:
        with self._lock:
            undecided = sum(len(w.requests) - len(w.decided) for w in self._runs.values())
            known = self._runs[run_id].requests if run_id in self._runs else {}
            new = sum(1 for request in requests if request.call_id not in known)
            if undecided + new > self.max_pending:
                raise TFApprovalError(
                    f"run {run_id} asks for {new} decision(s), and {undecided} requests "
                    f"already wait here (at most {self.max_pending} at a time): nothing "
                    "was asked", status=503)
            waiting = self._runs.setdefault(run_id, _Waiting({}))
            waiting.requests.update((request.call_id, request) for request in requests)
        for request in requests:
            for listener in list(self.on_request):
                listener(run_id, request)

    async def wait(self, run_id: str, requests: Sequence[ApprovalRequest], *,
                   clock: Clock) -> Sequence[ApprovalDecision]:
        started = clock()
        deadlines = {request.call_id: started + request.timeout_s for request in requests}
        with self._lock:
            waiting = self._runs.setdefault(run_id, _Waiting({}))
            waiting.requests.update((request.call_id, request) for request in requests)
            waiting.loop = asyncio.get_running_loop()
            waiting.changed = asyncio.Event()
        try:
            while True:
                with self._lock:
                    open_ids = [cid for cid in deadlines if cid not in waiting.decided]
                    waiting.changed.clear()
                if not open_ids:
                    break
                now = clock()
                for call_id in open_ids:
                    if now >= deadlines[call_id]:
                        self._take(run_id, waiting, decision_for(
                            waiting.requests[call_id], approved=False, reason=TIMED_OUT,
                            by=BY_TIMEOUT))
                soonest = min(deadlines[cid] for cid in open_ids) - now
                if soonest > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(waiting.changed.wait(),
                                               min(soonest, _CLOCK_CHECK_S))
            waited = max(0.0, clock() - started)  # on the run's clock, which its budget uses
            with self._lock:
                return [replace(waiting.decided[request.call_id], waited_s=waited)
                        for request in requests]
        finally:
            self.close(run_id)

    def pending(self, run_id: str | None = None) -> list[tuple[str, ApprovalRequest]]:
        """``(run_id, request)`` of every undecided request (of ``run_id`` only, if given)."""
        with self._lock:
            return [(rid, request) for rid, waiting in self._runs.items()
                    if run_id is None or rid == run_id
                    for request in waiting.requests.values()
                    if request.call_id not in waiting.decided]

    def decide(self, run_id: str, call_id: str, *, approved: bool, reason: str = "",
               by: str = "user", args_hash: str | None = None) -> ApprovalDecision:
        """Decide the request ``call_id`` of the waiting run ``run_id``.

        Raises :class:`~dcbrain.exceptions.TFApprovalError`: 404 for a run that waits for
        nothing here or a call it did not ask about, 409 for a call already decided or an
        ``args_hash`` that is not the call's.
        """
        with self._lock:
            waiting = self._runs.get(run_id)
            request = waiting.requests.get(call_id) if waiting is not None else None
            if request is None and (run_id, call_id) in self._decided:
                raise TFApprovalError(f"call {call_id} of run {run_id} is already decided",
                                      status=409)
            if waiting is None or request is None:
                raise TFApprovalError(f"run {run_id} waits for no decision on call {call_id}",
                                      status=404)
            if call_id in waiting.decided:
                raise TFApprovalError(f"call {call_id} of run {run_id} is already decided",
                                      status=409)
        decision = decision_for(request, approved=approved, reason=reason, by=by,
                                args_hash=args_hash)
        if not self._take(run_id, waiting, decision):
            raise TFApprovalError(f"call {call_id} of run {run_id} is already decided",
                                  status=409)
        return decision

    def _take(self, run_id: str, waiting: _Waiting, decision: ApprovalDecision) -> bool:
        with self._lock:
            if decision.call_id in waiting.decided:
                return False
            waiting.decided[decision.call_id] = decision
            loop, changed = waiting.loop, waiting.changed
        if loop is not None and changed is not None and not loop.is_closed():
            loop.call_soon_threadsafe(changed.set)
        return True


#: Asks a person about one request: ``(approved, reason)``.
Asker = Callable[[ApprovalRequest], Awaitable[tuple[bool, str]]]


class AskingDesk:
    """A desk that asks someone directly, one request after the other: a person at a
    terminal (``dcbrain ask``), an MCP client's user (``dcbrain mcp``). A request not
    answered within its ``timeout_s`` is denied (``approval timed out``)."""

    def __init__(self, ask: Asker, *, by: str) -> None:
        self.ask = ask
        self.by = by

    async def decisions(self, run_id: str) -> Sequence[ApprovalDecision]:
        return ()

    async def open(self, run_id: str, requests: Sequence[ApprovalRequest]) -> None:
        return None

    async def wait(self, run_id: str, requests: Sequence[ApprovalRequest], *,
                   clock: Clock) -> Sequence[ApprovalDecision]:
        started = clock()
        decisions: list[ApprovalDecision] = []
        for request in requests:
            try:
                approved, reason = await asyncio.wait_for(self.ask(request), request.timeout_s)
                decisions.append(decision_for(request, approved=approved, reason=reason,
                                              by=self.by))
            except TimeoutError:
                decisions.append(decision_for(request, approved=False, reason=TIMED_OUT,
                                              by=BY_TIMEOUT))
        waited = max(0.0, clock() - started)
        return [replace(decision, waited_s=waited) for decision in decisions]


def with_plan(requests: Sequence[ApprovalRequest], plan: str,
              now: float | None = None) -> list[ApprovalRequest]:
    """``requests`` as the run asks them: with the plan that wants the calls and the time."""
    asked = time.time() if now is None else now
    return [replace(request, plan=plan, requested_at=asked) for request in requests]


__all__ = [
    "BY_TIMEOUT",
    "DEFAULT_APPROVAL_TIMEOUT_S",
    "DEFAULT_MAX_PENDING",
    "MAX_PENDING_PER_RUN",
    "MAX_REASON_CHARS",
    "TIMED_OUT",
    "ApprovalAnswer",
    "ApprovalBoard",
    "ApprovalDecision",
    "ApprovalDesk",
    "ApprovalHandler",
    "ApprovalRequest",
    "Asker",
    "AskingDesk",
    "approval_call_id",
    "approval_call_key",
    "args_hash",
    "ask_handler",
    "decision_for",
    "shown_arguments",
    "waited_s",
    "with_plan",
]
