"""Server test support: real DCBrains on scripted LLMs, an API client, an SSE reader.

Only the LLMs are fake. Each run gets the next brain from a :class:`BrainScripts`
queue, so a test says in order what each of its runs will do.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from dcbrain import Chain, FunctionLLM, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.memory import Memory
from support.brain_scripts import add, plan, verdict

FIRST_PLAN = "total = add(a=2, b=2)\nnote = summarize(text='draft')\nreturn total"
REVISED_PLAN = "base = add(a=2, b=3)\ntotal = add(a=base, b=1)\nreturn total"
SUGGESTION = "add 2 and 3, then one more"

# How long a test waits for something that should happen at once; a wait, never a check.
PATIENCE_S = 20.0


class Gate:
    """A tool a plan calls as ``hold()``: it blocks until the test opens the gate."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def hold(self) -> str:
        """Wait until released."""
        self.entered.set()
        self.opened.wait(PATIENCE_S)
        return "released"


def replanning_brain(memory: Memory | None, **kwargs: Any) -> DCBrain:
    """Plan, rejected by the validator, revised plan (a diff), accepted: answer 6."""
    summarize = Chain(name="summarize", description="Summarize a text",
                      llm=ScriptedLLM(["a summary"]), prompt="Summarize: {{ text }}")
    planner = ScriptedLLM([plan(FIRST_PLAN), plan(REVISED_PLAN)])
    validator = ScriptedLLM([verdict(False, SUGGESTION), verdict(True)])
    return DCBrain(spec_chains={"summarize": summarize}, default_llm=planner,
                   default_validate_llm=validator, tools=[add], memory=memory, **kwargs)


def direct_brain(memory: Memory | None, answer: str) -> DCBrain:
    return DCBrain(default_llm=ScriptedLLM([answer]), memory=memory)


def holding_brain(memory: Memory | None, gate: Gate) -> DCBrain:
    """A plan that calls ``hold()`` and then the ``summarize`` chain (a new-input safe point)."""
    summarize = Chain(name="summarize", description="Summarize a text",
                      llm=ScriptedLLM(["a summary"]), prompt="Summarize: {{ text }}")
    planner = ScriptedLLM([plan("h = hold()\nreturn summarize(text=h)"), verdict(True)])
    return DCBrain(spec_chains={"summarize": summarize}, default_llm=planner,
                   tools=[gate.hold], memory=memory)


def stuck_brain(memory: Memory | None) -> DCBrain:
    """A planner whose LLM call never answers: only an abort ends the run."""

    async def never(messages: list[dict[str, Any]]) -> str:
        await asyncio.sleep(3600)
        return "unreachable"

    return DCBrain(default_llm=FunctionLLM(never), memory=memory)


class BrainScripts:
    """The brain factory given to the server: each run takes the next scripted brain."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._queue: deque[Callable[[Memory], DCBrain]] = deque()
        self._default: Callable[[Memory], DCBrain] | None = None
        self.built = 0

    def then(self, build: Callable[[Memory], DCBrain]) -> BrainScripts:
        self._queue.append(build)
        return self

    def hold(self) -> Gate:
        """The next run's brain is a :func:`holding_brain`: its gate."""
        gate = Gate()
        self.then(lambda memory: holding_brain(memory, gate))
        return gate

    def always(self, build: Callable[[Memory], DCBrain]) -> BrainScripts:
        self._default = build
        return self

    def __call__(self) -> DCBrain:
        self.built += 1
        if self._queue:
            return self._queue.popleft()(self.memory)
        if self._default is None:
            raise AssertionError("the test scripted no brain for this run")
        return self._default(self.memory)


@dataclass
class SSEMessage:
    event: str
    id: str | None
    data: Any


def sse_messages(response: httpx.Response) -> Iterator[SSEMessage]:
    """Parse a ``text/event-stream`` body as it arrives."""
    event, ident = "message", None
    data: list[str] = []
    for line in response.iter_lines():
        if line == "":
            if data:
                yield SSEMessage(event, ident, json.loads("\n".join(data)))
            event, ident, data = "message", None, []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
            elif name == "id":
                ident = value


@dataclass
class Stream:
    events: list[dict[str, Any]]
    ids: list[str | None]
    end: dict[str, Any] | None


