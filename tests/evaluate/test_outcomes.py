"""Three outcomes, shown as such wherever an answer goes: the engine, `ask`, `eval`, the
HTTP API, the chat route and MCP.

Each test runs over a real BM25 index of the example corpus whose gate has a cautious
band from 0 to 1 (`widen_the_band`), so every answer the reader finds is cautious and a
question it finds nothing for is still refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from anyio.from_thread import start_blocking_portal
from click.testing import CliRunner

from groundqa.cli import main
from groundqa.engine import Engine
from groundqa.evaluate import evaluate_probes, load_probes
from groundqa.ingestion import ingest
from groundqa.models import CAUTION, REFUSAL, Answer
from groundqa.serve import ServeSettings
from tests.conftest import REGPACK, REGPACK_PROBES, widen_the_band
from tests.mcp.test_mcp import Connection, stdio_session, text_of
from tests.serve.test_api import NEER, OFF_TOPIC, live_server

CAUTION_LINE = f"({CAUTION}.)"


@pytest.fixture(scope="module")
def banded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("outcomes") / "index"
    ingest([REGPACK], index, dense=None)
    widen_the_band(index)
    return index


@pytest.fixture(scope="module")
def engine(banded: Path) -> Engine:
    return Engine.open(banded)


@pytest.fixture(scope="module")
def url(engine: Engine) -> Iterator[str]:
    with live_server(engine, ServeSettings(cache="off")) as base:
        yield base


def test_an_answer_under_the_threshold_and_over_the_floor_is_cautious(engine: Engine) -> None:
    answer = engine.ask(NEER)
    assert answer.outcome == "cautious" and answer.cautious and not answer.refused
    assert answer.citations, "a cautious answer still cites the passage it quotes"
    assert answer.gate.outcome == "cautious" and answer.gate.floor == 0.0
    assert "the closest passage, which may not answer this" in answer.gate.reason
    text = answer.with_sources()
    assert text.startswith(answer.answer) and CAUTION_LINE in text.split("Sources:")[0]
    # the outcome is derived, so a stored answer reads back the same
    again = Answer.from_dict(json.loads(json.dumps(answer.to_dict())))
    assert again.outcome == "cautious" and again.to_dict()["outcome"] == "cautious"


def test_a_question_the_reader_finds_nothing_for_is_still_refused(engine: Engine) -> None:
    answer = engine.ask(OFF_TOPIC)
    assert answer.outcome == "refused" and answer.refused and not answer.citations
    assert answer.with_sources() == REFUSAL


def test_ask_says_the_passage_may_not_answer(banded: Path) -> None:
    result = CliRunner().invoke(main, ["ask", NEER, "--index", str(banded)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"{CAUTION}:"
    assert any(line.startswith("cautious: confidence ") for line in lines)
    assert "confident from 1.00, cautious from 0.00" in result.stdout


def test_eval_counts_each_outcome(engine: Engine) -> None:
    probes = load_probes(REGPACK_PROBES)
    report = evaluate_probes(engine, probes)
    m = report.metrics
    assert m["confident_answerable"] == 0.0 and m["confident_near_miss"] == 0.0
    assert m["confident_out_of_scope"] == 0.0
    assert m["cautious_answerable"] > 0.9
    for kind, refused in (("answerable", "false_refusal"), ("near_miss", "refused_near_miss")):
        # every question is refused, cautious or confident, and the refusal keeps its meaning
        assert m[f"cautious_{kind}"] + m[f"confident_{kind}"] + m[refused] == pytest.approx(1.0)
    assert {r.outcome for r in report.results} <= {"cautious", "refused"}
    assert all(r.to_dict()["outcome"] == r.outcome for r in report.results)


def test_the_api_and_the_chat_route_say_so(url: str) -> None:
    body = httpx.post(f"{url}/query", json={"question": NEER}, timeout=60).json()
    assert body["outcome"] == "cautious" and not body["refused"] and body["citations"]
    assert body["gate"]["outcome"] == "cautious" and body["gate"]["floor"] == 0.0
    refused = httpx.post(f"{url}/query", json={"question": OFF_TOPIC}, timeout=60).json()
    assert refused["outcome"] == "refused"

    chat = {"model": "groundqa", "messages": [{"role": "user", "content": NEER}]}
    reply = httpx.post(f"{url}/v1/chat/completions", json=chat, timeout=60).json()
    content = reply["choices"][0]["message"]["content"]
    assert content.startswith(body["answer"])
    assert CAUTION_LINE in content.split("\n\nSources:\n")[0]
    assert reply["groundqa"]["outcome"] == "cautious"
    # streamed, the same content arrives, caution line and all
    streamed: list[str] = []
    last: dict[str, Any] = {}
    with httpx.stream(
        "POST", f"{url}/v1/chat/completions", json={**chat, "stream": True}, timeout=60
    ) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunk = json.loads(line.removeprefix("data: "))
                if chunk.get("choices"):
                    streamed.append(chunk["choices"][0]["delta"].get("content") or "")
                    last = chunk
    assert "".join(streamed) == content
    assert last["groundqa"]["outcome"] == "cautious"


def test_mcp_gives_the_outcome_and_the_caution_line(banded: Path, tmp_path: Path) -> None:
    stray: list[Exception] = []
    with (
        (tmp_path / "stderr.txt").open("w", encoding="utf-8") as errlog,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(stdio_session(banded, errlog, stray)) as session,
    ):
        mcp = Connection(portal, session, stray)
        result = mcp.call("ask", question=NEER)
        data = result.structured_content
        assert data is not None and data["outcome"] == "cautious" and not data["refused"]
        assert CAUTION_LINE in text_of(result).split("Sources:")[0]
        refused = mcp.call("ask", question=OFF_TOPIC).structured_content
        assert refused is not None and refused["outcome"] == "refused"
    assert not stray
