"""The web page in a real browser (Debian's chromium driven by Playwright).

A message typed into the page starts a run; the page shows the plan (growing while a
streaming planner writes it), the revision as a
diff (removed lines struck through, added lines highlighted), the parallel calls side by
side, the state machine and the final answer, all from the live event stream. The server
runs with its defaults, so it lists no conversations: the page lists the ones it started.
"""

from __future__ import annotations

import itertools
import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dcbrain import Chain, OpenAILLM, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.llm.fake_server import ScriptedOpenAIServer
from dcbrain.memory import Memory
from support.brain_scripts import add, plan, verdict
from support.server_app import (
    PATIENCE_S,
    TRIP_ANSWER,
    BrainScripts,
    ServeFn,
    direct_brain,
    stuck_brain,
    trip_brain,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() or shutil.which("chromium") is None,
    reason="browser test needs Debian's chromium at /usr/bin/chromium "
    "(apt-get install -y chromium)",
)

playwright_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright package")


def test_the_page_shows_the_plan_its_revision_diff_the_calls_and_the_answer(
    serve: ServeFn, brains: BrainScripts, tmp_path: Path
) -> None:
    brains.then(trip_brain)
    brains.then(lambda memory: direct_brain(memory, "You are welcome."))
    expect = playwright_api.expect
    with serve() as api, playwright_api.sync_playwright() as playwright:
        assert api.http.get("/v1/conversations").status_code == 404  # listing is off
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1600})
            page.set_default_timeout(PATIENCE_S * 1000)
            console_errors: list[str] = []
            page.on("console", lambda m: console_errors.append(m.text) if m.type == "error"
                    else None)
            page.goto(api.base_url + "/")
            page.fill("#message-input", "How much do 3 nights in Lisbon cost in USD?")
            page.click("#send")

            expect(page.locator("#final-answer")).to_have_text(TRIP_ANSWER)
            expect(page.locator("#final-badge")).to_have_text("succeeded · validated")
            expect(page.locator(".state.active")).to_have_text("succeeded")
            assert page.locator(".state.visited").all_inner_texts() == [
                "init", "planning", "running"]

            plan_lines = page.locator("#plan .code-line .src").all_inner_texts()
            assert plan_lines[1].startswith("nightly, rate = parallel(hotel_price(")
            assert page.locator("#plan .ln").all_inner_texts()[:2] == ["1", "2"]
            assert page.locator("#plan .tok-callable").first.inner_text() == "hotel_price"
            assert page.locator("#plan .tok-comment").count() == 1

            removed = page.locator(".diff-line.del del").all_inner_texts()
            added = page.locator(".diff-line.add ins").all_inner_texts()
            assert "total = nightly * 3" in removed
            assert "total_usd = round(nightly * 3 * rate, 2)" in added
            struck = page.locator(".diff-line.del del").first.evaluate(
                "node => getComputedStyle(node).textDecorationLine")
            assert "line-through" in struck
            added_bg = page.locator(".diff-line.add").first.evaluate(
                "node => getComputedStyle(node).backgroundColor")
            assert added_bg not in ("rgba(0, 0, 0, 0)", "transparent")
            assert "US dollars" in page.locator(".revision-reason").inner_text()
            assert page.locator(".chip.added").all_inner_texts() == [
                "exchange_rate(source='EUR', target='USD')",
                "summarize(text=f'3 nights in Lisbon cost {total_usd} USD')"]

            columns = page.locator(".tl-parallel .tl-column")
            assert columns.count() == 2
            assert columns.nth(0).locator(".tl-name").inner_text() == "hotel_price"
            assert columns.nth(1).locator(".tl-name").inner_text() == "exchange_rate"
            left, right = columns.nth(0).bounding_box(), columns.nth(1).bounding_box()
            assert left is not None and right is not None
            assert right["x"] > left["x"] + left["width"] - 1  # side by side, not stacked
            assert abs(right["y"] - left["y"]) < 1
            # The planner's and the validator's own LLM calls, one per planning and verdict.
            llm_kinds = page.locator(".tl-call.call-llm .kind").all_inner_texts()
            assert [k.lower() for k in llm_kinds] == ["planner", "validator"] * 2
            assert page.locator(".tl-call.done").count() == 8
            assert page.locator("#timeline-meta").inner_text() == "8 calls · 1 reused"

            # The second plan's hotel_price came from the run's call journal: marked, no bar.
            reused = page.locator(".tl-call.reused")
            expect(reused).to_have_count(1)
            assert reused.locator(".tl-name").inner_text() == "hotel_price"
            assert reused.locator(".reused-tag").inner_text().lower() == "reused"
            assert reused.locator(".tl-bar").count() == 0
            assert float(reused.evaluate("node => getComputedStyle(node).opacity")) < 1

            # A click opens a call's arguments and result (not only a tooltip).
            rate = columns.nth(1).locator(".tl-call")
            expect(rate.locator(".tl-body")).to_be_hidden()
            rate.locator("summary").click()
            expect(rate.locator(".tl-body")).to_be_visible()
            values = rate.locator(".tl-value").all_inner_texts()
            assert json.loads(values[0]) == {"source": "EUR", "target": "USD"}
            assert values[1] == "1.08"
            page.locator(".revision").last.screenshot(path=str(tmp_path / "revision-diff.png"))
            page.locator("#timeline").screenshot(path=str(tmp_path / "timeline-reused.png"))

            tokens = page.locator("#tokens-text").inner_text()
            used, limit = (int(part.replace(",", "")) for part in tokens.split(" / "))
            assert 0 < used < limit == 128_000

            messages = page.locator("#messages .bubble")
            expect(messages).to_have_count(2)
            assert messages.nth(1).inner_text() == TRIP_ANSWER
            expect(page.locator(".conversation")).to_have_count(1)
            page.screenshot(path=str(tmp_path / "run.png"), full_page=True)

            # A second message in the same conversation: a new run, shown from the start.
            page.fill("#message-input", "Thanks!")
            page.keyboard.press("Enter")
            expect(page.locator("#final-answer")).to_have_text("You are welcome.")
            expect(page.locator("#final-badge")).to_have_text("succeeded · direct_answer")
            expect(page.locator("#plan")).to_contain_text("No plan yet.")
            expect(page.locator("#messages .bubble")).to_have_count(4)

            # Runs are labelled by their question, the conversation by its first (ids on hover).
            chips = page.locator(".run-chip")
            expect(chips).to_have_count(2)
            assert chips.all_inner_texts() == [
                "How much do 3 nights in Lisbon cost in USD?", "Thanks!"]
            assert page.locator("#run-id").inner_text() == "Thanks!"
            conversation_id = page.locator("#chat-title").get_attribute("data-conversation-id")
            assert conversation_id is not None and conversation_id.startswith("c-")
            expect(page.locator("#chat-title")).to_have_text(
                "How much do 3 nights in Lisbon cost in USD?")
            assert conversation_id in (page.locator("#chat-title").get_attribute("title") or "")

            # The page keeps the conversation it started: still listed after a reload.
            page.goto(api.base_url + "/")
            listed = page.locator(".conversation")
            expect(listed).to_have_count(1)
            expect(listed).to_have_attribute("title", conversation_id)
            expect(listed.locator(".conversation-title")).to_have_text(
                "How much do 3 nights in Lisbon cost in USD?")
            expect(listed.locator(".conversation-question")).to_have_text("Thanks!")
            expect(listed.locator(".dot")).to_have_class("dot status-succeeded")
            listed.click()
            expect(page.locator("#messages .bubble")).to_have_count(4)
            assert console_errors == [], console_errors
        finally:
            browser.close()


