"""How often the groundedness screen fires, and how often it is right, on SciFact claims.

Each SciFact training claim becomes a one-claim answer citing every abstract it
names (`claim [1]`, or `[1, 2]` for two), with those abstracts as the retrieved
passages, and goes through `audit_answer` exactly as an engine answer would.
Labels come from the claim's evidence: SUPPORT, CONTRADICT, or NOT ENOUGH INFO
(NEI: no evidence in the cited abstract).

"Right" means: SUPPORT -> NOT_CONTRADICTED or DERIVED; CONTRADICT -> UNSUPPORTED
or MISATTRIBUTED; NEI -> anything but NOT_CONTRADICTED. UNVERIFIABLE (the screen
found nothing to check) is neither right nor wrong; it is counted as not screened.
Precision per verdict is the share of claims given that verdict whose label
agrees with it (UNSUPPORTED and MISATTRIBUTED agree with CONTRADICT, and, read
leniently, with NEI too).

Baseline: the digit screen, which calls a claim supported when every digit run
in it (`25`, `2001`) appears verbatim in the cited abstracts, and unsupported
otherwise; it shows what unit-aware normalisation and token kinds add.

Timing: `audit_answer` per claim, median of 5 rounds, cold (the passage cache
cleared before each call, so every abstract is read afresh) and warm.

Beside it, the screen on its home ground: the extractive answerer's answers to
the example pack's probe questions (examples/regpack), where every sentence is
copied from its passage, so any UNSUPPORTED or MISATTRIBUTED is a false alarm.

Reads ../shared/bench/scifact in place; skips with a message where it is absent.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import sets
from _common import ROOT, WORK, latency_summary, machine, time_each, write_result
from groundqa import audit
from groundqa.audit import VERDICTS, AuditReport, audit_answer
from groundqa.generate import cite
from groundqa.models import Chunk, Citation, Hit
from report import pct

LABELS = ("SUPPORT", "CONTRADICT", "NEI")
RIGHT = {
    "SUPPORT": {"NOT_CONTRADICTED", "DERIVED"},
    "CONTRADICT": {"UNSUPPORTED", "MISATTRIBUTED"},
    "NEI": {"UNSUPPORTED", "MISATTRIBUTED", "DERIVED"},
}
AGREES_STRICT = {
    "NOT_CONTRADICTED": {"SUPPORT"},
    "DERIVED": {"SUPPORT"},
    "UNSUPPORTED": {"CONTRADICT"},
    "MISATTRIBUTED": {"CONTRADICT"},
}
AGREES_LENIENT = {
    **AGREES_STRICT,
    "UNSUPPORTED": {"CONTRADICT", "NEI"},
    "MISATTRIBUTED": {"CONTRADICT", "NEI"},
}
# A claim the splitter reads as several sentences takes its worst verdict.
WORST_FIRST = ("UNSUPPORTED", "MISATTRIBUTED", "DERIVED", "NOT_CONTRADICTED", "UNVERIFIABLE")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Case:
    claim_id: int
    label: str
    answer: str
    citations: tuple[Citation, ...]
    passages: tuple[Hit, ...]


def _label(evidence: dict[str, list[dict[str, Any]]]) -> str:
    labels = {e["label"] for sets in evidence.values() for e in sets}
    if not labels:
        return "NEI"
    return "CONTRADICT" if "CONTRADICT" in labels else "SUPPORT"


def _hit(doc: dict[str, Any], rank: int) -> Hit:
    chunk = Chunk(
        chunk_id=doc["_id"],
        doc_id=doc["_id"],
        section_id=doc["_id"],
        title=doc.get("title", ""),
        section_path=(),
        text=doc.get("text", ""),
        source="corpus.jsonl",
    )
    return Hit(chunk=chunk, score=1.0, rank=rank)


def load_cases() -> list[Case] | None:
    found = sets.scifact_claims("train")
    if found is None:
        return None
    corpus, claims = found
    cases: list[Case] = []
    for row in claims:
        docs = [corpus[str(d)] for d in row["cited_doc_ids"] if str(d) in corpus]
        if not docs:
            continue
        hits = tuple(_hit(d, i) for i, d in enumerate(docs, start=1))
        citations = tuple(cite(i, h, "") for i, h in enumerate(hits, start=1))
        marker = "[" + ", ".join(str(i) for i in range(1, len(hits) + 1)) + "]"
        cases.append(
            Case(
                claim_id=row["id"],
                label=_label(row["evidence"]),
                answer=f"{row['claim'].rstrip()} {marker}",
                citations=citations,
                passages=hits,
            )
        )
    return cases


def screen(case: Case) -> AuditReport:
    return audit_answer(case.answer, case.citations, case.passages, refused=False)


def verdict_of(result: AuditReport) -> str:
    found = {c.verdict for c in result.claims}
    return next((v for v in WORST_FIRST if v in found), "UNVERIFIABLE")


def digit_baseline(case: Case) -> str:
    claim = re.sub(r"\[[\d, ]+\]", "", case.answer)
    digits = _DIGITS.findall(claim)
    if not digits:
        return "UNVERIFIABLE"
    text = " ".join(h.chunk.index_text() for h in case.passages)
    have = set(_DIGITS.findall(text))
    return "NOT_CONTRADICTED" if all(d in have for d in digits) else "UNSUPPORTED"


def score(labels: list[str], verdicts: list[str]) -> dict[str, Any]:
    """Firing rate, verdict distribution, accuracy and precision for one screen."""
    per_label: dict[str, Any] = {}
    for label in LABELS:
        mine = [v for lab, v in zip(labels, verdicts, strict=True) if lab == label]
        fired = [v for v in mine if v != "UNVERIFIABLE"]
        per_label[label] = {
            "claims": len(mine),
            "checkable": len(fired),
            "checkable_share": round(len(fired) / len(mine), 4) if mine else 0.0,
            "verdicts": {v: mine.count(v) for v in VERDICTS},
            "right": sum(1 for v in fired if v in RIGHT[label]),
            "right_of_checkable": (
                round(sum(1 for v in fired if v in RIGHT[label]) / len(fired), 4) if fired else None
            ),
        }
    precision: dict[str, Any] = {}
    for verdict in ("NOT_CONTRADICTED", "DERIVED", "UNSUPPORTED", "MISATTRIBUTED"):
        given = [lab for lab, v in zip(labels, verdicts, strict=True) if v == verdict]
        precision[verdict] = {
            "given": len(given),
            "strict": round(sum(lab in AGREES_STRICT[verdict] for lab in given) / len(given), 4)
            if given
            else None,
            "lenient": round(sum(lab in AGREES_LENIENT[verdict] for lab in given) / len(given), 4)
            if given
            else None,
        }
    fired_all = [(lab, v) for lab, v in zip(labels, verdicts, strict=True) if v != "UNVERIFIABLE"]
    return {
        "checkable_share": round(len(fired_all) / len(labels), 4) if labels else 0.0,
        "accuracy_of_checkable": (
            round(sum(v in RIGHT[lab] for lab, v in fired_all) / len(fired_all), 4)
            if fired_all
            else None
        ),
        "per_label": per_label,
        "precision": precision,
    }


def example_pack() -> dict[str, Any]:
    """Audit the extractive answers to the example pack's probes: false alarms and share."""
    import shutil

    from groundqa.engine import Engine
    from groundqa.ingestion import ingest

    work = WORK / "audit"
    shutil.rmtree(work, ignore_errors=True)
    ingest([ROOT / "examples" / "regpack"], work)
    engine = Engine.open(work)
    lines = (ROOT / "examples" / "regpack.probes.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()]
    verdicts: Counter[str] = Counter()
    answered = citations_ok = false_alarms = 0
    for question in questions:
        answer = engine.ask(question)
        result = audit_answer(
            answer.answer, answer.citations, answer.passages, refused=answer.refused
        )
        citations_ok += result.citations.ok
        if answer.refused:
            continue
        answered += 1
        for claim in result.claims:
            verdicts[claim.verdict] += 1
            false_alarms += claim.verdict in ("UNSUPPORTED", "MISATTRIBUTED")
    claims = sum(verdicts.values())
    return {
        "questions": len(questions),
        "answered": answered,
        "claims": claims,
        "verdicts": {v: verdicts[v] for v in VERDICTS},
        "checkable_share": round(1 - verdicts["UNVERIFIABLE"] / claims, 4) if claims else 0.0,
        "citation_check_ok": citations_ok,
        "false_alarms": false_alarms,
    }


def run() -> dict[str, Any] | None:
    cases = load_cases()
    if cases is None:
        return None
    results = [screen(c) for c in cases]
    labels = [c.label for c in cases]
    ours = [verdict_of(r) for r in results]
    base = [digit_baseline(c) for c in cases]
    ours_score, base_score = score(labels, ours), score(labels, base)
    kinds = Counter(t.kind for r in results for c in r.claims for t in c.tokens)
    statuses = Counter(t.status for r in results for c in r.claims for t in c.tokens)
    with_digit = sum(1 for c in cases if _DIGITS.search(re.sub(r"\[[\d, ]+\]", "", c.answer)))

    def cold(case: Case) -> object:
        audit.clear_caches()
        return screen(case)

    cold_ms = time_each(cold, cases)
    warm_ms = time_each(screen, cases)
    passages_chars = [sum(len(h.chunk.text) for h in c.passages) for c in cases]
    pack = example_pack()

    data: dict[str, Any] = {
        "dataset": "SciFact claims_train.jsonl (809 claims) with their cited abstracts",
        "machine": machine(),
        "method": audit.METHOD,
        "claims": len(cases),
        "claims_with_a_digit": with_digit,
        "labels": dict(Counter(labels)),
        "screen": ours_score,
        "digit_baseline": base_score,
        "token_kinds": dict(kinds),
        "token_status": dict(statuses),
        "example_pack": pack,
        "timing": {
            "cold": latency_summary(cold_ms),
            "warm": latency_summary(warm_ms),
            "passage_chars_mean": round(sum(passages_chars) / len(passages_chars), 1),
        },
    }

    rows = []
    for label in LABELS:
        pl = ours_score["per_label"][label]
        v = pl["verdicts"]
        rows.append(
            f"| {label} | {pl['claims']} | {pl['checkable']} ({pct(pl['checkable_share'])}) "
            f"| {v['NOT_CONTRADICTED']} | {v['DERIVED']} | {v['UNSUPPORTED']} "
            f"| {v['MISATTRIBUTED']} | {v['UNVERIFIABLE']} | {pct(pl['right_of_checkable'])} |"
        )
    prec_rows = []
    for verdict, p in ours_score["precision"].items():
        b = base_score["precision"].get(verdict, {"given": 0, "strict": None, "lenient": None})
        prec_rows.append(
            f"| {verdict} | {p['given']} | {pct(p['strict'])} | {pct(p['lenient'])} "
            f"| {b['given']} | {pct(b['strict'])} | {pct(b['lenient'])} |"
        )
    cold_lat, warm_lat = data["timing"]["cold"], data["timing"]["warm"]
    share = ours_score["checkable_share"]
    md = f"""## Audit: the token screen on SciFact claims

{data["dataset"]}; {machine()["cpus"]} CPUs; `python bench/audit.py`. Each claim is
audited as a one-sentence answer citing its abstract(s). Method `{audit.METHOD}`.

**The screen reads only {pct(share)} of these claims** ({ours_score["per_label"]["SUPPORT"]["checkable"] + ours_score["per_label"]["CONTRADICT"]["checkable"] + ours_score["per_label"]["NEI"]["checkable"]} of {len(cases)}):
most SciFact claims carry no number, unit, date or identifier at all ({with_digit} contain a
digit, and most of those digits are names such as `IL-6` or `CD4`, which are not checkable).
On the rest it says UNVERIFIABLE, which is the point of `checkable_share`: a quiet screen is
not a clean one. Entailment of prose needs a `Judge` (an NLI model), which does not ship offline.

| label | claims | checkable | NOT_CONTRADICTED | DERIVED | UNSUPPORTED | MISATTRIBUTED | UNVERIFIABLE | right, of checkable |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
{chr(10).join(rows)}

Right: SUPPORT → NOT_CONTRADICTED/DERIVED; CONTRADICT → UNSUPPORTED/MISATTRIBUTED;
NEI → anything but NOT_CONTRADICTED. Accuracy over checkable claims:
{pct(ours_score["accuracy_of_checkable"])} (digit baseline: {pct(base_score["accuracy_of_checkable"])}
over the {pct(base_score["checkable_share"])} of claims it reads).

Precision per verdict (share of claims given the verdict whose label agrees; strict counts
only CONTRADICT as agreeing with UNSUPPORTED/MISATTRIBUTED, lenient counts NEI too):

| verdict | screen: given | strict | lenient | digit baseline: given | strict | lenient |
|---|---:|---:|---:|---:|---:|---:|
{chr(10).join(prec_rows)}

MISATTRIBUTED cannot occur in this set-up: each claim cites every abstract it is given.
Tokens read in claims: {dict(kinds.most_common())}; their status: {dict(statuses.most_common())}.

On the example pack, where the extractive answerer copies its sentences: {pack["answered"]} of
{pack["questions"]} probe questions answered, {pack["claims"]} claims, checkable share
{pct(pack["checkable_share"])}, verdicts {pack["verdicts"]}; citation check ok on
{pack["citation_check_ok"]} of {pack["questions"]} answers; false alarms (UNSUPPORTED or
MISATTRIBUTED on a copied sentence): {pack["false_alarms"]}.

Time per claim (`audit_answer`, median of 5 rounds; abstracts average
{data["timing"]["passage_chars_mean"]:.0f} characters per claim): cold p50 {cold_lat["p50_ms"]:.2f} ms,
p95 {cold_lat["p95_ms"]:.2f} ms; warm (passages cached) p50 {warm_lat["p50_ms"]:.2f} ms,
p95 {warm_lat["p95_ms"]:.2f} ms.
"""
    write_result("audit", data, md)
    return data


if __name__ == "__main__":
    run()
