"""Red-team findings, each pinned: hostile plan output, bad cursors, cross-site posts,
tokens in URLs, idle streams, and aborts that leave nothing behind in the log."""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from importlib import resources

import httpx
import pytest

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.memory import Memory
from support.brain_scripts import plan, verdict
from support.server_app import (
    PATIENCE_S,
    BrainScripts,
    ServeFn,
    sse_messages,
    stuck_brain,
)
from support.waiting import wait_until


def surrogate_brain(memory: Memory | None) -> DCBrain:
    """A plan whose result (and printed output) holds a lone surrogate, then accepted."""
    planner = ScriptedLLM([plan("text = 'bad ' + chr(55296) + ' text'\nprint(text)\n"
                                "return text")])
    validator = ScriptedLLM([verdict(True)])
    return DCBrain(default_llm=planner, default_validate_llm=validator, memory=memory)


def test_a_lone_surrogate_in_a_plan_result_is_stored_and_streamed_replaced(
    serve: ServeFn, brains: BrainScripts, memory: Memory
) -> None:
    brains.then(surrogate_brain)
    with serve() as api:
        run_id = api.send("c1", "say something odd")
        stream = api.stream(run_id)
        run = api.http.get(f"/v1/runs/{run_id}").json()
    assert stream.end is not None and stream.end["status"] == run["status"]
    assert run["status"] == "succeeded", run
    assert run["result"]["final_result"] == "bad \ufffd text"
    stored = memory.run_events(run_id)
    assert [e.seq for e in stored] == list(range(len(stream.events)))
    assert stored[-1].event["type"] == "final"
    assert "\ufffd" in json.dumps([e.event for e in stored], ensure_ascii=False)