def test_the_abort_button_stops_the_run(
    serve: ServeFn, brains: BrainScripts, tmp_path: Path
) -> None:
    """Abort needs application/json (a cross-site form cannot send it): the page sends it."""
    brains.then(stuck_brain)
    expect = playwright_api.expect
    with serve() as api, playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 800, "height": 900})
            page.set_default_timeout(PATIENCE_S * 1000)
            page.goto(api.base_url + "/")
            page.fill("#message-input", "This never gets an answer")
            page.click("#send")
            playwright_api.expect(page.locator("#abort")).to_be_enabled()
            expect(page.locator(".tl-call.call-llm.running")).to_have_count(1)  # the planner
            conversation_id = page.locator("#chat-title").get_attribute("data-conversation-id")
            with page.expect_response(lambda r: r.url.endswith("/abort")) as aborting:
                page.click("#abort")
            assert aborting.value.status == 202  # not 415: the page sends JSON
            (run,) = api.http.get(f"/v1/conversations/{conversation_id}").json()["runs"]
            finished = api.wait_for(run["run_id"])

            # Shown as stopped, not as an answer; the planner's call in flight stopped with it.
            expect(page.locator("#final")).to_have_class("card final stopped")
            expect(page.locator("#final-title")).to_have_text("Stopped")
            expect(page.locator("#final-badge")).to_have_text("aborted · aborted")
            expect(page.locator("#final-answer")).to_have_text("Aborted before answering.")
            planner = page.locator(".tl-call.call-llm")
            expect(planner).to_have_count(1)
            expect(planner).to_have_class("tl-call stopped call-llm")
            expect(planner.locator(".stopped-tag")).to_be_visible()
            expect(page.locator(".tl-stop")).to_have_text("■ aborted")
            expect(page.locator(".run-chip")).to_have_text("This never gets an answer")
            expect(page.locator("#run-id")).to_have_text("This never gets an answer")
            assert page.evaluate("document.documentElement.scrollWidth") <= 800
            page.screenshot(path=str(tmp_path / "aborted.png"), full_page=True)
        finally:
            browser.close()
    assert (finished["status"], finished["reason"]) == ("aborted", "aborted")


