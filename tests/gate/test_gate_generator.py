"""A generator that reads and declines is a refusal too, counted apart from the gate's.

The LLM backend is the real Ollama client talking to a local server on 127.0.0.1
that speaks Ollama's /api/chat protocol: it declines one chosen question with the
exact refusal sentence and answers every other one with a cited sentence.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest

from groundqa.engine import Engine
from groundqa.evaluate import evaluate_probes, load_probes
from groundqa.evaluate.calibrate import calibrate
from groundqa.evaluate.probes import Probe
from groundqa.generate import GeneratorOptions
from groundqa.ingestion import ingest
from groundqa.models import REFUSAL
from tests.conftest import REGPACK, REGPACK_PROBES
from tests.fakes import FakeServer, Out, Reply, Seen

GENERATOR = "ollama:reader"
# An answerable probe the default gate lets through (its confidence is well above the cut).
DECLINED = "How much is the infringement notice for a NEER report that is two weeks late?"


def declining_reply(question: str) -> Reply:
    """Ollama /api/chat, non-streaming: the refusal sentence for `question`, else a cited line."""

    def reply(seen: Seen, out: Out) -> None:
        asked = question in json.dumps(seen.body["messages"])
        content = REFUSAL if asked else "The schedule sets the amount [1]."
        out.json(
            {
                "model": seen.body["model"],
                "created_at": "2026-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": content},
                "done": True,
                "done_reason": "stop",
            }
        )

    return reply


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    index = tmp_path_factory.mktemp("gate-generator") / "idx"
    ingest([REGPACK], index, dense=None)
    return Engine.open(index)


def test_eval_counts_a_declining_llm_as_a_generator_refusal(
    engine: Engine, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(declining_reply(DECLINED))
    probes = [
        Probe("declined", DECLINED, ("SCH1-01",)),
        Probe("answered", "When must a NEER report be lodged each year?"),
    ]
    report = evaluate_probes(
        engine,
        probes,
        generator=GENERATOR,
        options=GeneratorOptions(base_url=server.url),
    )
    by_id = {r.probe.id: r for r in report.results}
    assert by_id["declined"].refused and by_id["declined"].refused_by == "generator"
    assert not by_id["answered"].refused
    assert report.metrics["false_refusal"] == 0.5
    assert report.metrics["generator_false_refusal"] == 0.5
    assert report.metrics["gate_false_refusal"] == 0.0
    # The gate passed both, so the reader was asked both questions.
    assert len(server.seen) == 2


def test_calibration_counts_generator_refusals_end_to_end(
    engine: Engine, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(declining_reply(DECLINED))
    probes = load_probes(REGPACK_PROBES)
    assert sum(p.question == DECLINED for p in probes) == 1
    report = calibrate(
        engine, probes, generator=GENERATOR, options=GeneratorOptions(base_url=server.url)
    )
    data = report.data
    declined = np.asarray([p.question == DECLINED for p in probes])
    # The reader declines exactly the chosen question, plus those with nothing to read.
    assert (data.generator_refused == (declined | data.empty)).all()
    # Every probe with something to read was put to the reader once.
    assert len(server.seen) == int((~data.empty).sum())
    row = int(np.flatnonzero(declined)[0])
    answerable = report.results["calibrated"]["outcome"]["answerable"]
    # Each refusal is counted once: at the gate, or by the reader after the gate passed it.
    assert answerable["refused"] == answerable["gate"] + answerable["generator"]
    assert answerable["gate"] == int((report.refused & (data.y == 1)).sum())
    assert answerable["generator"] == int(not report.refused[row])
    # The same probes with the extractive reader: the same gate, and that question answered.
    extractive = calibrate(engine, probes)
    assert (extractive.refused == report.refused).all()
    assert not extractive.data.generator_refused[row]
    assert report.gate.info["generator"] == GENERATOR
