"""The web page in a real headless Chromium against a real server.

Each server is the real `create_app` under uvicorn on 127.0.0.1, over an index
built from the bundled example corpus (or, for the script-injection test, from
a hostile Markdown file written here). The browser is Debian's Chromium driven
by Playwright's sync API; the module skips when it is not installed.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from groundqa.models import REFUSAL
from tests.conftest import REGPACK, copy_index, widen_the_band

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        f"the browser tests need Chromium at {CHROMIUM} (apt-get install chromium)",
        allow_module_level=True,
    )
pytest.importorskip(
    "fastapi", reason="the web page tests need the serve extra: pip install -e '.[serve]'"
)
pytest.importorskip(
    "uvicorn", reason="the web page tests need the serve extra: pip install -e '.[serve]'"
)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the web page tests need playwright: pip install -e '.[dev]'"
)

import uvicorn  # noqa: E402

from groundqa.engine import Engine  # noqa: E402
from groundqa.generate import GeneratorOptions  # noqa: E402
from groundqa.ingestion import ingest  # noqa: E402
from groundqa.serve import ServeSettings, create_app  # noqa: E402

expect = sync_api.expect

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

TREE_QUESTION = "What trunk circumference makes a tree protected in Fennick City?"
OFF_TOPIC_QUESTION = "Who won the 1994 World Cup?"
TOKEN = "s3cret-test-token"

HOSTILE_GUIDE = """---
area: Gull Harbour
category: transport
---
# Gull Harbour guide

Gull Harbour is a fishing village with a stone pier.

## Ferries

The ferry to Skerry Island leaves the stone pier every hour from 7am, and the crossing takes 20 minutes. <script>window.__pwned=1</script> Tickets cost 6 pounds. <img src=x onerror="window.__pwned=1"> The last ferry back leaves Skerry Island at 6pm.

## Walks

A cliff path runs north from the pier to the lighthouse, two miles each way.
"""


def _normalise(text: str) -> str:
    return " ".join(text.split())


@contextmanager
def _serve(engine: Engine, settings: ServeSettings) -> Iterator[str]:
    """The real app under uvicorn on a free 127.0.0.1 port, in a background thread."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(engine, settings), log_level="warning", ws="none", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 15
    while True:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"the test server at {base} did not come up")
        time.sleep(0.05)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def regpack_engine(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Engine:
    index = tmp_path_factory.mktemp("web") / "index"
    copy_index(regpack_build, index)
    return Engine.open(index)


@pytest.fixture(scope="module")
def base_url(regpack_engine: Engine) -> Iterator[str]:
    with _serve(regpack_engine, ServeSettings()) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1000, "height": 700})
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield tab
    finally:
        context.close()
    assert not errors, f"the page raised: {errors}"


def _ask(page: Any, question: str) -> dict[str, Any]:
    """Type a question, press Ask and return the /query response body."""
    page.fill("#question", question)
    with page.expect_response("**/query") as response_info:
        page.click("#ask")
    response = response_info.value
    assert response.ok, response.text()
    body: dict[str, Any] = response.json()
    expect(page.locator("#ask")).to_be_enabled()
    return body


def _open(page: Any, base: str) -> None:
    page.goto(base + "/")
    # The facet selects are built from /health: wait for them.
    expect(page.locator("#filters select").first).to_be_attached()