def long_named_tools(release: threading.Event) -> list[Callable[..., Any]]:
    """Two tools with long names that wait until ``release`` is set."""

    def fetch_hotel_availability_for_every_district(city: str) -> int:
        """Free hotel rooms across all districts of a city."""
        release.wait(PATIENCE_S)
        return 42

    def convert_currency_with_daily_reference_rates(amount: float, source: str) -> float:
        """An amount converted to US dollars at today's reference rate."""
        release.wait(PATIENCE_S)
        return 127.44

    return [fetch_hotel_availability_for_every_district,
            convert_currency_with_daily_reference_rates]


PARALLEL_PLAN = """\
rooms, usd = parallel(fetch_hotel_availability_for_every_district(city="Lisbon"), \
convert_currency_with_daily_reference_rates(amount=118, source="EUR"))
return summarize(text=f"{rooms} rooms from {usd} USD")"""


def parallel_brain(memory: Memory | None, release: threading.Event) -> DCBrain:
    """A plan of two slow parallel calls, then a chain (the next new-input safe point)."""
    summarize = Chain(name="summarize", description="Summarize a text in one sentence",
                      llm=ScriptedLLM(["42 rooms from 127.44 USD."]),
                      prompt="Summarize: {{ text }}")
    return DCBrain(spec_chains={"summarize": summarize}, default_llm=ScriptedLLM([
        plan(PARALLEL_PLAN), verdict(True)]), tools=long_named_tools(release), memory=memory)


def test_at_800_px_parallel_calls_run_side_by_side_and_a_superseded_run_shows_as_stopped(
    serve: ServeFn, brains: BrainScripts, tmp_path: Path
) -> None:
    release = threading.Event()
    brains.then(lambda memory: parallel_brain(memory, release))
    brains.then(lambda memory: direct_brain(memory, "The cheapest is 95 EUR a night."))
    expect = playwright_api.expect
    with serve() as api, playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 800, "height": 1000})
            page.set_default_timeout(PATIENCE_S * 1000)
            page.goto(api.base_url + "/")
            page.fill("#message-input", "Rooms in Lisbon, priced in USD?")
            page.click("#send")

            # Both branches in flight at once, in two columns, their long names in full.
            running = page.locator(".tl-parallel .tl-call.running")
            expect(running).to_have_count(2)
            columns = page.locator(".tl-parallel .tl-column")
            left, right = columns.nth(0).bounding_box(), columns.nth(1).bounding_box()
            assert left is not None and right is not None
            assert right["x"] > left["x"] + left["width"] - 1 and abs(right["y"] - left["y"]) < 1
            names = page.locator(".tl-parallel .tl-name")
            assert names.all_inner_texts() == [
                "fetch_hotel_availability_for_every_district",
                "convert_currency_with_daily_reference_rates"]
            for index in range(2):
                assert names.nth(index).evaluate(
                    "node => node.scrollWidth <= node.clientWidth"
                    " && node.getBoundingClientRect().right"
                    " <= node.closest('.tl-call').getBoundingClientRect().right")
            assert page.evaluate("document.documentElement.scrollWidth") <= 800
            expect(page.locator("#plan .code-line.current")).to_have_count(1)
            page.screenshot(path=str(tmp_path / "parallel-running.png"), full_page=True)

            # A new message supersedes the run; the calls in flight return, then it stops.
            page.fill("#message-input", "Actually, just the cheapest hotel.")
            with page.expect_response(lambda r: r.url.endswith("/messages")):
                page.keyboard.press("Enter")
            release.set()
            expect(page.locator("#final-answer")).to_have_text("The cheapest is 95 EUR a night.")
            expect(page.locator("#final")).to_have_class("card final")

            chips = page.locator(".run-chip")
            expect(chips).to_have_count(2)
            expect(chips.first).to_have_text("Rooms in Lisbon, priced in USD?")
            chips.first.click()
            expect(page.locator("#final-badge")).to_have_text("aborted · superseded")
            expect(page.locator("#final")).to_have_class("card final stopped")
            expect(page.locator("#final-answer")).to_have_text(
                "Replaced by a newer message: this run stopped before answering.")
            expect(page.locator(".tl-parallel .tl-call")).to_have_count(2)
            expect(page.locator(".tl-stop")).to_have_text("■ aborted · superseded")
            for text in (page.locator("#final").inner_text(),
                         page.locator("#messages").inner_text()):
                assert "new user input" not in text
            bubbles = page.locator("#messages .bubble").all_inner_texts()
            assert bubbles[-1] == "The cheapest is 95 EUR a night."
            assert page.evaluate("document.documentElement.scrollWidth") <= 800
            page.screenshot(path=str(tmp_path / "superseded.png"), full_page=True)
        finally:
            release.set()
            browser.close()


