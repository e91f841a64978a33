"""Planning with the embedded tiny model: a short prompt, close examples, a grammar.

A 135M-parameter model cannot follow the long planning template, so
:class:`LocalPlanner` builds its own request from the typed
:class:`~dcbrain.brain.planning.PlanningContext`: a short instruction listing the
tools' signatures, few-shot examples (a revision after an error, arithmetic, one call
of each tool), then the question. After a failed attempt the question comes with that
plan, what went wrong and the calls already made, and the revision is sampled instead
of decoded greedily, so it is not a verbatim repeat. The grammar also admits a one-line
direct answer for questions that need no computation (no example shows one: a tiny
model would copy it for every question). A plan that fails the static check (a name
never assigned, a keyword as a name) or repeats the failed plan is sampled again with
other seeds, up to three samples in all.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from dcbrain.brain.planner import PlanReply
from dcbrain.brain.planning import PlanningContext
from dcbrain.llm.base import LLMReply
from dcbrain.llm.local import LocalLLM
from dcbrain.tfplan.interpreter import Interpreter
from dcbrain.tfplan.language import ARITHMETIC, language_summary, operator_symbols
from dcbrain.tfplan.parser import extract_plan

#: Temperature of a revision: the greedy reply to the same question is the failed plan.
REVISION_TEMPERATURE: Final = 0.7
#: What the tiny model is told after a failed plan (its context window is small).
MAX_FEEDBACK_CHARS: Final = 400
#: Characters of the already-made calls told after a failed plan.
MAX_JOURNAL_CHARS: Final = 300
#: Samples (other seeds) while a plan fails the static check or repeats the failed plan.
MAX_SAMPLES: Final = 3
#: Characters of the question the tiny model is shown.
MAX_QUESTION_CHARS: Final = 1000

_RETRY = ("{question}\nThis plan did not answer it:\n```tf_plan\n{plan}\n```\n{feedback}\n"
          "Write a different plan.")


class LocalPlanner:
    """The embedded model as the :class:`~dcbrain.brain.planner.Planner` of a brain whose
    plans call ``tools``; it shares the loaded model (and its one-at-a-time lock) of ``base``.

    ``samplers`` are ``base`` with the plan grammar, the short prompt and the examples, one
    per seed; each sample is an LLM call of its own (the run's budget sees every one).
    """

    def __init__(self, base: LocalLLM, tools: Mapping[str, Callable[..., Any]]) -> None:
        self.tools = dict(tools)
        self.base = base
        self.samplers = [
            _variant(base, seed=base.seed + sample, temperature=0.0,
                     max_output_tokens=min(base.max_output_tokens, 256),
                     grammar=plan_grammar(self.tools),
                     system_prompt=plan_system_prompt(self.tools),
                     examples=plan_examples(self.tools))
            for sample in range(MAX_SAMPLES)
        ]
        self._checker = Interpreter(self.tools)

    @property
    def model(self) -> str:
        return self.base.model

    async def plan(self, ctx: PlanningContext) -> PlanReply:
        """A plan that passes the static check and is not the failed plan again: other
        samples (other seeds) are drawn until one is, or the last one is returned."""
        attempt = last_attempt(ctx)
        messages = [{"role": "user", "content": planning_request(ctx)}]
        reply: LLMReply | None = None
        usage = None
        for sample, sampler in enumerate(self.samplers):
            revising = attempt is not None or sample > 0
            reply = await sampler.achat(
                messages, temperature=REVISION_TEMPERATURE if revising else sampler.temperature)
            usage = reply.usage if usage is None else usage + reply.usage
            if self._acceptable(extract_plan(reply.content), attempt):
                break
        assert reply is not None and usage is not None
        return PlanReply(reply.content, usage)

    def _acceptable(self, plan: str | None, attempt: tuple[str, str] | None) -> bool:
        if plan is None:
            return True  # a direct answer
        if attempt is not None and plan == attempt[0]:
            return False
        return not self._checker.check(plan)


def _variant(base: LocalLLM, **changes: Any) -> LocalLLM:
    """``base`` with ``changes``: the same model file, runtime and lock."""
    variant = copy.copy(base)
    for name, value in changes.items():
        setattr(variant, name, value)
    return variant


def planning_request(ctx: PlanningContext) -> str:
    """The one user turn: the question, and after a failed attempt that plan and what
    went wrong. A tiny model copies the reply that followed a similar question, so a
    failed plan must never appear as a reply."""
    question = ctx.question.strip()[:MAX_QUESTION_CHARS]
    attempt = last_attempt(ctx)
    if attempt is None:
        return question
    plan, feedback = attempt
    return retry_request(question, plan, feedback)


def retry_request(question: str, plan: str, feedback: str) -> str:
    """The question with the plan that failed and why, asking for a different plan."""
    return _RETRY.format(question=question, plan=plan, feedback=feedback).replace("\n\n", "\n")


def last_attempt(ctx: PlanningContext) -> tuple[str, str] | None:
    """The last failed plan and what went wrong with it (its error, result, the
    validator's suggestion and the calls already made), shortened; ``None`` if none."""
    if not ctx.contextual_plan_info:
        return None
    attempt = ctx.contextual_plan_info[-1]
    parts = []
    if attempt.get("error"):
        parts.append(f"It failed with this error: {attempt['error']}")
    if attempt.get("result"):
        parts.append(f"Its result: {attempt['result']}")
    if attempt.get("suggestion"):
        parts.append(f"The validator's suggestion: {attempt['suggestion']}")
    lines = (line.strip() for line in " ".join(parts).splitlines())
    # an error's caret line points into a source line the model is not shown
    feedback = " ".join(line for line in lines if line and set(line) != {"^"})
    feedback = feedback[:MAX_FEEDBACK_CHARS]
    done = "; ".join(ctx.succeeded_calls)[:MAX_JOURNAL_CHARS]
    if done:
        feedback += f" Already done, free to repeat: {done}"
    return str(attempt.get("plan", "")).strip(), feedback


def _schema_type(annotation: Any) -> str:
    if annotation in (int, float, "int", "float"):
        return "number"
    if annotation in (bool, "bool"):
        return "bool"
    return "text"


def _parameters(func: Callable[..., Any]) -> list[inspect.Parameter]:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return []
    return [p for p in signature.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _signature_line(name: str, func: Callable[..., Any]) -> str:
    params = ", ".join(f"{p.name}: {_schema_type(p.annotation)}" for p in _parameters(func))
    doc = inspect.getdoc(func) or ""
    summary = doc.split("\n\n")[0].replace("\n", " ")
    return f"{name}({params})" + (f"  # {summary}" if summary else "")


def plan_system_prompt(tools: Mapping[str, Callable[..., Any]]) -> str:
    listed = "\n".join(_signature_line(name, func) for name, func in tools.items())
    return (
        "You answer with a ```tf_plan block: statements that compute the answer and "
        "return it. Call tools with keyword arguments. Answer in one plain sentence "
        "only when nothing needs computing or looking up.\n"
        f"{language_summary().splitlines()[0]}\n"
        f"Tools:\n{listed or '(none: use arithmetic only)'}"
    )


_SAMPLE = {"number": ("7", "7"), "bool": ("True", "yes"), "text": ('"paris"', "paris")}


def _plan(body: str) -> str:
    return f"```tf_plan\n{body}\n```"


def plan_examples(tools: Mapping[str, Callable[..., Any]]) -> list[dict[str, str]]:
    """Few-shot turns: a revision after an error, arithmetic, one call of each tool.

    A tiny model copies what it saw last: the revision comes first, and there is no
    direct-answer example (it would be copied for every question).
    """
    turns: list[tuple[str, str]] = [
        ("user", "What is 12 times 7?"),
        ("assistant", _plan("result = 12 * 7\nreturn result")),
        ("user", "What is 100 minus 58, divided by 2?"),
        ("assistant", _plan("difference = 100 - 58\nresult = difference / 2\nreturn result")),
    ]
    first_call: tuple[str, list[inspect.Parameter], list[tuple[str, str]]] | None = None
    for name, func in list(tools.items())[:6]:
        params = [p for p in _parameters(func) if p.default is p.empty]
        samples = [_SAMPLE[_schema_type(p.annotation)] for p in params]
        question_args = " and ".join(f"{p.name} {s[1]}" for p, s in zip(params, samples,
                                                                         strict=True))
        call_args = ", ".join(f"{p.name}={s[0]}" for p, s in zip(params, samples, strict=True))
        doc = (inspect.getdoc(func) or name).split("\n")[0].rstrip(".")
        question = f"{doc}: {question_args}?" if question_args else f"{doc}?"
        turns += [("user", question),
                  ("assistant", _plan(f"result = {name}({call_args})\nreturn result"))]
        if first_call is None and params:
            first_call = (name, params, samples)
    turns = [*_revision_example(first_call), *turns]
    return [{"role": role, "content": content} for role, content in turns]


def _revision_example(
    call: tuple[str, list[inspect.Parameter], list[tuple[str, str]]] | None,
) -> list[tuple[str, str]]:
    """A failed plan with its error, and the corrected plan: how to read feedback."""
    if call is None:
        question, wrong = "What is 6 plus 4, times 2?", "result = 6 + 4 * 2\nreturn result"
        feedback = "Its result: 14. The validator's suggestion: add first, then multiply."
        right = "total = 6 + 4\nresult = total * 2\nreturn result"
    else:  # the tiny model's usual slip: a name it never assigned
        name, params, samples = call
        args = ", ".join(f"{p.name}={s[0]}" for p, s in zip(params, samples, strict=True))
        question = f"Use {name} with {' and '.join(s[1] for s in samples)}."
        wrong = f"return {name}_result"
        feedback = (f"It failed with this error: 1:8: name '{name}_result' is never "
                    "assigned")
        right = f"{name}_result = {name}({args})\nreturn {name}_result"
    return [("user", retry_request(question, wrong, feedback)), ("assistant", _plan(right))]


def plan_grammar(tools: Mapping[str, Callable[..., Any]]) -> str:
    """GBNF: a ```tf_plan block of one to six simple statements and a ``return``, or a
    one-line direct answer.

    Statements are ``name = expression`` and ``print(expression)``; expressions are
    numbers, strings, lists, names, arithmetic, subscripts (``item["price"]``) and calls
    of ``tools`` with their own keyword arguments (required ones in order, then optional
    ones). Names are up to 40 characters; assigned names do not start with ``ret``.
    """
    calls = {name: func for name, func in tools.items() if name.isidentifier()}
    rules = ""
    if calls:
        rules += "call ::= " + " | ".join(f"call{i}" for i in range(len(calls))) + "\n"
        for i, (name, func) in enumerate(calls.items()):
            rules += f"call{i} ::= {json.dumps(name + '(')} {_arguments(func)} \")\"\n"
    head = "(call | ident)" if calls else "ident"
    operators = " | ".join(json.dumps(symbol) for symbol in operator_symbols(ARITHMETIC))
    return (
        "root ::= plan | answer\n"
        'plan ::= "```tf_plan\\n" stmt{1,6} "return " expr "\\n```"\n'
        'answer ::= [A-Z] [^`\\n]{1,300}\n'
        'stmt ::= (target " = " expr | "print(" expr ")") "\\n"\n'
        'expr ::= term (" " op " " term){0,4}\n'
        f'term ::= {head} index? | number | string | list | "(" expr ")"\n'
        'index ::= "[" (string | number) "]"\n'
        'list ::= "[" (expr (", " expr){0,7})? "]"\n'
        f"{rules}"
        f"op ::= {operators}\n"
        "ident ::= [a-zA-Z_] [a-zA-Z0-9_]{0,39}\n"
        # A name assigned to never starts with "ret": the model would write "return = x".
        "target ::= [a-qs-zA-Z_] [a-zA-Z0-9_]{0,39} | \"r\" ([a-df-zA-Z0-9_] "
        "[a-zA-Z0-9_]{0,38})? | \"re\" ([a-su-zA-Z0-9_] [a-zA-Z0-9_]{0,37})?\n"
        'number ::= "-"? [0-9]{1,12} ("." [0-9]{1,6})?\n'
        'string ::= "\\"" [^"\\\\\\n]{0,80} "\\""\n'
    )


def _arguments(func: Callable[..., Any]) -> str:
    """The keyword arguments of a call of ``func`` as a grammar sequence."""
    params = _parameters(func)
    required = [p.name for p in params if p.default is p.empty]
    optional = [p.name for p in params if p.default is not p.empty]
    parts = [json.dumps(("" if i == 0 else ", ") + f"{name}=") + " expr"
             for i, name in enumerate(required)]
    for name in optional:
        separator = ", " if required or parts else ""
        parts.append(f"({json.dumps(separator + name + '=')} expr)?")
    return " ".join(parts) if parts else '""'


__all__ = ["LocalPlanner", "last_attempt", "plan_examples", "plan_grammar",
           "plan_system_prompt", "planning_request", "retry_request"]
