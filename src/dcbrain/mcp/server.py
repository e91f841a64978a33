"""dcbrain served as an MCP server: one ``ask`` tool that runs a brain (``dcbrain mcp``).

Any MCP client can then use a planning brain as one tool. While a question runs, the
brain's events (state changes, plans, calls, validation) are sent as MCP progress
notifications to clients that asked for progress; the result carries the answer and
how the run ended. One brain answers one question at a time: concurrent ``ask`` calls
wait their turn. A call that needs a person's approval is asked of the client's user
through MCP elicitation (``approved``, ``reason``). On a session without elicitation the
call is not denied: ``ask`` returns ``status: "waiting"`` with the pending requests, the
``decide`` tool decides them, and ``ask`` with the run's ``run_id`` goes on.

With ``runs`` (``dcbrain mcp --shared``), each question is a durable run queued in the store
that ``dcbrain serve`` (or its workers) executes: its record, events and pending approvals
are there, where the HTTP API, the web page and ``decide`` all see and decide them.
"""

# no ``from __future__ import annotations``: the SDK reads the ``ask`` tool's annotations,
# and ``Context`` is imported inside create_server (the SDK is imported only when serving)
import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from dcbrain.approvals import MAX_REASON_CHARS, ApprovalRequest, Asker, AskingDesk
from dcbrain.brain.deps import RunDeps
from dcbrain.events import (
    BrainRunStarted,
    ErrorEvent,
    Event,
    Final,
    PlanCallFinished,
    PlanCallStarted,
    PlanCreated,
    PlanFinished,
    PlanRevised,
    RunResumed,
    StateChanged,
    Validation,
)
from dcbrain.exceptions import TFApprovalError, TFBrainError
from dcbrain.runs import RunRequest, execute_run
from dcbrain.values.jsonsafe import dumps, plain

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from dcbrain.brain import DCBrain
    from dcbrain.server.durable_runs import DurableRuns

logger = logging.getLogger("dcbrain.mcp")
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

ASK_DESCRIPTION = (
    "Answer a question with a planning brain: it writes a small checked program that "
    "calls its tools and chains, runs it, validates the answer and replans when needed. "
    "Give the same conversation_id to continue a conversation."
)


class AskAnswer(BaseModel):
    """What ``ask`` returns: the answer and how the run ended."""

    answer: Any = Field(description="the final answer (text or JSON data); null if none")
    status: str = Field(description="succeeded, failed, aborted, or waiting (calls wait for "
                        "decisions: see pending_approvals)")
    reason: str | None = Field(description="why the run ended (e.g. validated, max_iterations)")
    error: str | None = Field(default=None, description="the last error, when it failed")
    conversation_id: str
    run_id: str | None = None
    plans: int = Field(default=0, description="how many plans were written")
    pending_approvals: list[dict[str, Any]] = Field(
        default_factory=list,
        description="status waiting: the calls waiting for a decision (call_id, tool, "
                    "arguments, args_hash, line, why); decide each with the decide tool, "
                    "then call ask again with this run_id")


class Decided(BaseModel):
    """What ``decide`` returns."""

    run_id: str
    call_id: str
    approved: bool
    pending: int = Field(description="calls of the run still waiting for a decision")