def big_report(topic: str) -> str:
    """A long report on a topic."""
    return "x" * 5000


def test_a_failed_run_is_stopped_and_a_large_result_shows_its_start_and_size(
    serve: ServeFn, brains: BrainScripts, tmp_path: Path
) -> None:
    brains.then(lambda memory: DCBrain(
        default_llm=ScriptedLLM([plan('r = big_report(topic="rain")\nreturn len(r)'),
                                 verdict(False, "count words, not characters")]),
        tools=[big_report], memory=memory, max_iterations=1))
    expect = playwright_api.expect
    with serve() as api, playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.set_default_timeout(PATIENCE_S * 1000)
            page.goto(api.base_url + "/")
            page.fill("#message-input", "How long is the rain report?")
            page.click("#send")
            expect(page.locator("#final")).to_have_attribute("data-status", "failed")
            expect(page.locator("#final")).to_have_class("card final stopped")
            expect(page.locator("#final-title")).to_have_text("Stopped")
            expect(page.locator("#final-answer")).to_have_text(
                "No answer (max_iterations): count words, not characters")
            expect(page.locator("#messages .message.assistant.stopped")).to_have_count(1)

            report = page.locator(".tl-call", has_text="big_report")
            report.locator("summary").click()
            values = report.locator(".tl-value").all_inner_texts()
            assert json.loads(values[0]) == {"topic": "rain"}
            assert values[1].startswith("xxxx") and values[1].endswith("…")
            assert len(values[1]) < 5000
            expect(report.locator(".tl-body")).to_contain_text("truncated: 5,000 characters")
            page.screenshot(path=str(tmp_path / "failed.png"), full_page=True)
        finally:
            browser.close()


