"""Auth, limits and bad input: every refusal is a 4xx with a JSON error body."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from support.server_app import PATIENCE_S, BrainScripts, Gate, ServeFn, direct_brain, holding_brain

TOKEN = "s3cret-token"


def test_with_a_token_every_api_call_needs_it(serve: ServeFn, brains: BrainScripts) -> None:
    brains.always(lambda memory: direct_brain(memory, "ok"))
    with serve(token=TOKEN) as api:
        anonymous = httpx.Client(base_url=api.base_url)
        wrong = httpx.Client(base_url=api.base_url, headers={"Authorization": "Bearer nope"})
        run_id = api.send("c1", "hi")
        refused = [
            anonymous.post("/v1/conversations/c1/messages", json={"content": "hi"}),
            anonymous.get("/v1/conversations"),
            anonymous.get("/v1/conversations/c1"),
            anonymous.get(f"/v1/runs/{run_id}"),
            anonymous.get(f"/v1/runs/{run_id}/events"),
            anonymous.post(f"/v1/runs/{run_id}/abort"),
            wrong.get(f"/v1/runs/{run_id}"),
            anonymous.get(f"/v1/runs/{run_id}?access_token={TOKEN}"),  # only the stream takes it
        ]
        stream = anonymous.get(f"/v1/runs/{run_id}/events", params={"access_token": TOKEN})
        page = anonymous.get("/")
        health = anonymous.get("/v1/health")
        allowed = api.wait_for(run_id)
        anonymous.close()
        wrong.close()
    assert [r.status_code for r in refused] == [401] * len(refused)
    assert all(r.json()["error"] == "unauthorized" for r in refused)
    assert refused[0].headers["www-authenticate"].startswith("Bearer")
    assert stream.status_code == 200 and "event: end" in stream.text
    assert page.status_code == 200 and health.status_code == 200
    assert allowed["status"] == "succeeded"


def test_the_token_can_come_from_the_environment(
    serve: ServeFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DCBRAIN_API_TOKEN", TOKEN)
    with serve(list_conversations=True) as api:
        refused = api.http.get("/v1/conversations")
        allowed = api.http.get("/v1/conversations", headers={"Authorization": f"Bearer {TOKEN}"})
    assert refused.status_code == 401 and allowed.status_code == 200


def test_other_host_names_are_refused(serve: ServeFn) -> None:
    with serve(list_conversations=True) as api:
        rebound = api.http.get("/v1/conversations", headers={"Host": "evil.example:8765"})
        local = api.http.get("/v1/conversations", headers={"Host": "localhost:8765"})
    assert rebound.status_code == 400 and rebound.json()["error"] == "invalid_host"
    assert local.status_code == 200


def test_the_host_check_can_be_opened(serve: ServeFn) -> None:
    with serve(allowed_hosts=["*"], list_conversations=True) as api:
        response = api.http.get("/v1/conversations", headers={"Host": "dcbrain.internal"})
    assert response.status_code == 200


@pytest.fixture
def api_small_bodies(serve: ServeFn) -> Iterator[httpx.Client]:
    with serve(max_body_bytes=100) as api:
        yield api.http


def test_bodies_over_the_limit_are_413(api_small_bodies: httpx.Client) -> None:
    http = api_small_bodies
    declared = http.post("/v1/conversations/c1/messages", json={"content": "x" * 200})

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server counts as it reads
        yield b'{"content": "'
        for _ in range(20):
            yield b"x" * 10
        yield b'"}'

    streamed = http.post("/v1/conversations/c1/messages", content=chunks(),
                         headers={"Content-Type": "application/json"})
    assert declared.status_code == 413 and declared.json()["error"] == "body_too_large"
    assert "content-length" not in streamed.request.headers
    assert streamed.status_code == 413 and streamed.json()["error"] == "body_too_large"


@pytest.mark.parametrize(
    ("body", "headers", "status", "error"),
    [
        (b"{not json", {"Content-Type": "application/json"}, 400, "invalid_json"),
        (b"\xff\xfe", {"Content-Type": "application/json"}, 400, "invalid_json"),
        (b'{"content": "hi"}', {"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
        (b'{"content": "hi"}', {}, 415, "unsupported_media_type"),
        (b'["hi"]', {"Content-Type": "application/json"}, 422, "invalid_message"),
        (b'{"content": 3}', {"Content-Type": "application/json"}, 422, "invalid_message"),
        (b'{"content": "   "}', {"Content-Type": "application/json"}, 422, "invalid_message"),
        (b'{"text": "hi"}', {"Content-Type": "application/json"}, 422, "invalid_message"),
    ],
)
def test_bad_messages_are_refused_with_a_json_error(
    serve: ServeFn, brains: BrainScripts, body: bytes, headers: dict[str, str], status: int,
    error: str,
) -> None:
    with serve() as api:
        response = api.http.post("/v1/conversations/c1/messages", content=body, headers=headers)
    assert response.status_code == status
    assert response.json()["error"] == error and response.json()["detail"]
    assert brains.built == 0


def test_unknown_ids_routes_and_methods_are_json_4xx(serve: ServeFn) -> None:
    unknown_run = "0123456789abcdef0123456789abcdef"
    with serve() as api:
        responses = {
            "run": api.http.get(f"/v1/runs/{unknown_run}"),
            "events": api.http.get(f"/v1/runs/{unknown_run}/events"),
            "malformed run id": api.http.get("/v1/runs/..%2F..%2Fetc"),
            "conversation": api.http.get("/v1/conversations/nobody-here"),
            "route": api.http.get("/v1/nothing"),
            "method": api.http.delete("/v1/conversations"),
            "bad conversation id": api.http.post("/v1/conversations/-bad/messages",
                                                 json={"content": "hi"}),
            "bad last event id": api.http.get(f"/v1/runs/{unknown_run}/events",
                                              headers={"Last-Event-ID": "abc"}),
        }
    statuses = {name: (r.status_code, r.json()["error"]) for name, r in responses.items()}
    assert statuses == {
        "run": (404, "not_found"),
        "events": (404, "not_found"),
        "malformed run id": (404, "not_found"),
        "conversation": (404, "not_found"),
        "route": (404, "not_found"),
        "method": (405, "method_not_allowed"),
        "bad conversation id": (400, "invalid_conversation_id"),
        "bad last event id": (400, "invalid_last_event_id"),
    }


def test_a_conversation_id_longer_than_128_characters_is_refused(serve: ServeFn) -> None:
    with serve() as api:
        response = api.http.post(f"/v1/conversations/{'a' * 129}/messages",
                                 json={"content": "hi"})
    assert response.status_code == 400


def test_conversations_are_not_listed_by_default(serve: ServeFn, brains: BrainScripts) -> None:
    brains.always(lambda memory: direct_brain(memory, "ok"))
    with serve() as api:
        api.wait_for(api.send("secret-id-7f3a", "hi"))
        listing = api.http.get("/v1/conversations")
        by_id = api.http.get("/v1/conversations/secret-id-7f3a")
    assert listing.status_code == 404 and listing.json()["error"] == "listing_off"
    assert "secret-id-7f3a" not in listing.text
    assert by_id.status_code == 200 and by_id.json()["conversation_id"] == "secret-id-7f3a"


def test_listing_conversations_is_opt_in(serve: ServeFn, brains: BrainScripts) -> None:
    brains.always(lambda memory: direct_brain(memory, "ok"))
    with serve(list_conversations=True) as api:
        api.wait_for(api.send("listed-1", "hi"))
        listing = api.http.get("/v1/conversations")
    assert listing.status_code == 200
    assert [c["conversation_id"] for c in listing.json()["conversations"]] == ["listed-1"]


def test_runs_beyond_the_cap_get_a_clear_429(serve: ServeFn, brains: BrainScripts) -> None:
    gates = [Gate(), Gate()]
    brains.then(lambda memory: holding_brain(memory, gates[0]))
    brains.then(lambda memory: holding_brain(memory, gates[1]))
    brains.then(lambda memory: direct_brain(memory, "after the cap"))
    with serve(max_concurrent_runs=2, supersede_grace_s=60) as api:
        first, second = api.send("c1", "one"), api.send("c2", "two")
        assert gates[0].entered.wait(PATIENCE_S) and gates[1].entered.wait(PATIENCE_S)
        refused = api.http.post("/v1/conversations/c3/messages", json={"content": "three"})
        health = api.http.get("/v1/health").json()
        # A new message for a conversation that has a run replaces it: never refused.
        replacing = api.http.post("/v1/conversations/c1/messages", json={"content": "one again"})
        for gate in gates:
            gate.opened.set()
        api.wait_for(first)
        api.wait_for(second)
        api.wait_for(replacing.json()["run_id"])
        admitted = api.http.post("/v1/conversations/c3/messages", json={"content": "three"})
        api.wait_for(admitted.json()["run_id"])
    assert refused.status_code == 429 and refused.json()["error"] == "too_many_runs"
    assert "2 runs are already active" in refused.json()["detail"]
    assert refused.headers["retry-after"] == "1"
    assert health == {"ok": True, "active_runs": 2, "max_concurrent_runs": 2,
                      "list_conversations": False, "draining": False}
    assert replacing.status_code == 202 and admitted.status_code == 202


def test_the_429_message_counts_one_run_in_the_singular(
    serve: ServeFn, brains: BrainScripts
) -> None:
    gate = brains.hold()
    with serve(max_concurrent_runs=1) as api:
        first = api.send_held("c1", "one", gate)
        refused = api.http.post("/v1/conversations/c2/messages", json={"content": "two"})
        gate.opened.set()
        api.wait_for(first)
    assert refused.status_code == 429
    assert refused.json()["detail"] == (
        "1 run is already active (the limit); retry when one has finished")
