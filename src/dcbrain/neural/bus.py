"""``Neural``: the in-process signal bus (what a brain registers and listens to).

Four services on one object:

- a registry of named objects by kind (``"chain"``, ``"llm"``, ``"memory"``, ``"tool"``…);
- publish/subscribe by signal name, delivered in publish order to each subscriber;
- request/response with a timeout, which is how tool calls are dispatched;
- per-conversation "user new input", which the chain layer turns into
  :class:`~dcbrain.exceptions.TFUserNewInputError` at its next safe point.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from dcbrain.exceptions import TFNeuralError, TFNeuralTimeoutError, TFUserNewInputError

logger = logging.getLogger("dcbrain.neural")

ALL_SIGNALS: Final = "*"
USER_INPUT_SIGNAL: Final = "user_input"
DEFAULT_REQUEST_TIMEOUT: Final = 30.0


@dataclass(frozen=True)
class Signal:
    """What a subscriber receives: the signal's name, its payload and when it was sent."""

    name: str
    payload: Any = None
    ts: float = field(default_factory=time.time)


Handler = Callable[[Signal], Awaitable[None] | None]
Responder = Callable[[Any], Any]


class Subscription:
    """One handler's inbox: signals are handled one at a time, in publish order.

    A handler that raises is logged and does not stop delivery of later signals.
    """

    def __init__(self, neural: Neural, signal: str, handler: Handler) -> None:
        self.signal = signal
        self.handler = handler
        self._neural = neural
        self._queue: asyncio.Queue[Signal] | None = None
        self._worker: asyncio.Task[None] | None = None

    def cancel(self) -> None:
        """Stop receiving signals; ones already queued are dropped."""
        self._neural._remove(self)
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None

    def _deliver(self, signal: Signal) -> None:
        """Queue ``signal``; must run on the bus's event loop."""
        loop = asyncio.get_running_loop()
        worker = self._worker
        if self._queue is None or worker is None or worker.done() or worker.get_loop() is not loop:
            self._queue = asyncio.Queue()
            self._worker = loop.create_task(self._work(self._queue), name=f"neural:{self.signal}")
        self._queue.put_nowait(signal)

    async def _work(self, queue: asyncio.Queue[Signal]) -> None:
        while True:
            signal = await queue.get()
            try:
                result = self.handler(signal)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                logger.exception("handler %r failed on signal %r", self.handler, signal.name)
            finally:
                queue.task_done()

    async def _join(self) -> None:
        if self._queue is not None and self._worker is not None and not self._worker.done():
            await self._queue.join()


