"""The API over real HTTP: a message starts a run, its events stream live and replay."""

from __future__ import annotations

from support.server_app import (
    FIRST_PLAN,
    REVISED_PLAN,
    SUGGESTION,
    BrainScripts,
    ServeFn,
    direct_brain,
    replanning_brain,
)


def test_a_message_starts_a_run_whose_events_tell_the_whole_story(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.then(replanning_brain)
    with serve() as api:
        run_id = api.send("trip-1", "What is 2+3+1?")
        stream = api.stream(run_id)

    types = [event["type"] for event in stream.events]
    assert types[0] == "run_started" and types[-1] == "final"
    assert [event["seq"] for event in stream.events] == list(range(len(types)))
    assert stream.ids == [str(seq) for seq in range(len(types))]
    assert all(event["run_id"] == run_id for event in stream.events)
    states = [e["dest"] for e in stream.events if e["type"] == "state_changed"]
    assert states == ["init", "planning", "running", "planning", "running", "succeeded"]
    [created] = [e for e in stream.events if e["type"] == "plan_created"]
    [revised] = [e for e in stream.events if e["type"] == "plan_revised"]
    assert created["plan"] == FIRST_PLAN and revised["plan"] == REVISED_PLAN
    assert revised["reason"] == SUGGESTION
    assert "-total = add(a=2, b=2)\n" in revised["diff"]["unified"]
    assert [c["name"] for c in revised["diff"]["removed"]] == ["summarize"]
    tools = [(e["type"], e["name"]) for e in stream.events
             if e["type"].startswith("call_") and e["kind"] == "tool"]
    assert tools[:2] == [("call_started", "add"), ("call_finished", "add")]
    assert stream.events[-1]["final_result"] == 6
    assert stream.end == {"run_id": run_id, "status": "succeeded"}


def test_the_run_reports_its_status_and_result(serve: ServeFn, brains: BrainScripts) -> None:
    brains.then(replanning_brain)
    with serve() as api:
        run_id = api.send("trip-1", "What is 2+3+1?")
        run = api.wait_for(run_id)
    assert (run["status"], run["reason"], run["conversation_id"]) == (
        "succeeded", "validated", "trip-1")
    assert run["question"] == "What is 2+3+1?"
    assert run["result"]["final_result"] == 6
    assert run["result"]["plans"] == [FIRST_PLAN, REVISED_PLAN]
    assert run["result"]["run_id"] == run_id
    assert run["result"]["usage"]["total_tokens"] > 0
    assert run["event_count"] > 10


def test_a_finished_run_replays_and_resumes_after_the_last_event_id(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.then(replanning_brain)
    with serve() as api:
        run_id = api.send("c1", "What is 2+3+1?")
        whole = api.stream(run_id)
        again = api.stream(run_id)
        resumed = api.stream(run_id, last_event_id=4)
        by_query = api.http.get(f"/v1/runs/{run_id}/events", params={"after": "4"})
        past_the_end = api.stream(run_id, last_event_id=len(whole.events) - 1)
    assert again.events == whole.events
    assert resumed.events == whole.events[5:]
    assert resumed.ids[0] == "5"
    assert '"seq":5' in by_query.text and '"seq":4,' not in by_query.text
    assert past_the_end.events == [] and past_the_end.end is not None
    assert past_the_end.end["status"] == "succeeded"


def test_a_reader_that_reconnects_mid_run_gets_every_event_exactly_once(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.then(replanning_brain)
    with serve() as api:
        run_id = api.send("c1", "What is 2+3+1?")
        first = api.stream(run_id, until=lambda e: e["type"] == "plan_created")
        last_seen = first.events[-1]["seq"]
        rest = api.stream(run_id, last_event_id=last_seen)
        whole = api.stream(run_id)
    assert first.events + rest.events == whole.events
    assert rest.end is not None and rest.end["status"] == "succeeded"


def test_the_conversation_holds_the_question_and_the_answer(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.then(lambda memory: direct_brain(memory, "Paris."))
    brains.then(lambda memory: direct_brain(memory, "About 2.1 million."))
    with serve(list_conversations=True) as api:
        first = api.send("geo", "Capital of France?")
        api.wait_for(first)
        second = api.send("geo", "How many people live there?")
        api.wait_for(second)
        conversation = api.http.get("/v1/conversations/geo").json()
        listing = api.http.get("/v1/conversations").json()

    messages = [(m["role"], m["content"]) for m in conversation["messages"]]
    assert messages == [("user", "Capital of France?"), ("assistant", "Paris."),
                        ("user", "How many people live there?"),
                        ("assistant", "About 2.1 million.")]
    assert conversation["messages"][1]["status"] == "succeeded"
    # An answer names the server's run it came from, the id the API knows it by.
    assert [m.get("run_id") for m in conversation["messages"]] == [None, first, None, second]
    assert [run["run_id"] for run in conversation["runs"]] == [second, first]
    assert listing["conversations"] == [
        {"conversation_id": "geo", "first_question": "Capital of France?",
         "last_question": "How many people live there?",
         "last_status": "succeeded", "updated_at": listing["conversations"][0]["updated_at"],
         "runs": 2}
    ]


def test_runs_of_different_conversations_are_listed_newest_first(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.always(lambda memory: direct_brain(memory, "ok"))
    with serve(list_conversations=True) as api:
        for cid in ("alpha", "beta", "gamma"):
            api.wait_for(api.send(cid, f"hello {cid}"))
        listing = api.http.get("/v1/conversations").json()["conversations"]
    assert [c["conversation_id"] for c in listing] == ["gamma", "beta", "alpha"]


def test_every_run_id_in_a_conversation_is_one_the_api_knows(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.then(replanning_brain)
    brains.then(lambda memory: direct_brain(memory, "Paris."))
    with serve() as api:
        first = api.send("ids", "What is 2+3+1?")
        api.wait_for(first)
        second = api.send("ids", "Capital of France?")
        api.wait_for(second)
        conversation = api.http.get("/v1/conversations/ids").json()
        answers = [m for m in conversation["messages"] if m["role"] == "assistant"]
        looked_up = [api.http.get(f"/v1/runs/{m['run_id']}") for m in answers]
    assert [m["run_id"] for m in answers] == [first, second]
    assert [r.status_code for r in looked_up] == [200, 200]
    assert [r.json()["result"]["final_result"] for r in looked_up] == [6, "Paris."]


def test_the_web_page_and_its_assets_are_served(serve: ServeFn) -> None:
    with serve() as api:
        page = api.http.get("/")
        script = api.http.get("/static/app.js")
        style = api.http.get("/static/style.css")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script src="/static/app.js"' in page.text
    assert "EventSource" in script.text
    assert style.status_code == 200 and "text/css" in style.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"


def test_a_validated_result_says_who_validated_it(serve: ServeFn, brains: BrainScripts) -> None:
    brains.then(replanning_brain)
    brains.then(lambda memory: direct_brain(memory, "Paris."))
    with serve() as api:
        validated = api.wait_for(api.send("who", "What is 2+3+1?"))
        direct = api.wait_for(api.send("who", "Capital of France?"))
    assert validated["result"]["reason"] == "validated"
    assert validated["result"]["validated_by"] == {"model": "scripted", "weak": False}
    assert direct["result"]["reason"] == "direct_answer"
    assert "validated_by" not in direct["result"]  # nobody judged a direct answer
