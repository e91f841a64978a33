"""``Neural``: the mailbox of a user's new input to a running run.

A surface posts what the user sent while a run of the conversation is active; the chain
layer takes it at its next safe point and raises
:class:`~dcbrain.exceptions.TFUserNewInputError`. It also names the chains a brain and its
plans hold (``register``/``registered``), so that a plan's ``__construct_chain`` never
takes the name of one it was given. In-process only: nothing survives the process.
"""

from __future__ import annotations

import threading
from typing import Any, Final

from dcbrain.exceptions import TFUserNewInputError

#: The name new input had as a signal; kept for code that names it.
USER_INPUT_SIGNAL: Final = "user_input"


class Neural:
    """New user input by conversation, and named objects by kind. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._registry: dict[str, dict[str, Any]] = {}
        self._user_input: dict[str, list[str]] = {}

    def register(self, kind: str, name: str, obj: Any) -> None:
        """Make ``obj`` findable as ``lookup(kind, name)``; replaces an earlier one."""
        with self._lock:
            self._registry.setdefault(kind, {})[name] = obj

    def lookup(self, kind: str, name: str) -> Any:
        """The object registered as ``kind``/``name``; ``KeyError`` when there is none."""
        with self._lock:
            objects = self._registry.get(kind, {})
            if name not in objects:
                known = ", ".join(sorted(objects)) or "none"
                raise KeyError(f"no {kind} named {name!r} is registered (known: {known})")
            return objects[name]

    def registered(self, kind: str) -> dict[str, Any]:
        """A copy of everything registered under ``kind``, by name."""
        with self._lock:
            return dict(self._registry.get(kind, {}))

    def post_user_input(self, conversation_id: str, text: str) -> None:
        """Record that the user sent ``text`` while a run of the conversation is active."""
        with self._lock:
            self._user_input.setdefault(conversation_id, []).append(text)

    def pending_user_input(self, conversation_id: str) -> str | None:
        """The new input waiting for the conversation (several joined by newlines), or None."""
        with self._lock:
            texts = self._user_input.get(conversation_id)
            return "\n".join(texts) if texts else None

    def take_user_input(self, conversation_id: str) -> str | None:
        """Like :meth:`pending_user_input`, and clears it."""
        with self._lock:
            texts = self._user_input.pop(conversation_id, None)
            return "\n".join(texts) if texts else None

    def raise_if_new_input(self, conversation_id: str) -> None:
        """Raise :class:`TFUserNewInputError` carrying the pending input, and clear it.

        Call at safe points only: between chain calls and LLM calls, never inside a tool.
        """
        text = self.take_user_input(conversation_id)
        if text is not None:
            raise TFUserNewInputError(
                f"new user input for conversation {conversation_id!r}", new_input=text
            )