class LogRecords(logging.Handler):
    """Every record of the loggers it is attached to (the server logs from its own thread)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def text(self) -> str:
        return "\n".join(record.getMessage() for record in self.records)


@pytest.fixture
def server_log() -> Iterator[LogRecords]:
    handler = LogRecords()
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "asyncio", "dcbrain")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)


@pytest.mark.parametrize("cursor", ["99999999999999999999999", "-2", "-1000", "abc", "1e3",
                                    "5_0", "+5", "0x10"])
def test_a_bad_event_cursor_is_a_400_in_the_header_and_the_query(
    serve: ServeFn, brains: BrainScripts, server_log: LogRecords, cursor: str
) -> None:
    brains.then(lambda memory: DCBrain(default_llm=ScriptedLLM(["ok"]), memory=memory))
    with serve() as api:
        run_id = api.send("c1", "hi")
        api.wait_for(run_id)
        by_header = api.http.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": cursor})
        by_query = api.http.get(f"/v1/runs/{run_id}/events", params={"after": cursor})
        resumed = api.http.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "1"})
    for response in (by_header, by_query):
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "invalid_last_event_id"
    lines = resumed.text.splitlines()
    assert resumed.status_code == 200 and "id: 2" in lines and "id: 1" not in lines
    assert "Exception" not in server_log.text()


@pytest.mark.parametrize(
    "headers", [{}, {"Content-Type": "text/plain"},
                {"Content-Type": "application/x-www-form-urlencoded"},
                {"Content-Type": "multipart/form-data; boundary=x"}])
def test_abort_needs_json_like_posting_a_message(
    serve: ServeFn, brains: BrainScripts, headers: dict[str, str]
) -> None:
    brains.then(stuck_brain)
    with serve() as api:
        run_id = api.send("c1", "never answered")
        api.stream(run_id, until=lambda e: e["type"] == "call_started")
        cross_site = api.http.post(f"/v1/runs/{run_id}/abort", content=b"x=1", headers=headers)
        still_running = api.http.get(f"/v1/runs/{run_id}").json()["status"]
        same_site = api.http.post(f"/v1/runs/{run_id}/abort", json={})
        run = api.wait_for(run_id)
    assert cross_site.status_code == 415
    assert cross_site.json()["error"] == "unsupported_media_type"
    assert still_running == "running"
    assert same_site.status_code == 202 and run["status"] == "aborted"


def test_with_a_token_abort_needs_no_content_type(serve: ServeFn, brains: BrainScripts) -> None:
    brains.then(stuck_brain)
    with serve(token="t0ken") as api:  # the client sends Authorization: Bearer t0ken
        run_id = api.send("c1", "never answered")
        api.stream(run_id, until=lambda e: e["type"] == "call_started")
        response = api.http.post(f"/v1/runs/{run_id}/abort")
        run = api.wait_for(run_id)
    assert response.status_code == 202 and run["status"] == "aborted"


def test_the_access_token_in_the_url_opens_only_the_event_stream(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.always(lambda memory: DCBrain(default_llm=ScriptedLLM(["ok"]), memory=memory))
    with serve(token="t0ken") as api:
        run_id = api.send("c1", "hi")
        api.wait_for(run_id)
        anonymous = httpx.Client(base_url=api.base_url, timeout=PATIENCE_S)
        query = {"access_token": "t0ken"}
        stream = anonymous.get(f"/v1/runs/{run_id}/events", params=query)
        refused = [
            anonymous.get("/v1/conversations/c1/events", params=query),
            anonymous.get(f"/v1/runs/{run_id}/events/", params=query),
            anonymous.get("/v1/runs/not-a-run/events", params=query),
            anonymous.get("/static/x/events", params=query),
            anonymous.get(f"/v1/runs/{run_id}", params=query),
            anonymous.post(f"/v1/runs/{run_id}/abort", params=query, json={}),
        ]
        anonymous.close()
    assert stream.status_code == 200 and "event: end" in stream.text
    assert [r.status_code for r in refused[:3] + refused[4:]] == [401] * 5
    assert refused[3].status_code == 404  # not under /v1: no token needed, nothing there


@pytest.mark.parametrize(("per_client", "total", "detail"), [
    (2, 10, "this client already has 2 event streams open (the limit)"),
    (10, 2, "the server has 2 event streams open (the limit)"),
])
def test_open_event_streams_are_capped_per_client_and_in_total(
    serve: ServeFn, brains: BrainScripts, per_client: int, total: int, detail: str
) -> None:
    gate = brains.hold()
    with serve(max_streams_per_client=per_client, max_streams=total) as api:
        run_id = api.send_held("c1", "hold on", gate)
        url = f"{api.base_url}/v1/runs/{run_id}/events"
        clients = [httpx.Client(timeout=PATIENCE_S) for _ in range(3)]
        with contextlib.ExitStack() as stack:
            held = [stack.enter_context(clients[i].stream("GET", url)) for i in range(2)]
            refused = clients[2].get(url)
            statuses = [r.status_code for r in held]
        # the server sees the two streams close: until it has, a new one is refused; the
        # one it lets open is read to the run's end (a stream closed here frees its slot
        # only once the server has seen it close, so none is closed before that read)
        deadline, ended = time.monotonic() + PATIENCE_S, False
        while True:
            with clients[2].stream("GET", url) as reopened:
                reopened_status = reopened.status_code
                if reopened_status == 200:
                    gate.opened.set()
                    ended = any(message.event == "end" for message in sse_messages(reopened))
            if reopened_status != 429 or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        for client in clients:
            client.close()
    assert statuses == [200, 200]
    assert refused.status_code == 429 and refused.json()["error"] == "too_many_streams"
    assert refused.json()["detail"].startswith(detail)
    assert refused.headers["retry-after"] == "5"
    assert reopened_status == 200  # closed streams free their slots
    assert ended


def test_an_abort_leaves_no_unretrieved_plan_error_in_the_log(
    serve: ServeFn, brains: BrainScripts, server_log: LogRecords
) -> None:
    gate = brains.hold()
    with serve() as api:
        run_id = api.send_held("c1", "hold on", gate)
        api.http.post(f"/v1/runs/{run_id}/abort", json={})
        run = api.wait_for(run_id)
        gate.opened.set()  # the plan's thread ends now, with PlanCancelled
        wait_until(lambda: all(t.name != "tf_plan" for t in threading.enumerate()),
                   PATIENCE_S, "the plan's thread ending")
        # a round trip through the server's loop: it has run the callback that settles
        # the plan's future, queued before the thread ended
        assert api.http.get(f"/v1/runs/{run_id}").status_code == 200
        gc.collect()
    assert run["status"] == "aborted"
    assert "never retrieved" not in server_log.text()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's script")
def test_the_page_gives_new_conversations_128_random_bits() -> None:
    script = resources.files("dcbrain.server").joinpath("static", "app.js").read_text()
    function = re.search(r"^function newConversationId\(\) \{\n.*?^\}\n", script,
                         re.MULTILINE | re.DOTALL)
    assert function is not None, "app.js has no newConversationId()"
    program = function.group(0) + (
        "console.log(JSON.stringify(Array.from({length: 50}, newConversationId)));")
    done = subprocess.run(["node", "-e", program], capture_output=True, text=True,
                          timeout=PATIENCE_S)
    assert done.returncode == 0, done.stderr
    ids = json.loads(done.stdout)
    assert all(re.fullmatch(r"c-[0-9a-f]{32}", cid) for cid in ids)
    assert len(set(ids)) == 50
    assert "Date.now()" not in function.group(0)