def test_answer_has_markers_that_lead_to_the_highlighted_passage(
    page: Any, base_url: str, tmp_path: Path
) -> None:
    _open(page, base_url)
    body = _ask(page, TREE_QUESTION)
    assert not body["refused"] and body["citations"]

    answer = page.locator("#answer")
    expect(answer).to_be_visible()
    expect(answer).to_contain_text("1.0 metre")
    expect(page.locator("#refusal")).to_be_hidden()
    markers = answer.locator(".citation-marker")
    assert markers.count() >= 1
    expect(markers.first).to_have_text(re.compile(r"^\[\d+\]$"))
    expect(page.get_by_test_id("result-meta")).to_contain_text(
        re.compile(
            r"confident: confidence \d+% \(default gate, confident from \d+%, cautious from \d+%\)"
        )
    )
    expect(page.get_by_test_id("result-meta")).to_contain_text("timings:")
    page.screenshot(path=str(tmp_path / "answer.png"), full_page=True)

    n = int(markers.first.get_attribute("data-n") or "0")
    citation = next(c for c in body["citations"] if c["n"] == n)
    markers.first.click()

    card = page.locator(f"#citations .passage[data-chunk-id='{citation['chunk_id']}']").first
    expect(card).to_be_focused()
    expect(card).to_be_in_viewport()
    # Scrolled so the card starts at the top of the viewport (the scroll may be smooth).
    page.wait_for_function(
        "el => { const top = el.getBoundingClientRect().top; return top >= 0 && top < 48; }",
        arg=card.element_handle(),
    )
    expect(card).to_contain_text(citation["section"])
    expect(card).to_contain_text(citation["section_id"])
    marks = card.locator("mark")
    assert marks.count() >= 1
    snippet = _normalise(citation["snippet"])
    for text in marks.all_inner_texts():
        assert _normalise(text) and _normalise(text) in snippet
    page.screenshot(path=str(tmp_path / "citation.png"))


def test_out_of_scope_question_shows_the_refusal_and_no_citations(
    page: Any, base_url: str, tmp_path: Path
) -> None:
    _open(page, base_url)
    _ask(page, TREE_QUESTION)  # an answer first, so the refusal has to replace it
    body = _ask(page, OFF_TOPIC_QUESTION)
    assert body["refused"]

    refusal = page.locator("#refusal")
    expect(refusal).to_be_visible()
    expect(refusal).to_have_attribute("role", "status")
    expect(refusal.locator(".refusal-text")).to_have_text(REFUSAL)
    assert body["refused_by"] == "gate"
    expect(refusal.locator(".refusal-by")).to_contain_text("Refused by the relevance gate")
    expect(page.locator("#answer")).to_be_hidden()
    expect(page.locator("#citations .passage")).to_have_count(0)
    expect(page.locator(".citation-marker")).to_have_count(0)
    expect(page.locator("#citations-section")).to_be_hidden()
    page.screenshot(path=str(tmp_path / "refusal.png"), full_page=True)


