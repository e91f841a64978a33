"""What of a run's untrusted data the planner is shown, and what it was shown.

Replanning shows the planner earlier results and errors, the calls that already
succeeded and what memory recalled. Any of it may hold text anyone wrote (a file, an
email, a web page), and a planner that read it writes literals that are no longer the
user's. :class:`PlannerView` either records which untrusted sources the planner saw
(``untrusted_sources_shown``: the next plan's literals carry them), or, when the brain
says ``show_untrusted_to_planner=False``, puts a typed placeholder in their place: the
type, the length and the source, never the content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dcbrain.journal import JournalEntry, from_journal_value
from dcbrain.messages import TextMessage
from dcbrain.values.jsonsafe import dumps

#: Characters of each call's result shown to the planner.
RESULT_CHARS = 300
#: Error kinds computed from the plan's text alone, which hold no data of the run.
PLAN_ONLY_ERRORS = frozenset({"SyntaxError", "CheckError"})
#: Errors shown as they are, since they hold no data of the run either: a refusal names
#: the policy, the argument, its sources, the path through the plan's own text and what
#: would be accepted (a policy's reason holds no untrusted text).
_NO_DATA_ERRORS = PLAN_ONLY_ERRORS | {"TFPolicyDenied"}
#: Sources of what memory recalls (knowledge is the application's own, and trusted).
MEMORY_CONVERSATION = "memory:conversation"
MEMORY_DOCUMENTS = "memory:documents"
#: Source of an earlier attempt's result, error and the validator's suggestion on it.
EARLIER_ATTEMPT = "plan:earlier_attempt"


def placeholder(value: Any, source: str) -> str:
    """``<untrusted str of 57 characters from tool:read_file>``: all the planner learns."""
    if isinstance(value, str):
        size = f"{len(value)} characters"
    elif isinstance(value, list | tuple | dict | set):
        size = f"{len(value)} items"
    else:
        size = "1 value"
    return f"<untrusted {type(value).__name__} of {size} from {source}>"


@dataclass
class PlannerView:
    """How one run shows its untrusted data to the planner.

    ``trusted_tools`` are the tools whose results are trusted data (``trusted_output``);
    every other tool's result and every chain's is untrusted.
    """

    show_untrusted: bool = True
    trusted_tools: frozenset[str] = frozenset()
    #: Names of the chains (any other call is a tool's).
    chains: frozenset[str] = frozenset()
    #: Sources of untrusted data the planner was shown (``tool:read_file``, ...).
    shown: set[str] = field(default_factory=set)

    def source_of(self, entry: JournalEntry) -> str | None:
        """The untrusted source of a call's result (``None``: a trusted tool's)."""
        name = entry.key.name.split("#", 1)[0]
        if entry.kind == "tool" and name in self.trusted_tools:
            return None
        return f"{entry.kind}:{name}"

    def call_text(self, entry: JournalEntry) -> str:
        """``name(arg=value, ...) -> result``, the result cut to a few hundred characters;
        without ``show_untrusted`` the arguments (a plan may pass read data on) and an
        untrusted result are placeholders."""
        try:
            arguments = from_journal_value(json.loads(entry.key.args))
        except ValueError:
            arguments = {}
        source = self.source_of(entry)
        name = entry.key.name.split("#", 1)[0]
        if not isinstance(arguments, dict):
            arguments = {}
        if self.show_untrusted:
            args = ", ".join(f"{key}={dumps(value)}" for key, value in arguments.items())
            if source is not None:
                self.shown.add(source)
        else:
            args = ", ".join(f"{key}={placeholder(value, 'the plan run')}"
                             for key, value in arguments.items())
        if source is None or self.show_untrusted:
            result = entry.result if isinstance(entry.result, str) else dumps(entry.result)
            result = result[:RESULT_CHARS] + ("…" if len(result) > RESULT_CHARS else "")
        else:
            result = placeholder(entry.result, source)
        return f"{name}({args}) -> {result}"

    def attempts(self, attempts: Iterable[dict[str, Any]],
                 sources: Iterable[str]) -> list[dict[str, Any]]:
        """Earlier failed attempts as the planner may see them.

        An attempt's result, its error (unless the plan's text alone caused it) and the
        validator's suggestion on it may hold what the run's untrusted calls read
        (``sources``); without any, they hold the plan's and trusted tools' data only.
        """
        sources = set(sources)
        if not sources:
            return list(attempts)
        shown: list[dict[str, Any]] = []
        for attempt in attempts:
            attempt = dict(attempt)
            for key in ("result", "error", "suggestion"):
                value = attempt.get(key)
                if not value or (key == "error" and _plan_only(str(value))):
                    continue
                if self.show_untrusted:
                    self.shown.update(sources)
                else:
                    attempt[key] = _redacted_error(str(value)) if key == "error" \
                        else placeholder(value, EARLIER_ATTEMPT)
            shown.append(attempt)
        return shown

    def looked_up(self, item: dict[str, Any], limit: int) -> dict[str, Any]:
        """What a plan handed back with ``replan_with(value)``: the plan, the value's text
        (cut to ``limit`` characters) and the sources of what it may hold (the untrusted
        calls the plan made); a placeholder without ``show_untrusted``."""
        calls = item.get("calls") or []
        sources = [source for name in calls
                   if (source := self._source_of_name(str(name))) is not None]
        value = item.get("value")
        text = value if isinstance(value, str) else dumps(value)
        if len(text) > limit:
            text = text[:limit] + f"… ({len(text) - limit} more characters not shown)"
        if sources and not self.show_untrusted:
            text = placeholder(value, ", ".join(sources))
        else:
            self.shown.update(sources)
        return {"plan": item.get("plan", ""), "value": text, "iteration": item.get("iteration"),
                "sources": ", ".join(sources) or "the plan and trusted data only"}

    def _source_of_name(self, name: str) -> str | None:
        name = name.split("#", 1)[0]
        if name in self.trusted_tools:
            return None
        kind = "chain" if name in self.chains else "tool"
        return f"{kind}:{name}"

    def suggestion(self, text: str, sources: Iterable[str]) -> str:
        """The validator's last suggestion (it judged a result that may hold read data)."""
        sources = set(sources)
        if not text or not sources:
            return text
        if self.show_untrusted:
            self.shown.update(sources)
            return text
        return placeholder(text, EARLIER_ATTEMPT)

    def conversation(self, messages: list[TextMessage]) -> list[TextMessage]:
        """The recalled conversation: the person's own turns, and the answers (which may
        hold read data) as placeholders when untrusted data is not shown."""
        if all(message.role == "user" for message in messages):
            return messages
        if self.show_untrusted:
            self.shown.add(MEMORY_CONVERSATION)
            return messages
        return [message if message.role == "user" else TextMessage(
            content=placeholder(message.content, MEMORY_CONVERSATION), role=message.role)
            for message in messages]

    def documents(self, text: str) -> str:
        """Recalled documents and keyword hits: anyone may have written them."""
        if not text:
            return text
        if self.show_untrusted:
            self.shown.add(MEMORY_DOCUMENTS)
            return text
        return placeholder(text, MEMORY_DOCUMENTS)


#: ``3:9: KeyError: ...``: an error raised while the plan ran (check problems name no kind).
_RUN_ERROR = re.compile(r"^\d+:\d+: ([A-Z]\w*): ")


def _plan_only(error: str) -> bool:
    match = _RUN_ERROR.match(error)
    return match is None or match.group(1) in _NO_DATA_ERRORS


def _redacted_error(error: str) -> str:
    """``3:9: KeyError: <untrusted ...>``: where and what kind, not the message."""
    head = error.split("\n", 1)[0]
    parts = head.split(": ", 2)
    if len(parts) == 3 and parts[0].replace(":", "").isdigit():
        return f"{parts[0]}: {parts[1]}: {placeholder(parts[2], EARLIER_ATTEMPT)}"
    return placeholder(error, EARLIER_ATTEMPT)
