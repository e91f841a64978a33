"""Planning with the embedded tiny model: a short prompt, close examples, a grammar.

A 135M-parameter model cannot follow the long planning template, so
:class:`LocalPlanner` rebuilds each planning request: a short instruction listing the
tools' signatures, few-shot examples (a revision after an error, arithmetic, one call
of each tool), then the question. When the brain's prompt shows an earlier attempt
that failed (the default template puts it in a ```tf_plan block followed by its error,
result and the validator's suggestion), the question comes with that plan and what went
wrong, and the revision is sampled instead of decoded greedily, so it is not a verbatim
repeat. The grammar also admits a one-line direct answer for questions that need no
computation (no example shows one: a tiny model would copy it for every question).
A plan that fails the static check (a name never assigned, a keyword as a name) is
sampled again with other seeds, up to three samples in all.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from dcbrain.llm.base import LLMReply
from dcbrain.llm.local import LocalLLM, plain_messages
from dcbrain.tfplan.interpreter import Interpreter
from dcbrain.tfplan.language import ARITHMETIC, language_summary, operator_symbols
from dcbrain.tfplan.parser import extract_plan

#: Temperature of a revision: the greedy reply to the same question is the failed plan.
REVISION_TEMPERATURE: Final = 0.7
#: What the tiny model is told after a failed plan (its context window is small).
MAX_FEEDBACK_CHARS: Final = 400
#: Samples (other seeds) while a plan fails the static check or repeats the failed plan.
MAX_SAMPLES: Final = 3

_QUESTION_MARKERS = ("Question:", "question:", "User question:", "## Question", "# Question")
_PLAN_BLOCK = re.compile(r"```tf_plan\n(.*?)\n```", re.DOTALL)
_FEEDBACK_END = re.compile(r"\n(?:#{2,3} |Write a new plan)")
_RETRY = ("{question}\nThis plan did not answer it:\n```tf_plan\n{plan}\n```\n{feedback}\n"
          "Write a different plan.")


class LocalPlanner(LocalLLM):
    """The embedded model as a planner for ``tools``; shares the loaded model of ``base``."""

    def __init__(self, base: LocalLLM, tools: Mapping[str, Callable[..., Any]]) -> None:
        super().__init__(
            base.model_path,
            threads=base.threads,
            context_size=base.context_size,
            max_output_tokens=min(base.max_output_tokens, 256),
            temperature=0.0,
            seed=base.seed,
            grammar=plan_grammar(tools),
            system_prompt=plan_system_prompt(tools),
            examples=plan_examples(tools),
        )
        self.tools = dict(tools)
        self._checker = Interpreter(self.tools)

    def _messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        head = [{"role": "system", "content": self.system_prompt or ""}]
        return [*head, *self.examples, *planning_turns(plain_messages(messages))]

    def _temperature(self, messages: list[dict[str, Any]]) -> float:
        revising = "```tf_plan" in messages[-1]["content"]  # the failed plan is shown
        return REVISION_TEMPERATURE if revising else self.temperature

    async def _achat(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None,
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> LLMReply:
        """A plan that passes the static check and is not the failed plan again: other
        samples (other seeds) are drawn until one is, or the last one is returned."""
        attempt = last_attempt(plain_messages(messages))
        reply: LLMReply | None = None
        for sample in range(MAX_SAMPLES):
            answer = await self._complete_once(
                messages, json_schema=json_schema, max_tokens=max_tokens,
                temperature=temperature if sample == 0 else REVISION_TEMPERATURE,
                seed=self.seed + sample)
            if reply is not None:
                answer.usage = reply.usage + answer.usage  # every sample was paid for
            reply = answer
            if self._acceptable(extract_plan(reply.content), attempt):
                break
        assert reply is not None
        return reply

    def _acceptable(self, plan: str | None, attempt: tuple[str, str] | None) -> bool:
        if plan is None:
            return True  # a direct answer
        if attempt is not None and plan == attempt[0]:
            return False
        return not self._checker.check(plan)


def planning_turns(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The question, and after a failed attempt also that plan and what went wrong.

    One user turn either way: a tiny model copies the reply that followed a similar
    question, so a failed plan must never appear as a reply.
    """
    question = last_user_question(messages)
    attempt = last_attempt(messages)
    if attempt is None:
        return [{"role": "user", "content": question}]
    plan, feedback = attempt
    return [{"role": "user", "content": retry_request(question, plan, feedback)}]


def retry_request(question: str, plan: str, feedback: str) -> str:
    """The question with the plan that failed and why, asking for a different plan."""
    return _RETRY.format(question=question, plan=plan, feedback=feedback).replace("\n\n", "\n")


def last_user_question(messages: list[dict[str, Any]]) -> str:
    """The user's question in a planning request: the last user message, cut after a
    ``Question:`` marker when the message embeds a template."""
    users = [m["content"] for m in messages if m["role"] == "user"]
    text = users[-1] if users else ""
    for marker in _QUESTION_MARKERS:
        if marker in text:
            text = text.rsplit(marker, 1)[1]
            break
    return text.strip()[:1000]


def last_attempt(messages: list[dict[str, Any]]) -> tuple[str, str] | None:
    """The last failed plan shown in the system prompt and the text that follows it
    (its error, result and the validator's suggestion), shortened; ``None`` if none."""
    system = "\n".join(m["content"] for m in messages if m["role"] == "system")
    blocks = list(_PLAN_BLOCK.finditer(system))
    if not blocks:
        return None
    last = blocks[-1]
    rest = system[last.end():]
    end = _FEEDBACK_END.search(rest)
    feedback_text = rest[: end.start()] if end else rest
    lines = [line.strip() for line in feedback_text.splitlines()]
    feedback = " ".join(line for line in lines if line and set(line) != {"^"})
    feedback = feedback[:MAX_FEEDBACK_CHARS]
    done = journal_calls(system)
    if done:
        feedback += f" Already done, free to repeat: {done}"
    return last.group(1).strip(), feedback


#: The planning template's list of the run's successful calls (the run journal).
_JOURNAL_HEADER = "## Calls that already succeeded in this run"
MAX_JOURNAL_CHARS = 300


def journal_calls(system: str) -> str:
    """The run's successful calls listed in the brain's prompt, short, on one line."""
    if _JOURNAL_HEADER not in system:
        return ""
    section = system.split(_JOURNAL_HEADER, 1)[1].split("\n## ", 1)[0]
    calls = [line[2:].strip() for line in section.splitlines() if line.startswith("- ")]
    return "; ".join(calls)[:MAX_JOURNAL_CHARS]


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


__all__ = ["LocalPlanner", "last_attempt", "last_user_question", "plan_examples",
           "plan_grammar", "plan_system_prompt", "planning_turns", "retry_request"]