def test_the_page_shows_a_pending_approval_and_its_approve_button_resumes_the_run(
    serve: ServeFn, brains: BrainScripts
) -> None:
    from dcbrain.tools import Tool

    paid: list[tuple[str, int]] = []

    def pay(invoice: str, amount: int) -> str:
        """Pay ``amount`` on ``invoice``."""
        paid.append((invoice, amount))
        return f"paid {amount} on {invoice}"

    source = 'total = 40 * 3\nreturn pay(invoice="INV-7", amount=total)'

    def paying(memory: Memory) -> DCBrain:
        return DCBrain(default_llm=ScriptedLLM([plan(source)]),
                       default_validate_llm=ScriptedLLM([verdict(True)]), memory=memory,
                       tools=[Tool(pay, requires_approval=True)], isolation="inprocess")

    brains.then(paying)
    expect = playwright_api.expect
    with serve() as api, playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1200})
            page.set_default_timeout(PATIENCE_S * 1000)
            console_errors: list[str] = []
            page.on("console", lambda m: console_errors.append(m.text) if m.type == "error"
                    else None)
            page.goto(api.base_url + "/")
            page.fill("#message-input", "Pay the open invoice")
            page.click("#send")
            card = page.locator("#approvals")
            expect(card).to_be_visible()
            expect(page.locator("#approvals-meta")).to_have_text("1 waiting")
            item = card.locator(".approval")
            expect(item.locator(".approval-call")).to_have_text(
                'pay({"invoice":"INV-7","amount":120})')
            expect(item.locator(".approval-line code")).to_have_text(
                'return pay(invoice="INV-7", amount=total)')
            expect(item.locator(".approval-line .muted")).to_have_text("line 2: ")
            assert "requires approval" in item.locator(".approval-why").inner_text()
            assert paid == []
            item.get_by_role("button", name="Approve").click()
            expect(page.locator("#final-answer")).to_have_text("paid 120 on INV-7")
            expect(card).to_be_hidden()
            timeline = page.locator("#timeline").inner_text().lower()  # phases: upper case
            assert "waiting for approval: pay() at line 2" in timeline
            assert "✓ approved pay() by user" in timeline
            assert console_errors == []
        finally:
            browser.close()
    assert paid == [("INV-7", 120)]


STREAMED_PLAN = "a = add(a=1, b=2)\nb = add(a=a, b=3)\nc = add(a=b, b=4)\nreturn c"
# Every change of the plan card, as the page shows it: written or whole, its lines.
RECORD_PLAN_CARD = """() => {
  window.planCard = [];
  const box = document.getElementById("plan");
  new MutationObserver(() => window.planCard.push({
    writing: box.classList.contains("writing"),
    lines: [...box.querySelectorAll(".code-line .src")].map((line) => line.innerText),
  })).observe(box, { childList: true, subtree: true, characterData: true, attributes: true });
}"""


def test_the_page_shows_the_plan_growing_while_the_planner_writes_it(
    serve: ServeFn, brains: BrainScripts, tmp_path: Path
) -> None:
    replies = [plan(STREAMED_PLAN), json.dumps(verdict(True))]
    with ScriptedOpenAIServer(replies, tokens_per_second=30) as llm_server:

        def streaming_brain(memory: Memory) -> DCBrain:
            llm = OpenAILLM("scripted-model", base_url=llm_server.base_url, api_key="none",
                            max_retries=0)
            return DCBrain(default_llm=llm, tools=[add], memory=memory)

        brains.then(streaming_brain)
        expect = playwright_api.expect
        with serve() as api, playwright_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                 args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 1200})
                page.set_default_timeout(PATIENCE_S * 1000)
                page.goto(api.base_url + "/")
                page.evaluate(RECORD_PLAN_CARD)
                page.fill("#message-input", "What is 1 + 2 + 3 + 4?")
                page.click("#send")
                expect(page.locator("#plan.writing")).to_be_visible()
                expect(page.locator("#plan-meta")).to_have_text("writing · planning 1")
                page.locator("#plan").screenshot(path=str(tmp_path / "plan-writing.png"))
                expect(page.locator("#final-answer")).to_have_text("10")
                expect(page.locator("#plan-meta")).to_have_text("first plan · planning 1")
                snapshots: list[dict[str, Any]] = page.evaluate("window.planCard")
            finally:
                browser.close()
        assert llm_server.requests[0]["stream"] is True
    whole = STREAMED_PLAN.splitlines()
    texts = ["\n".join(shot["lines"]).replace("\u200b", "").rstrip("▍")
             for shot in snapshots if shot["writing"]]
    # The reply's words come first; from its tf_plan fence on, the card shows the plan
    # growing: each state the start of the plan and of the next state.
    body = STREAMED_PLAN + "\n"  # the block's text up to its closing fence
    first = next(i for i, text in enumerate(texts) if text and body.startswith(text))
    growing = texts[first:]
    assert all(body.startswith(text) for text in growing), texts
    assert all(len(a) <= len(b) for a, b in itertools.pairwise(growing)), texts
    assert len({text for text in growing if text.strip() != STREAMED_PLAN}) >= 3, texts
    # ... then the whole plan, no longer being written.
    last_writing = max(i for i, shot in enumerate(snapshots) if shot["writing"])
    assert snapshots[-1]["lines"] == whole
    assert not snapshots[-1]["writing"] and last_writing < len(snapshots) - 1
