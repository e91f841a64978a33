"""Message bodies the server cannot take are refused with a 4xx before any run exists."""

from __future__ import annotations

from support.server_app import BrainScripts, ServeFn, direct_brain

JSON = {"Content-Type": "application/json"}


def test_deeply_nested_json_is_a_400_not_a_500(serve: ServeFn, brains: BrainScripts) -> None:
    with serve() as api:
        arrays = api.http.post("/v1/conversations/ok/messages", content=b"[" * 60_000,
                               headers=JSON)
        objects = api.http.post("/v1/conversations/ok/messages",
                                content=b'{"a":' * 10_000 + b"1" + b"}" * 10_000, headers=JSON)
        health = api.http.get("/v1/health")
    for response in (arrays, objects):
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "invalid_json"
        assert "nested" in response.json()["detail"]
    assert health.status_code == 200
    assert brains.built == 0


def test_text_that_is_not_utf8_encodable_is_refused_before_a_run_id_is_handed_out(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.always(lambda memory: direct_brain(memory, "ok"))
    with serve(list_conversations=True) as api:
        surrogate = api.http.post("/v1/conversations/c1/messages",
                                  content=b'{"content": "\\ud800"}', headers=JSON)
        mixed = api.http.post("/v1/conversations/c1/messages",
                              content=b'{"content": "hello \\udfff world"}', headers=JSON)
        # A proper pair is one character (U+1F600) and is fine.
        pair = api.http.post("/v1/conversations/c1/messages",
                             content=b'{"content": "smile \\ud83d\\ude00"}', headers=JSON)
        run = api.wait_for(pair.json()["run_id"])
        listing = api.http.get("/v1/conversations").json()["conversations"]
    for response in (surrogate, mixed):
        assert response.status_code == 422, response.text
        assert response.json()["error"] == "invalid_message"
        assert "UTF-8" in response.json()["detail"]
    assert pair.status_code == 202
    assert run["question"] == "smile \U0001f600" and run["status"] == "succeeded"
    assert [c["runs"] for c in listing] == [1]
    assert brains.built == 1


def test_a_stored_run_id_is_always_reachable(serve: ServeFn, brains: BrainScripts) -> None:
    """Whatever a 202 hands out, GET /v1/runs/<id> finds."""
    brains.always(lambda memory: direct_brain(memory, "ok"))
    with serve() as api:
        for content in ("plain", "ünïcödé ✓", "nul \u0000 inside", "e\u0301"):
            response = api.http.post("/v1/conversations/c2/messages",
                                     json={"content": content})
            if response.status_code == 202:
                run_id = response.json()["run_id"]
                assert api.wait_for(run_id)["question"] == content
            else:
                assert response.status_code == 422, response.text