def test_a_cautious_answer_is_shown_as_the_closest_passage(
    page: Any, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    index = tmp_path_factory.mktemp("web-cautious") / "index"
    ingest([REGPACK], index, dense=None)
    widen_the_band(index)
    with _serve(Engine.open(index), ServeSettings()) as base:
        _open(page, base)
        body = _ask(page, TREE_QUESTION)
        assert body["outcome"] == "cautious" and body["citations"]
        answer = page.locator("#answer")
        expect(answer.locator(".answer-heading")).to_have_text("Closest passage")
        expect(page.get_by_test_id("caution")).to_have_text(
            "The closest passage, which may not answer this:"
        )
        expect(answer).to_contain_text("1.0 metre")
        expect(page.locator("#citations .passage").first).to_be_visible()
        expect(page.get_by_test_id("result-meta")).to_contain_text(
            re.compile(
                r"cautious: confidence \d+% \(calibrated, confident from 100%, cautious from 0%\)"
            )
        )
        page.screenshot(path=str(tmp_path / "cautious.png"), full_page=True)
        # a refusal after it leaves no caution behind
        _ask(page, "Who won the 1994 World Cup?")
        expect(page.get_by_test_id("caution")).to_have_count(0)


def test_a_place_scopes_the_request_and_the_passages(page: Any, base_url: str) -> None:
    _open(page, base_url)
    question = "What permit is needed to clear native vegetation?"
    unscoped = _ask(page, question)
    assert {p["metadata"].get("state") for p in unscoped["passages"]} - {None, "Westhaven"}

    state = page.locator("#filter-state")
    expect(page.locator("label[for='filter-state']")).to_have_text("state")
    options = state.locator("option").all_inner_texts()
    assert options[0] == "any" and {"Westhaven", "Northmere", "Drayland"} <= set(options)
    state.select_option("Westhaven")

    page.fill("#question", question)
    with page.expect_request("**/query") as request_info:
        page.click("#ask")
    sent = request_info.value.post_data_json
    # A place is where the asker is: sent as scope, so national rules still apply.
    assert sent["scope"] == {"state": "Westhaven"} and sent["filters"] == {}
    scoped = request_info.value.response().json()
    expect(page.locator("#ask")).to_be_enabled()
    assert scoped["passages"]
    states = {p["metadata"].get("state") for p in scoped["passages"]}
    assert states <= {"Westhaven", None} and "Westhaven" in states
    assert all(p["metadata"].get("area") is None for p in scoped["passages"])

    cards = page.locator(".passage")
    assert cards.count() >= 1
    for chip in cards.locator(".chip[data-facet='state']").all_text_contents():
        assert chip == "state: Westhaven"


def test_a_non_place_facet_filters_the_request(page: Any, base_url: str) -> None:
    _open(page, base_url)
    page.locator("#filter-category").select_option("vegetation")
    page.fill("#question", "What permit is needed to clear native vegetation?")
    with page.expect_request("**/query") as request_info:
        page.click("#ask")
    assert request_info.value.post_data_json["filters"] == {"category": "vegetation"}
    filtered = request_info.value.response().json()
    assert filtered["passages"]
    assert all(p["metadata"].get("category") == "vegetation" for p in filtered["passages"])


def test_a_citation_shows_its_clause(page: Any, base_url: str) -> None:
    _open(page, base_url)
    data = _ask(page, TREE_QUESTION)
    clauses = [c["clause"] for c in data["citations"] if c.get("clause")]
    assert clauses, data["citations"]
    expect(page.locator("#citations .clause").first).to_have_text(clauses[0])


def test_keyboard_only_asks_and_follows_a_citation(page: Any, base_url: str) -> None:
    _open(page, base_url)
    page.keyboard.press("Tab")
    expect(page.locator("#question")).to_be_focused()
    page.keyboard.type(TREE_QUESTION)
    with page.expect_response("**/query"):
        page.keyboard.press("Enter")
    marker = page.locator("#answer .citation-marker").first
    expect(marker).to_be_visible()
    # Tab from the question box reaches the marker (through the form controls).
    for _ in range(20):
        page.keyboard.press("Tab")
        if marker.evaluate("el => el === document.activeElement"):
            break
    expect(marker).to_be_focused()
    page.keyboard.press("Enter")
    card = page.locator(f"#cite-{marker.get_attribute('data-n')}")
    expect(card).to_be_focused()
    expect(card.locator("mark").first).to_be_visible()


def test_phone_width_has_no_horizontal_scroll(browser: Any, base_url: str, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 740})
    tab = context.new_page()
    try:
        _open(tab, base_url)
        overflow = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        assert tab.evaluate(overflow) <= 0
        _ask(tab, TREE_QUESTION)
        tab.locator("#passages-section > summary").click()
        expect(tab.locator("#passages .passage").first).to_be_visible()
        assert tab.evaluate("document.documentElement.clientWidth") == 375
        assert tab.evaluate(overflow) <= 0
        tab.screenshot(path=str(tmp_path / "phone-answer.png"), full_page=True)
        _ask(tab, OFF_TOPIC_QUESTION)
        assert tab.evaluate(overflow) <= 0
    finally:
        context.close()


def test_document_text_cannot_run_script(
    page: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "harbour.md").write_text(HOSTILE_GUIDE, encoding="utf-8")
    ingest([corpus], tmp_path / "index")
    with _serve(Engine.open(tmp_path / "index"), ServeSettings()) as base:
        _open(page, base)
        body = _ask(page, "When does the ferry to Skerry Island leave?")
        assert not body["refused"]
        assert "<script>" in body["answer"] and "onerror" in body["passages"][0]["text"]
        expect(page.locator("#citations .passage").first).to_be_visible()
        page.locator("#answer .citation-marker").first.click()
        page.wait_for_timeout(200)  # time enough for an injected onerror to have fired

        assert page.evaluate("typeof window.__pwned") == "undefined"
        expect(page.locator("#answer")).to_contain_text("<script>window.__pwned=1</script>")
        expect(page.locator("#citations .passage").first).to_contain_text(
            '<img src=x onerror="window.__pwned=1">'
        )
        expect(page.get_by_text("<script>", exact=False).first).to_be_visible()
        expect(page.locator("#result script, #result img")).to_have_count(0)