class Api:
    """An httpx client on the live server, with helpers that read like the API."""

    def __init__(self, base_url: str, token: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url
        self.engine: Any = None  # the durable engine behind the server, when there is one
        self.http = httpx.Client(base_url=base_url, headers=headers,
                                 timeout=httpx.Timeout(PATIENCE_S))

    def send(self, cid: str, content: str) -> str:
        response = self.http.post(f"/v1/conversations/{cid}/messages", json={"content": content})
        assert response.status_code == 202, response.text
        run_id: str = response.json()["run_id"]
        return run_id

    def send_held(self, cid: str, content: str, gate: Gate) -> str:
        """Send ``content`` and return its run id once the run is held at ``gate``."""
        run_id = self.send(cid, content)
        assert gate.entered.wait(PATIENCE_S)
        return run_id

    def race_decisions(self, run_id: str, call_id: str, count: int) -> list[httpx.Response]:
        """``count`` clients decide the approval at once, approving and denying in turn."""
        start = threading.Barrier(count)
        answers: list[httpx.Response] = []

        def post(approved: bool) -> None:
            with httpx.Client(base_url=self.base_url, timeout=20) as client:
                start.wait()
                answers.append(client.post(f"/v1/runs/{run_id}/approvals/{call_id}",
                                           json={"approved": approved}))

        threads = [threading.Thread(target=post, args=(i % 2 == 0,)) for i in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return answers

    def stream(self, run_id: str, *, last_event_id: int | None = None,
               until: Callable[[dict[str, Any]], bool] | None = None) -> Stream:
        """Read the run's SSE stream to its ``end`` (or to the first event ``until`` accepts)."""
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        events: list[dict[str, Any]] = []
        ids: list[str | None] = []
        with self.http.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["content-type"].startswith("text/event-stream")
            for message in sse_messages(response):
                if message.event == "end":
                    return Stream(events, ids, message.data)
                events.append(message.data)
                ids.append(message.id)
                if until is not None and until(message.data):
                    return Stream(events, ids, None)
        return Stream(events, ids, None)

    def wait_for_status(self, run_id: str, status: str,
                        timeout_s: float = PATIENCE_S) -> dict[str, Any]:
        """The run once ``GET /v1/runs/{id}`` says ``status`` (a live one: ``waiting``)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            run: dict[str, Any] = self.http.get(f"/v1/runs/{run_id}").json()
            if run["status"] == status:
                return run
            time.sleep(0.02)
        raise AssertionError(f"run {run_id} is not {status}: "
                             f"{self.http.get(f'/v1/runs/{run_id}').json()}")

    def wait_for_listing(self, status: str, run_ids: list[str],
                         timeout_s: float = PATIENCE_S) -> list[dict[str, Any]]:
        """``GET /v1/runs?status=...`` once it lists exactly ``run_ids``."""
        deadline = time.monotonic() + timeout_s
        while True:
            runs: list[dict[str, Any]] = self.http.get(
                "/v1/runs", params={"status": status}).json()["runs"]
            if [run["run_id"] for run in runs] == run_ids or time.monotonic() > deadline:
                assert [run["run_id"] for run in runs] == run_ids
                return runs
            time.sleep(0.02)

    def wait_for(self, run_id: str) -> dict[str, Any]:
        """The run once it has ended (its event stream closes when it does)."""
        assert self.stream(run_id).end is not None
        run: dict[str, Any] = self.http.get(f"/v1/runs/{run_id}").json()
        return run


ServeFn = Callable[..., AbstractContextManager[Api]]


@contextmanager
def served_api(app: Any, token: str | None = None) -> Iterator[Api]:
    """``app`` served on loopback in a thread, and an :class:`Api` client of it."""
    from dcbrain.server.testing import serve_in_thread

    with serve_in_thread(app) as base_url:
        api = Api(base_url, token)
        try:
            yield api
        finally:
            api.http.close()


TRIP_PLAN = '''\
nightly = hotel_price(city="Lisbon")
total = nightly * 3
return {"city": "Lisbon", "total": total}'''

TRIP_REVISED_PLAN = '''\
# Price and rate do not depend on each other: fetch both at once.
nightly, rate = parallel(hotel_price(city="Lisbon"), exchange_rate(source="EUR", target="USD"))
total_usd = round(nightly * 3 * rate, 2)
return summarize(text=f"3 nights in Lisbon cost {total_usd} USD")'''

TRIP_ANSWER = "Three nights in Lisbon cost about 382.32 USD (118 EUR a night)."


def hotel_price(city: str) -> float:
    """The price of one hotel night in a city, in euros."""
    return 118.0


def exchange_rate(source: str, target: str) -> float:
    """How many ``target`` units one ``source`` unit buys."""
    return 1.08


def trip_brain(memory: Memory | None) -> DCBrain:
    """A trip question: a plan, a rejected result, a revised plan with parallel calls."""
    summarize = Chain(name="summarize", description="Summarize a text in one sentence",
                      llm=ScriptedLLM([TRIP_ANSWER]), prompt="Summarize: {{ text }}")
    planner = ScriptedLLM([plan(TRIP_PLAN), plan(TRIP_REVISED_PLAN)])
    validator = ScriptedLLM([
        verdict(False, "The total is in euros; the question asks for US dollars."),
        verdict(True),
    ])
    return DCBrain(spec_chains={"summarize": summarize}, default_llm=planner,
                   default_validate_llm=validator, tools=[hotel_price, exchange_rate],
                   memory=memory)


def wait_until_listening(
    process: subprocess.Popen[str], base_url: str, patience_s: float = PATIENCE_S
) -> None:
    """Wait until the ``dcbrain serve`` ``process`` answers ``/v1/health`` at ``base_url``."""
    deadline = time.monotonic() + patience_s
    while True:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        try:
            if httpx.get(base_url + "/v1/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "dcbrain serve did not start"
        time.sleep(0.05)