def create_server(brain: "DCBrain | None", *, name: str = "dcbrain",
                  log_level: LogLevel = "WARNING",
                  runs: "DurableRuns | None" = None) -> "MCPServer":
    """An MCP server (the SDK's ``MCPServer``) whose ``ask`` tool runs ``brain``; the SDK
    logs from ``log_level`` up on stderr (its default, INFO, is a dozen lines a request).

    With ``runs``, ``ask`` queues a durable run there instead (``brain`` is not used) and
    follows it until it ends or waits for decisions; ``decide`` decides in that store."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(name, instructions=ASK_DESCRIPTION, log_level=log_level)
    if runs is not None:
        _add_shared_tools(server, runs)
        return server
    if brain is None:
        raise ValueError("create_server needs a brain, or runs to queue questions in")
    turn = asyncio.Lock()

    @server.tool(name="ask", description=ASK_DESCRIPTION)
    async def ask(question: str, ctx: Context, conversation_id: str = "default",
                  run_id: str | None = None) -> AskAnswer:
        if not question.strip():
            raise ToolError("the question is empty")
        progress = _ProgressForwarder(ctx.report_progress)
        async with turn:
            progress.start()
            try:
                if _can_elicit(ctx):
                    request = RunRequest(uuid.uuid4().hex, conversation_id, question)
                    deps = RunDeps(approvals=AskingDesk(_elicitation(ctx), by="mcp_client"))
                    outcome = await execute_run(brain, request, deps, progress.on_event)
                    result = outcome.result
                    if result is None:  # the client should see what went wrong
                        raise ToolError(outcome.error or str(outcome.reason))
                else:  # nobody to ask here: the calls wait, the run returns
                    result = await _run_returning_waiting(brain, question, conversation_id,
                                                          run_id, progress.on_event)
            except TFBrainError as exc:
                raise ToolError(str(exc)) from None
            finally:
                await progress.finish()
        return AskAnswer(
            answer=plain(result.final_result),
            status=str(result.status),
            reason=result.reason,
            error=result.error or result.last_error,
            conversation_id=result.conversation_id,
            run_id=result.run_id,
            plans=len(result.plans),
            pending_approvals=[_pending(request) for request in result.pending_approvals],
        )

    @server.tool(name="decide", description=DECIDE_DESCRIPTION)
    async def decide(run_id: str, call_id: str, approved: bool, reason: str = "",
                     args_hash: str | None = None) -> Decided:
        try:
            brain.approvals.decide(run_id, call_id, approved=approved, reason=reason,
                                   by="mcp_client", args_hash=args_hash)
        except TFApprovalError as exc:
            raise ToolError(str(exc)) from None
        return Decided(run_id=run_id, call_id=call_id, approved=approved,
                       pending=len(brain.pending_approvals(run_id)))

    return server


DECIDE_DESCRIPTION = (
    "Approve or deny a call a run of ask waits for (ask answered status waiting and listed "
    "it in pending_approvals); once every call is decided, call ask again with the run_id."
)


#: How often (seconds) ``ask`` on a shared store reads whether its run ended or waits.
SHARED_POLL_S = 0.2


def _add_shared_tools(server: "MCPServer", runs: "DurableRuns") -> None:
    """``ask`` and ``decide`` over durable runs in a store other processes share."""
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.exceptions import ToolError

    from dcbrain.exceptions import DatabaseUnavailable, RunConflict, TooManyRuns

    started = asyncio.Lock()
    ready: list[bool] = []

    async def start() -> None:
        async with started:
            if not ready:
                await runs.start()
                ready.append(True)

    @server.tool(name="ask", description=ASK_DESCRIPTION)
    async def ask(question: str, ctx: Context, conversation_id: str = "default",
                  run_id: str | None = None) -> AskAnswer:
        await start()
        progress = _ProgressForwarder(ctx.report_progress)
        progress.start()
        try:
            if run_id is None:
                if not question.strip():
                    raise ToolError("the question is empty")
                run_id = (await runs.submit(conversation_id, question)).run_id
            elif not await runs.exists(run_id):
                raise ToolError(f"no run {run_id!r} in the shared store")
            record = await _follow_until_settled(runs, run_id, progress.on_stored_event)
        except (DatabaseUnavailable, RunConflict, TooManyRuns) as exc:
            raise ToolError(str(exc)) from None
        finally:
            await progress.finish()
        return _answer_of(record)

    @server.tool(name="decide", description=DECIDE_DESCRIPTION)
    async def decide(run_id: str, call_id: str, approved: bool, reason: str = "",
                     args_hash: str | None = None) -> Decided:
        await start()
        try:
            await runs.decide(run_id, call_id, approved=approved, reason=reason[
                :MAX_REASON_CHARS], args_hash=args_hash, by="mcp_client")
        except (TFApprovalError, DatabaseUnavailable) as exc:
            raise ToolError(str(exc)) from None
        record = await runs.describe(run_id) or {}
        pending = [item for item in record.get("approvals") or []
                   if item.get("decision") is None]
        return Decided(run_id=run_id, call_id=call_id, approved=approved,
                       pending=len(pending))


async def _follow_until_settled(runs: "DurableRuns", run_id: str,
                                on_event: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The run's record once it ended, or waits for a decision nobody took yet; its new
    events go to ``on_event`` meanwhile."""
    from dcbrain.runs import TERMINAL_STATUSES, WAITING

    stored = await asyncio.to_thread(runs.store.events, run_id)
    after = int(stored[-1]["seq"]) if stored else -1

    async def forward() -> None:
        async for event in runs.events(run_id, after):
            on_event(event)

    follower = asyncio.create_task(forward())
    try:
        while True:
            record = await runs.describe(run_id)
            if record is None:
                raise TFBrainError(f"run {run_id} is gone from the shared store")
            status = record.get("status")
            waiting = status == WAITING and any(
                item.get("decision") is None for item in record.get("approvals") or [])
            if status in TERMINAL_STATUSES or waiting:
                if status in TERMINAL_STATUSES:  # its final event is stored with it
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(asyncio.shield(follower), SHARED_POLL_S * 10)
                return record
            await asyncio.sleep(SHARED_POLL_S)
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower


def _answer_of(record: dict[str, Any]) -> AskAnswer:
    result = record.get("result") or {}
    return AskAnswer(
        answer=result.get("final_result"),
        status=str(record.get("status")),
        reason=record.get("reason") or ("approval" if record.get("status") == "waiting"
                                        else None),
        error=record.get("error") or result.get("error"),
        conversation_id=str(record.get("conversation_id") or ""),
        run_id=str(record.get("run_id")),
        plans=len(result.get("plans") or []),
        pending_approvals=[
            {key: item.get(key) for key in ("call_id", "tool", "arguments", "args_hash",
                                            "line", "why")}
            for item in record.get("approvals") or [] if item.get("decision") is None],
    )


def _can_elicit(ctx: Any) -> bool:
    """Whether the client declared elicitation on this connection."""
    try:
        capabilities = ctx.client_capabilities
    except Exception:  # no session to read them from
        return False
    return capabilities is not None and getattr(capabilities, "elicitation", None) is not None


async def _run_returning_waiting(brain: "DCBrain", question: str, conversation_id: str,
                                 run_id: str | None, on_event: Callable[[Event], None]) -> Any:
    """The run, returning ``waiting`` when its calls need decisions (``run_id``: go on
    with one that did)."""
    try:
        return await brain.async_run(question, conversation_id, run_id=run_id,
                                     on_event=on_event, wait_for_approvals=False)
    except TFBrainError as exc:
        if exc.result is None:
            raise
        return exc.result  # a timeout: its partial result, as every other stop


def _pending(request: ApprovalRequest) -> dict[str, Any]:
    return {"call_id": request.call_id, "tool": request.tool,
            "arguments": plain(request.arguments), "args_hash": request.args_hash,
            "line": request.line, "why": request.why}


class ApprovalAnswer(BaseModel):
    """What the MCP client's user answers when a call needs approval."""

    approved: bool = Field(description="run the call")
    reason: str = Field(default="", description="why not (optional)")


def _elicitation(ctx: Any) -> Asker:
    """Ask the MCP client's user about a call through elicitation; a client that cannot
    ask (no elicitation), declines or cancels denies it."""

    async def ask(request: ApprovalRequest) -> tuple[bool, str]:
        message = (f"dcbrain wants to call {request.tool}({dumps(request.arguments)[:2000]}) "
                   f"at plan line {request.line}: {request.why}. Run it?")
        try:
            answer = await ctx.elicit(message, ApprovalAnswer)
        except Exception as exc:  # the client has no elicitation, or the session failed
            return False, f"the MCP client could not ask its user ({type(exc).__name__})"
        if answer.action != "accept" or answer.data is None:
            return False, f"the MCP client's user chose {answer.action}"
        return bool(answer.data.approved), answer.data.reason[:MAX_REASON_CHARS]

    return ask


