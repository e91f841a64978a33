"""Planning: what the planner is told, how it is asked, and the plans it writes.

What the planner (and only the planner) sees is a typed :class:`PlanningContext`: the
capability descriptions, budgets, memory recall, earlier failed attempts, the calls
this run already made and the shape the answer must have; a
:class:`~dcbrain.brain.planner.Planner` turns it into a reply. A new plan is recorded on the run's
intermediate result and announced as ``plan_created`` (the run's first) or
``plan_revised`` (with the diff against the previous plan). A plan identical to one that
already failed in this run is not run again: the planner is told once, a second repeat
ends the run (reason ``repeated_plan``) — unless the failure was transient (see
:func:`remember_failed_plan`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from dcbrain.brain.base import answer_text
from dcbrain.brain.context import BrainContext, BrainIntermediateResult
from dcbrain.brain.control import RunControl
from dcbrain.brain.plan_diff import ScriptDiff, plan_calls
from dcbrain.brain.planner import Planner
from dcbrain.brain.planner_view import PlannerView
from dcbrain.brain.text_deltas import PlanDeltas
from dcbrain.brain.tool_docs import describe_callables, records_section
from dcbrain.brain.trace import RunRecorder
from dcbrain.chain import AdditionalInfoPrompt, PlanCallables
from dcbrain.events import PlanCreated, PlanFinished, PlanRevised
from dcbrain.exceptions import TFChainError
from dcbrain.journal import CallJournal, JournalEntry, JournalKey
from dcbrain.llm.observe import ReplyStream, stream_llm_replies
from dcbrain.messages import TextMessage
from dcbrain.retries import is_transient
from dcbrain.tfplan import extract_plan
from dcbrain.tfplan.interpreter import off_the_loop
from dcbrain.tfplan.shapes import ShapeWriter
from dcbrain.values.jsonsafe import dumps

if TYPE_CHECKING:
    from dcbrain.brain.dc_brain import DCBrain
    from dcbrain.memory import Recall

#: Successful calls listed for the planner.
JOURNAL_CALLS_SHOWN = 40
#: Characters of the values plans handed back with ``replan_with`` shown to the planner:
#: about half the tokens left (a token is some four characters), within these bounds.
LOOKED_UP_MAX_CHARS = 60_000
LOOKED_UP_MIN_CHARS = 2_000


def as_prompt(
    prompt: str | AdditionalInfoPrompt | None, default: str, role: str
) -> AdditionalInfoPrompt:
    """``prompt`` as a prompt: ``None`` is the ``default`` template, a str a Jinja2 template."""
    if prompt is None:
        return AdditionalInfoPrompt(default, role=role)
    if isinstance(prompt, str):
        return AdditionalInfoPrompt(prompt, role=role)
    return prompt


@dataclass
class PlanningContext:
    """Everything a planner is told; the planning template renders its fields by name.

    ``contextual_plan_info`` lists earlier failed attempts (``plan``, ``result``,
    ``error``, ``suggestion``), ``looked_up`` what plans handed back with
    ``replan_with(value)`` (``plan``, ``value``, ``sources``), ``succeeded_calls`` the
    run's successful calls (``journal_calls`` is the same list as the template shows it),
    ``output_schema`` the JSON Schema the answer must match (empty: any answer).
    ``conversation`` and ``knowledge`` are the recalled memory, rendered by their own
    prompts; ``extra`` carries the question's own ``additional_kwargs`` for custom templates.
    """

    question: str
    max_iterations: int
    max_tokens: int
    spec_chains: str = "(none)"
    tools: str = "(none)"
    iterations_left: int = 0
    tokens_left: int = 0
    previous_suggestion: str = ""
    contextual_plan_info: list[dict[str, Any]] = field(default_factory=list)
    memory_documents: str = ""
    memory_keyword_hits: str = ""
    journal_calls: str = ""
    succeeded_calls: list[str] = field(default_factory=list)
    output_schema: str = ""
    #: What plans that ended with ``replan_with(value)`` handed back: ``plan``, ``value``
    #: (its text, in full within the budget), ``sources`` (of the data it may hold).
    looked_up: list[dict[str, Any]] = field(default_factory=list)
    conversation: list[TextMessage] = field(default_factory=list)
    knowledge: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    #: How untrusted data is shown to the planner (``DCBrain(show_untrusted_to_planner=)``).
    view: PlannerView = field(default_factory=PlannerView)

    @property
    def attempt(self) -> int:
        """Which planning of the run this is: 1 the first, 2 after one plan ran, ..."""
        return self.max_iterations - self.iterations_left + 1

    @property
    def untrusted_sources_shown(self) -> frozenset[str]:
        """Sources of untrusted data the planner has been shown in this run so far
        (``tool:read_file``, ``chain:extract``, ``memory:documents``, ...): the literals of
        the plans it writes now may carry them. Empty while it saw trusted data only, and
        always with ``show_untrusted_to_planner=False``."""
        return frozenset(self.view.shown)

    @classmethod
    def for_run(
        cls, brain: DCBrain, context: BrainContext, output_schema: str = ""
    ) -> PlanningContext:
        view = PlannerView(brain.show_untrusted_to_planner,
                           frozenset(tool.name for tool in brain.tools if tool.trusted_output),
                           frozenset(brain.spec_chains))
        return cls(
            view=view,
            question=context.current_input.content,
            max_iterations=brain.max_iterations,
            max_tokens=brain.max_tokens,
            iterations_left=brain.max_iterations,
            tokens_left=brain.max_tokens,
            output_schema=output_schema,
            extra=dict(context.current_input.additional_kwargs),
        )

    def describe(self, described: list[dict[str, Any]]) -> None:
        """Take the capability descriptions of the chains and tools plans may call, as
        signatures; the records their results hold follow the last section."""
        self.spec_chains, self.tools = capability_texts(described)

    def describe_callables(self, callables: PlanCallables,
                           chain_inputs: Mapping[str, Any]) -> None:
        """:meth:`describe` of ``callables`` for a run whose chains get ``chain_inputs``
        beside their arguments: the texts are written once per ``callables`` (a brain's)
        and chain arguments those inputs already give."""
        given = tuple(sorted(callables.chain_arguments & chain_inputs.keys())) \
            if chain_inputs else ()
        with _DESCRIBED_LOCK:
            texts = _DESCRIBED.setdefault(callables, {}).get(given)
        if texts is None:
            texts = capability_texts(callables.describe(chain_inputs))
            with _DESCRIBED_LOCK:
                _DESCRIBED[callables][given] = texts
        self.spec_chains, self.tools = texts

    def take_recall(self, context: BrainContext, recall: Recall) -> None:
        """Give the planning what memory recalled: conversation, knowledge, documents, hits."""
        context.recall = recall
        context.conversation = list(recall.conversation)
        context.knowledge = [item.text for item in recall.knowledge]
        self.conversation = self.view.conversation(context.conversation)
        self.knowledge = context.knowledge
        self.memory_documents = self.view.documents(recall.documents_text())
        self.memory_keyword_hits = self.view.documents(recall.keyword_text())

    def update(
        self,
        ir: BrainIntermediateResult,
        *,
        contextual_plan_info: list[dict[str, Any]],
        iterations_left: int,
        tokens_left: int,
        journal: CallJournal,
    ) -> None:
        """Bring in the last suggestion, earlier failures, budgets and finished calls."""
        entries = [entry for entry in journal.successful() if entry.kind in ("chain", "tool")]
        # a failed call's error text is that call's data, as its result would have been
        read = {source for entry in journal.entries() if entry.kind in ("chain", "tool")
                and (source := self.view.source_of(entry))}
        self.previous_suggestion = self.view.suggestion(ir.suggestion or "", read)
        self.contextual_plan_info = self.view.attempts(contextual_plan_info, read)
        self.iterations_left = iterations_left
        self.tokens_left = tokens_left
        self.succeeded_calls = [self.view.call_text(entry) for entry in entries]
        self.journal_calls = describe_calls(self.succeeded_calls)
        # the looked-up values share a part of the tokens left, the latest first
        room = max(LOOKED_UP_MIN_CHARS, min(LOOKED_UP_MAX_CHARS, tokens_left * 2))
        shown: list[dict[str, Any]] = []
        for item in reversed(ir.looked_up):
            shown.insert(0, self.view.looked_up(item, room))
            room = max(LOOKED_UP_MIN_CHARS, room - len(shown[0]["value"]))
        self.looked_up = shown

    def template_vars(self) -> dict[str, Any]:
        values = {item.name: getattr(self, item.name) for item in fields(self)
                  if item.name not in _NOT_TEMPLATE_VARS}
        return {**self.extra, **values}

    def message(self) -> TextMessage:
        """The planner's input: the question, with this context to render."""
        return TextMessage(content=self.question, additional_kwargs=self.template_vars())


def capability_texts(described: list[dict[str, Any]]) -> tuple[str, str]:
    """The chains' and the tools' sections of the planning prompt, from
    ``describe_callables()`` entries; the records their results hold follow the last."""
    writer = ShapeWriter()
    chains = [item for item in described if item["kind"] == "chain"]
    tools = [item for item in described if item["kind"] != "chain"]
    chains_text = describe_callables(chains, writer)
    tools_text = describe_callables(tools, writer)
    if tools or not chains:
        tools_text += records_section(writer)
    else:
        chains_text += records_section(writer)
    return chains_text, tools_text


#: :meth:`PlanningContext.describe_callables`' texts, per callables and chain arguments
#: given (the callables never change: a brain makes new ones when its own change).
_DESCRIBED: WeakKeyDictionary[PlanCallables, dict[tuple[str, ...], tuple[str, str]]] = \
    WeakKeyDictionary()
_DESCRIBED_LOCK = threading.Lock()

#: Fields rendered by their own prompts (or not at all), not by the planning template.
_NOT_TEMPLATE_VARS = frozenset({"extra", "question", "conversation", "knowledge", "view"})


def describe_calls(calls: Sequence[str]) -> str:
    """The calls one line each, the last :data:`JOURNAL_CALLS_SHOWN` of them, for the planner."""
    lines = [f"- {call}" for call in calls]
    if len(lines) > JOURNAL_CALLS_SHOWN:
        skipped = len(lines) - JOURNAL_CALLS_SHOWN
        lines = [*lines[-JOURNAL_CALLS_SHOWN:], f"({skipped} earlier calls not shown)"]
    return "\n".join(lines)


def json_lines(items: list[dict[str, Any]]) -> str:
    """One JSON object per line: compact for the prompt, still readable."""
    if not items:
        return "(none)"
    return "\n".join(dumps(item) for item in items)


async def ask_planner(
    ir: BrainIntermediateResult,
    planner: Planner,
    planning: PlanningContext,
    control: RunControl,
    recorder: RunRecorder,
    callables: Iterable[str],
    journal: CallJournal,
    *,
    listen: ReplyStream | None = None,
) -> None:
    """One planning: the planner asked about the question, its reply taken.

    While a planner's LLM streams, its text goes out as ``plan_delta`` events (and to
    ``listen``, as :func:`~dcbrain.llm.observe.stream_llm_replies` gives it). The reply
    is recorded in the run's journal; a replayed run gets the recorded reply (and no deltas).
    """
    key = JournalKey(ir.iterations, "", "__planner__", "", 0)
    entry = journal.lookup(key)
    if entry is not None and entry.ok:
        content = entry.result
    else:
        started = time.perf_counter()
        deltas = PlanDeltas(recorder.emit, ir.iterations)
        try:
            with stream_llm_replies(deltas.open_reply if listen is None
                                    else deltas.also(listen)):
                reply = await control.interruptible("plan", planner.plan(planning))
        finally:
            deltas.close()
        content = reply.content
        await journal.arecord(JournalEntry(key, "llm", True, result=content,
                                           duration_s=time.perf_counter() - started,
                                           tokens=reply.usage.total_tokens))
    # the plan is parsed and diffed with the previous one: work in proportion to its size
    await off_the_loop(content if isinstance(content, str) else "", take_reply, ir, content,
                       recorder, callables)


def take_reply(
    ir: BrainIntermediateResult, content: Any, recorder: RunRecorder, callables: Iterable[str]
) -> None:
    """A tf_plan block in the planner's reply is the plan, other text the direct answer."""
    text = content if isinstance(content, str) else answer_text(content)
    plan = extract_plan(text)
    if plan is not None and plan.strip():
        if not refuse_repeated_plan(ir, plan, recorder):
            record_new_plan(ir, plan, recorder, callables)
    elif text.strip():
        ir.final_result = text.strip()
        ir.direct_answer = True
    else:
        ir.interpreter_err = TFChainError("the planner replied with nothing")


def normalized_plan(plan: str) -> str:
    """A plan with its whitespace normalised, to recognise a repeated plan."""
    return " ".join(plan.split())


def remember_failed_plan(ir: BrainIntermediateResult) -> None:
    """Note the current plan as failed (so running it again can be refused).

    A plan ended by a transient failure (a call's error that said a new try may pass, or
    a call whose retries ran out on such errors) is not noted: the same plan may be run
    again, and the journal answers its calls that finished.
    """
    if ir.current_plan is not None and not is_transient(ir.interpreter_err):
        ir.failed_plans.setdefault(normalized_plan(ir.current_plan), ir.iterations)


def refuse_repeated_plan(ir: BrainIntermediateResult, plan: str, recorder: RunRecorder) -> bool:
    """Refuse a plan identical to one that already failed in this run.

    The first repeat becomes the attempt's error (the next planning is told); a second
    ends the run with reason ``repeated_plan``.
    """
    earlier = ir.failed_plans.get(normalized_plan(plan))
    if earlier is None:
        return False
    ir.repeats += 1
    ir.plans.append(plan)
    error = (f"this plan is the same as the plan of attempt {earlier}, which failed; "
             "running it again would fail again — write a different plan")
    recorder.emit(PlanFinished(iteration=ir.iterations, ok=False, error=error,
                               error_kind="repeated_plan", skipped=True))
    if ir.repeats >= 2:
        ir.reason = "repeated_plan"
        ir.error = error
        return True
    ir.interpreter_err = TFChainError(error)
    ir.last_error = error
    return True


def record_new_plan(
    ir: BrainIntermediateResult, plan: str, recorder: RunRecorder, callables: Iterable[str]
) -> None:
    """Make ``plan`` the current plan and announce it, as created or as a revision."""
    previous = ir.plans[-1] if ir.plans else None
    ir.current_plan = plan
    ir.plans.append(plan)
    names = list(callables)
    if previous is None:
        recorder.emit(PlanCreated(
            iteration=ir.iterations,
            revision=0,
            plan=plan,
            calls=[call.item() for call in plan_calls(plan, names)],
        ))
        return
    diff = ScriptDiff.compute(previous, plan, callables=names, revision=len(ir.plans) - 1)
    reason = ir.suggestion or (ir.last_error or "")
    recorder.emit(PlanRevised(
        iteration=ir.iterations,
        revision=diff.revision,
        plan=plan,
        previous_plan=previous,
        reason=reason,
        diff=diff.to_data(reason),
        summary=diff.render(),
    ))