def test_token_field_and_api_errors(browser: Any, regpack_engine: Engine) -> None:
    with _serve(regpack_engine, ServeSettings(token=TOKEN)) as base:
        context = browser.new_context()
        tab = context.new_page()
        try:
            _open(tab, base)
            expect(tab.locator("#token")).to_be_visible()
            expect(tab.locator("label[for='token']")).to_be_visible()

            tab.fill("#question", TREE_QUESTION)
            with tab.expect_response("**/query") as response_info:
                tab.click("#ask")
            assert response_info.value.status == 401
            alert = tab.get_by_role("alert")
            expect(alert).to_be_visible()
            message = json.loads(response_info.value.text())["error"]["message"]
            expect(alert).to_contain_text(message)

            tab.fill("#token", TOKEN)
            with tab.expect_request("**/query") as request_info:
                tab.click("#ask")
            assert request_info.value.headers["authorization"] == f"Bearer {TOKEN}"
            expect(tab.locator("#answer .citation-marker").first).to_be_visible()
            expect(alert).to_be_hidden()
            assert tab.evaluate("sessionStorage.getItem('groundqa.token')") == TOKEN
        finally:
            context.close()


def test_a_generator_that_fails_shows_an_error_not_an_empty_answer(
    browser: Any, regpack_engine: Engine
) -> None:
    """The server's generator is a model server that is not there: /query answers 502, and
    the page says what failed instead of showing an empty answer."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    settings = ServeSettings(
        generator="openai:m", generator_options=GeneratorOptions(base_url=dead, timeout_s=2)
    )
    with _serve(regpack_engine, settings) as base:
        context = browser.new_context()
        tab = context.new_page()
        try:
            _open(tab, base)
            tab.fill("#question", TREE_QUESTION)
            with tab.expect_response("**/query") as response_info:
                tab.click("#ask")
            assert response_info.value.status == 502
            alert = tab.get_by_role("alert")
            expect(alert).to_be_visible()
            expect(alert).to_contain_text("could not be generated by openai:m")
            expect(alert).to_contain_text("(generation)")
            expect(tab.locator("#ask")).to_be_enabled()
        finally:
            context.close()


def test_auto_detect_place_sends_auto_location_and_shows_the_scope(
    page: Any, base_url: str
) -> None:
    _open(page, base_url)
    expect(page.get_by_label("auto-detect place")).not_to_be_checked()
    page.get_by_label("auto-detect place").check()
    page.get_by_label("passages (k)").fill("3")
    page.fill("#question", "Do I need a permit to prune a tree in Fennick City?")
    with page.expect_request("**/query") as request_info:
        page.keyboard.press("Enter")
    sent = request_info.value.post_data_json
    assert sent["auto_location"] is True and sent["k"] == 3 and sent["filters"] == {}
    body = request_info.value.response().json()
    assert body["scope"].get("area") == ["Fennick City"]
    assert len(body["passages"]) <= 3
    expect(page.get_by_test_id("result-meta")).to_contain_text("scope: area Fennick City")


def test_a_follow_up_is_sent_with_the_conversation_and_shows_how_it_was_read(
    page: Any, base_url: str, tmp_path: Path
) -> None:
    _open(page, base_url)
    expect(page.get_by_test_id("conversation")).to_be_hidden()
    first = _ask(page, "What is the turbine setback from a dwelling in Northmere?")
    assert first["standalone_question"] is None
    expect(page.get_by_test_id("standalone")).to_be_hidden()
    expect(page.get_by_test_id("conversation")).to_be_visible()

    page.fill("#question", "And from a public road?")
    with page.expect_request("**/query") as request_info:
        page.click("#ask")
    sent = json.loads(request_info.value.post_data or "{}")
    assert [t["role"] for t in sent["history"]] == ["user", "assistant"]
    assert sent["history"][0]["content"].startswith("What is the turbine setback")
    standalone = page.get_by_test_id("standalone")
    expect(standalone).to_be_visible()
    expect(standalone).to_contain_text("Read as: And from a public road (")
    page.screenshot(path=str(tmp_path / "followup.png"), full_page=True)

    page.click("#new-conversation")
    expect(page.get_by_test_id("conversation")).to_be_hidden()
    page.fill("#question", "And from a public road?")
    with page.expect_request("**/query") as request_info:
        page.click("#ask")
    assert json.loads(request_info.value.post_data or "{}")["history"] == []
    expect(page.locator("#ask")).to_be_enabled()
    expect(standalone).to_be_hidden()