class _ProgressForwarder:
    """Brain events (from any thread) → MCP progress notifications, in order."""

    def __init__(self, report: Callable[[float, float | None, str | None], Any]) -> None:
        self.report = report
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._forward())

    def on_event(self, event: Event) -> None:
        text = describe_event(event)
        if text is not None:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, text)

    def on_stored_event(self, event: dict[str, Any]) -> None:
        text = describe_stored_event(event)
        if text is not None:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, text)

    async def finish(self) -> None:
        # through the same callback queue, so every event sent before it goes first
        self.loop.call_soon_threadsafe(self.queue.put_nowait, None)
        if self.task is not None:
            await self.task

    async def _forward(self) -> None:
        sent = 0
        while (text := await self.queue.get()) is not None:
            sent += 1
            try:
                await self.report(sent, None, text)
            except Exception:  # a client gone away must not stop the run
                logger.debug("progress notification %d not sent", sent, exc_info=True)


def describe_event(event: Event) -> str | None:
    """One progress message for a brain event; ``None`` for events not worth one."""
    match event.payload:
        case BrainRunStarted(question=question):
            return f"question: {_short(question)}"
        case RunResumed(execution=execution, reason=reason):
            return f"resumed (execution {execution}): {reason}"
        case StateChanged(dest=dest):
            return f"state: {dest}"
        case PlanCreated(plan=plan):
            return f"plan:\n{plan or ''}"
        case PlanRevised(revision=revision, reason=reason, plan=plan):
            because = f" because {_short(reason)}" if reason else ""
            return f"plan revised (revision {revision}){because}:\n{plan or ''}"
        case PlanCallStarted(reused=True):
            return None  # it runs nothing: told once, when it returns the recorded result
        case PlanCallStarted(name=name, args=args):
            shown = ", ".join(f"{key}={_short(value, 60)}" for key, value in args.items())
            return f"call {name}({shown})"
        case PlanCallFinished(name=name, status="aborted"):
            return f"{name} stopped: the run ended first"
        case PlanCallFinished(name=name, status="error", error=error):
            return f"{name} failed: {_short(error)}"
        case PlanCallFinished(name=name, reused=True, result=result):
            return f"{name} reused from an earlier plan → {_short(result)}"
        case PlanCallFinished(name=name, result=result):
            return f"{name} → {_short(result)}"
        case PlanFinished(ok=ok, result=result, error=error):
            return f"plan result: {_short(result)}" if ok else f"plan failed: {_short(error)}"
        case Validation(is_solved=is_solved, suggestion=suggestion):
            return "validator: solved" if is_solved else \
                f"validator: not solved — {_short(suggestion)}"
        case ErrorEvent(error=error):
            return f"error: {_short(error)}"
        case Final(status=status, reason=reason):
            return f"finished: {status} ({reason})"
    return None


def describe_stored_event(event: dict[str, Any]) -> str | None:
    """One progress message for a stored event (a durable run's); ``None`` for others."""
    match event.get("type"):
        case "state_changed":
            return f"state: {event.get('dest')}"
        case "plan_created":
            return f"plan:\n{event.get('plan') or ''}"
        case "plan_call_started" if not event.get("reused"):
            return f"call {event.get('name')}"
        case "approval_requested":
            return f"approval needed: {event.get('tool')} (line {event.get('line')})"
        case "approval_decided":
            return f"approval decided: {'approved' if event.get('approved') else 'denied'}"
        case "final":
            return f"finished: {event.get('status')} ({event.get('reason')})"
    return None


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else dumps(value)
    return text if len(text) <= limit else text[:limit] + "…"