class Neural:
    """An in-process signal bus shared by brains, chains, tools and servers.

    Publishing is allowed from any thread; delivery happens on the event loop the bus
    first ran on. Not a message broker: nothing survives the process.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._registry: dict[str, dict[str, Any]] = {}
        self._subscriptions: list[Subscription] = []
        self._responders: dict[str, Responder] = {}
        self._user_input: dict[str, list[str]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- registry ----------------------------------------------------------------------

    def register(self, kind: str, name: str, obj: Any) -> None:
        """Make ``obj`` findable as ``lookup(kind, name)``; replaces an earlier one."""
        with self._lock:
            self._registry.setdefault(kind, {})[name] = obj

    def unregister(self, kind: str, name: str) -> None:
        with self._lock:
            self._registry.get(kind, {}).pop(name, None)

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

    # -- publish / subscribe -----------------------------------------------------------

    def subscribe(self, signal: str, handler: Handler) -> Subscription:
        """Call ``handler(Signal)`` for every ``signal`` published (``"*"``: every signal).

        Handlers may be sync or async; sync ones run on the event loop, so keep them short.
        """
        subscription = Subscription(self, signal, handler)
        with self._lock:
            self._subscriptions.append(subscription)
        return subscription

    def _remove(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)

    def publish(self, signal: str, payload: Any = None) -> None:
        """Send ``signal`` to its subscribers without waiting for them.

        Raises ``RuntimeError`` when called outside an event loop before the bus has one.
        """
        message = Signal(signal, payload)
        loop = self._bind_loop()
        if loop is None:
            raise RuntimeError(
                f"Neural.publish({signal!r}) needs a running event loop: call it from async "
                "code, or from another thread once the bus has been used in a loop"
            )
        if _running_loop() is loop:
            self._fan_out(message)
        else:
            loop.call_soon_threadsafe(self._fan_out, message)

    def _fan_out(self, message: Signal) -> None:
        with self._lock:
            targets = [
                sub for sub in self._subscriptions if sub.signal in (message.name, ALL_SIGNALS)
            ]
        for subscription in targets:
            subscription._deliver(message)

    def _bind_loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop deliveries run on: the running one here, else the one last bound."""
        running = _running_loop()
        with self._lock:
            if running is not None and (self._loop is None or self._loop.is_closed()):
                self._loop = running
            if self._loop is not None and self._loop.is_closed():
                self._loop = None
            return self._loop

    async def drain(self) -> None:
        """Wait until every subscriber has handled every signal published so far."""
        await asyncio.sleep(0)  # let hand-offs from other threads land first
        with self._lock:
            subscriptions = list(self._subscriptions)
        await asyncio.gather(*(sub._join() for sub in subscriptions))

    async def aclose(self) -> None:
        """Cancel all subscriptions; queued signals are dropped."""
        with self._lock:
            subscriptions = list(self._subscriptions)
        for subscription in subscriptions:
            subscription.cancel()
        await asyncio.sleep(0)

    # -- request / response ------------------------------------------------------------

    def respond(self, signal: str, responder: Responder, *, replace: bool = False) -> None:
        """Serve requests for ``signal`` with ``responder(payload)`` (sync or async).

        Sync responders run in a worker thread so they cannot block the event loop.
        """
        with self._lock:
            if signal in self._responders and not replace:
                raise ValueError(f"signal {signal!r} already has a responder")
            self._responders[signal] = responder

    def stop_responding(self, signal: str) -> None:
        with self._lock:
            self._responders.pop(signal, None)

    async def request(
        self, signal: str, payload: Any = None, *, timeout: float | None = DEFAULT_REQUEST_TIMEOUT
    ) -> Any:
        """The responder's answer to ``payload``; its exceptions propagate unchanged.

        Raises :class:`TFNeuralError` when ``signal`` has no responder and
        :class:`TFNeuralTimeoutError` when no answer came within ``timeout`` seconds.
        A sync responder that times out keeps running in its thread; its answer is dropped.
        """
        with self._lock:
            responder = self._responders.get(signal)
        if responder is None:
            raise TFNeuralError(f"no responder for signal {signal!r}")
        self._bind_loop()
        deadline = asyncio.timeout(timeout)
        try:
            async with deadline:
                if inspect.iscoroutinefunction(responder):
                    return await responder(payload)
                result = await asyncio.to_thread(responder, payload)
                if inspect.isawaitable(result):
                    return await result
                return result
        except TimeoutError:
            if deadline.expired():
                raise TFNeuralTimeoutError(
                    f"no response to {signal!r} within {timeout:g}s"
                ) from None
            raise

    def register_tool(self, name: str, function: Callable[..., Any]) -> None:
        """Register ``function`` as tool ``name`` and serve ``"tool:<name>"`` requests.

        A request's payload is the dict of keyword arguments for ``function``.
        """
        self.register("tool", name, function)

        if inspect.iscoroutinefunction(function):

            async def serve_async(payload: Any) -> Any:
                return await function(**(payload or {}))

            self.respond(f"tool:{name}", serve_async, replace=True)
        else:

            def serve(payload: Any) -> Any:
                return function(**(payload or {}))

            self.respond(f"tool:{name}", serve, replace=True)

    def tool_proxy(
        self, name: str, *, timeout: float | None = DEFAULT_REQUEST_TIMEOUT
    ) -> Callable[..., Awaitable[Any]]:
        """An async callable that dispatches its keyword arguments to tool ``name``."""

        async def call(**kwargs: Any) -> Any:
            return await self.request(f"tool:{name}", kwargs, timeout=timeout)

        call.__name__ = name
        call.__qualname__ = name
        return call

    # -- user new input ----------------------------------------------------------------

    def post_user_input(self, conversation_id: str, text: str) -> None:
        """Record that the user sent ``text`` while a run of the conversation is active.

        Subscribers of ``"user_input"`` get ``{"conversation_id": ..., "text": ...}`` when
        the bus has an event loop. Callable from any thread.
        """
        with self._lock:
            self._user_input.setdefault(conversation_id, []).append(text)
        if self._bind_loop() is not None:
            try:
                self.publish(USER_INPUT_SIGNAL, {"conversation_id": conversation_id, "text": text})
            except RuntimeError:  # the loop closed meanwhile: the input is still recorded
                logger.debug("user input for %r recorded without a signal", conversation_id)

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


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
