"""Regulatory scope: the jurisdiction hierarchy, any-of / all-of filters on list-valued and
nested metadata, versions in force, and clause references, over small corpora on disk."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundqa.cli import main
from groundqa.engine import Engine
from groundqa.errors import UsageError, ValidationBlocked
from groundqa.index.postgres import PostgresStore
from groundqa.ingestion import ingest
from groundqa.loaders import load
from groundqa.retrieve import PLACE_BOOST
from groundqa.validate import validate
from tests.conftest import _fresh_database

DOCS = {
    "federal_burning.md": """---
jurisdiction: federal
frameworks: [NGER, GHG Protocol]
reporting: {scheme: NGER, level: facility}
---
# National Open Burning Act 2019

## 3 Permits to burn

3.1 A burning permit is needed to light an open fire larger than 2 square metres on any land.

3.2 A permit lasts 14 days.
""",
    "state_a_burning.md": """---
jurisdiction: state
state: Avonia
frameworks: [NGER]
reporting: {scheme: State register}
---
# Avonia Open Fires Regulations 2020

## 2 Fire danger period permits

2.1 During the fire danger period a burning permit from the Avonia fire service is needed for any open fire on rural land.
""",
    "state_b_burning.md": """---
jurisdiction: state
state: Belmarsh
frameworks: [GHG Protocol]
---
# Belmarsh Burning Code 2021

## 4 Seasonal permits

4.1 In Belmarsh a seasonal burning permit is needed for any open fire between November and March.
""",
    "local_a1_burning.md": """---
jurisdiction: local
state: Avonia
area: Corley Shire
---
# Corley Shire Fires By-law 2022

## 1 Backyard fires

1.1 A backyard fire in Corley Shire needs a council burning permit in every month of the year.
""",
    "local_b1_burning.md": """---
jurisdiction: local
state: Belmarsh
area: Dunmore City
---
# Dunmore City Smoke Local Law 2018

## 5 Incinerators

5.1 Backyard incinerators are banned in Dunmore City, so no burning permit is issued for them.
""",
}


def _write(folder: Path, docs: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


# Every test of an opened index runs on both stores: an index directory, which holds the
# chunks in memory, and PostgreSQL, which answers facets, versions and chunks per request
# and must never read the whole corpus to do so.
STORES = ["directory", "postgresql"]


@pytest.fixture(scope="module", params=STORES)
def index_at(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], str]]:
    """Where to build an index named `name`: a directory, or a database of its own."""
    with contextlib.ExitStack() as stack:
        if request.param == "directory":
            root = tmp_path_factory.mktemp("indexes")
            yield lambda name: str(root / name)
            return
        admin = request.getfixturevalue("pg_admin_url")
        yield lambda name: stack.enter_context(
            contextlib.contextmanager(_fresh_database)(admin, vector=False)
        )


def _opened(location: str, engines: list[Engine]) -> Engine:
    engine = Engine.open(location)
    engines.append(engine)
    return engine


@pytest.fixture(scope="module")
def engines() -> Iterator[list[Engine]]:
    """Every engine a module opened; a PostgreSQL one must not have read the whole corpus."""
    opened: list[Engine] = []
    yield opened
    for engine in opened:
        if isinstance(engine.store, PostgresStore):
            assert engine.store._chunks is None, "a question read every chunk"
            engine.store.close()


@pytest.fixture(scope="module")
def engine(
    tmp_path_factory: pytest.TempPathFactory,
    index_at: Callable[[str], str],
    engines: list[Engine],
) -> Engine:
    root = tmp_path_factory.mktemp("regulatory")
    location = index_at("idx")
    ingest([_write(root / "corpus", DOCS)], location, dense=None)
    return _opened(location, engines)


def _docs(hits: list) -> set[str]:  # type: ignore[type-arg]
    return {h.chunk.doc_id for h in hits}


QUESTION = "Do I need a burning permit for an open fire?"


def test_an_area_scope_applies_national_state_and_local_rules_of_that_place_only(
    engine: Engine,
) -> None:
    hits = engine.search(QUESTION, depth=20, scope={"area": "Corley Shire"})
    assert _docs(hits) == {"federal_burning.md", "state_a_burning.md", "local_a1_burning.md"}


def test_a_state_scope_keeps_that_states_rules_and_no_local_ones(engine: Engine) -> None:
    hits = engine.search(QUESTION, depth=20, scope={"state": "Belmarsh"})
    assert _docs(hits) == {"federal_burning.md", "state_b_burning.md"}


def test_with_places_boost_a_scope_lifts_its_places_and_filters_nothing(engine: Engine) -> None:
    plain = engine.search(QUESTION, depth=20, retriever="bm25")
    boosted = engine.search(
        QUESTION, depth=20, retriever="bm25+places=boost", scope={"area": "Dunmore City"}
    )
    assert _docs(boosted) == _docs(plain) == set(DOCS)
    lifted = {"local_b1_burning.md", "state_b_burning.md"}
    scores = {h.chunk.doc_id: h.score for h in plain}
    for h in boosted:
        factor = 1 + PLACE_BOOST if h.chunk.doc_id in lifted else 1.0
        assert h.score == pytest.approx(scores[h.chunk.doc_id] * factor)
    assert boosted[0].chunk.doc_id in lifted


def test_several_areas_at_once(engine: Engine) -> None:
    hits = engine.search(QUESTION, depth=20, scope={"area": ["Corley Shire", "Dunmore City"]})
    assert _docs(hits) == set(DOCS)


def test_the_answer_reports_the_scope_it_applied_with_the_inferred_state(engine: Engine) -> None:
    answer = engine.ask(QUESTION, scope={"area": "corley"})
    assert answer.scope == {"area": ["Corley Shire"], "state": ["Avonia"]}
    cited = {c.doc_id for c in answer.citations}
    assert cited and cited <= {"federal_burning.md", "state_a_burning.md", "local_a1_burning.md"}


def test_an_unknown_place_is_an_error_listing_close_matches(engine: Engine) -> None:
    with pytest.raises(UsageError, match="no document has area='Corly Shire'; did you mean Corley"):
        engine.ask(QUESTION, scope={"area": "Corly Shire"})
    with pytest.raises(UsageError, match="unknown scope key 'county'"):
        engine.search(QUESTION, depth=5, scope={"county": "Corley"})


def test_list_valued_metadata_filters_any_of_and_all_of(engine: Engine) -> None:
    any_of = engine.search(QUESTION, depth=20, filters={"frameworks": ["NGER", "GHG Protocol"]})
    assert _docs(any_of) == {"federal_burning.md", "state_a_burning.md", "state_b_burning.md"}
    all_of = engine.search(
        QUESTION, depth=20, filters={"frameworks": {"all": ["NGER", "GHG Protocol"]}}
    )
    assert _docs(all_of) == {"federal_burning.md"}
    with pytest.raises(UsageError, match="did you mean GHG Protocol"):
        engine.search(QUESTION, depth=5, filters={"frameworks": {"all": ["NGER", "GHG Protocl"]}})
    with pytest.raises(UsageError, match="takes a value, a list"):
        engine.search(QUESTION, depth=5, filters={"frameworks": {"some": ["NGER"]}})


def test_nested_metadata_is_filtered_by_dotted_key(engine: Engine) -> None:
    hits = engine.search(QUESTION, depth=20, filters={"reporting.scheme": "NGER"})
    assert _docs(hits) == {"federal_burning.md"}
    assert "reporting.level" in set(engine.facets.keys())


def test_a_scope_is_applied_before_top_k_so_one_match_in_fifty_is_found(tmp_path: Path) -> None:
    # Fifty Belmarsh documents outscore the single Avonia one on every query word.
    docs = {
        f"b{i:02d}.md": f"---\nstate: Belmarsh\n---\n# Belmarsh Notice {i}\n\n## 1 Permits\n\n"
        f"1.1 Burning permit rules for open fire burning permit number {i}: a burning permit "
        "for an open fire is always needed.\n"
        for i in range(50)
    }
    docs["a00.md"] = (
        "---\nstate: Avonia\n---\n# Avonia Notice\n\n## 1 Permits\n\n"
        "1.1 In Avonia a permit is needed before any fire is lit outdoors on a total fire ban day.\n"
    )
    ingest([_write(tmp_path / "c", docs)], tmp_path / "idx", dense=None)
    engine = Engine.open(tmp_path / "idx")
    unscoped = engine.search(QUESTION, depth=50)
    assert "a00.md" not in _docs(unscoped[:50])  # it is not among the first 50 hits
    scoped = engine.search(QUESTION, depth=1, scope={"state": "Avonia"})
    assert _docs(scoped) == {"a00.md"}
    boosted = engine.search(f"{QUESTION} in Avonia", depth=3, retriever="bm25+places=filter")
    assert _docs(boosted) == {"a00.md"}


# ------------------------------------------------------------------ versions in force

VERSIONED = {
    "noise_2015.md": """---
effective_date: 2015-07-01
superseded_by: noise_2023.md
---
# Quiet Hours Act 2015

## 2 Quiet hours

2.1 Power tools must not be used before 8 am or after 6 pm on weekdays under the quiet hours rule.
""",
    "noise_2023.md": """---
effective_date: 2023-07-01
---
# Quiet Hours Act 2023

## 2 Quiet hours

2.1 Power tools must not be used before 7 am or after 7 pm on any day under the quiet hours rule.
""",
    "future_levy.md": """---
effective_date: 2099-01-01
---
# Leaf Blower Levy Act 2099

## 1 Levy

1.1 A levy of 40 dollars applies to each leaf blower sold.
""",
}


@pytest.fixture(scope="module")
def versioned(
    tmp_path_factory: pytest.TempPathFactory,
    index_at: Callable[[str], str],
    engines: list[Engine],
) -> Engine:
    root = tmp_path_factory.mktemp("versions")
    location = index_at("versioned")
    ingest([_write(root / "c", VERSIONED)], location, dense=None)
    return _opened(location, engines)


def test_when_both_versions_match_the_one_in_force_answers(versioned: Engine) -> None:
    question = (
        "Before what time must power tools not be used on weekdays under the quiet hours rule?"
    )
    # the engine reads the versions from the index (their rules: test_versions.py)
    versions = versioned.store.catalog.versions(["noise_2023.md"])
    assert versions.family("noise_2023.md") == ["noise_2015.md", "noise_2023.md"]
    # The 2015 text matches better ("weekdays"), and without versions it would rank first.
    scores = versioned.search(question, depth=5, as_of=dt.date(2019, 1, 1))
    assert scores[0].chunk.doc_id == "noise_2015.md"
    hits = versioned.search(question, depth=5)
    assert "noise_2015.md" not in {h.chunk.doc_id for h in hits}
    answer = versioned.ask(question)
    assert answer.citations and answer.citations[0].doc_id == "noise_2023.md"
    assert not answer.notes


def test_answering_as_of_an_earlier_day_uses_that_days_version(versioned: Engine) -> None:
    question = (
        "Before what time must power tools not be used on weekdays under the quiet hours rule?"
    )
    hits = versioned.search(question, depth=5, as_of=dt.date(2019, 3, 1))
    assert hits[0].chunk.doc_id == "noise_2015.md"


def test_an_answer_citing_an_out_of_force_version_says_so(versioned: Engine) -> None:
    answer = versioned.ask("What levy applies to each leaf blower sold?")
    assert not answer.refused and answer.citations[0].doc_id == "future_levy.md"
    assert answer.notes == (
        "Leaf Blower Levy Act 2099 is not yet in force on "
        f"{dt.date.today().isoformat()} (it takes effect 2099-01-01)",
    )
    old = versioned.ask(
        "Under the 2015 act, before what time on weekdays are power tools banned?",
        filters={"effective_date": "2015-07-01"},
    )
    assert [c.doc_id for c in old.citations] == ["noise_2015.md"]
    assert old.notes and "superseded by Quiet Hours Act 2023 from 2023-07-01" in old.notes[0]


# ------------------------------------------------------------------ clause references
# (the rules themselves: test_clauses.py)


def test_citations_carry_the_clause_through_the_engine(engine: Engine) -> None:
    answer = engine.ask(QUESTION, scope={"area": "Corley Shire"})
    clauses = {c.doc_id: c.clause for c in answer.citations}
    assert clauses.get("local_a1_burning.md") in (None, "cl.1.1")
    assert any(c.clause for c in answer.citations)
    assert all(c.to_dict()["clause"] == c.clause for c in answer.citations)


# ------------------------------------------------------------------ the command line


def test_cli_scope_filter_all_and_as_of(engine: Engine) -> None:
    runner = CliRunner()
    index = engine.location
    result = runner.invoke(
        main, ["ask", QUESTION, "--index", index, "--scope", "area=Dunmore", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["scope"] == {"area": ["Dunmore City"], "state": ["Belmarsh"]}
    assert {c["doc_id"] for c in data["citations"]} <= {
        "federal_burning.md",
        "state_b_burning.md",
        "local_b1_burning.md",
    }
    result = runner.invoke(
        main,
        [
            "ask",
            QUESTION,
            "--index",
            index,
            "--filter-all",
            "frameworks=NGER",
            "--filter-all",
            "frameworks=GHG Protocol",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert {c["doc_id"] for c in json.loads(result.output)["citations"]} == {"federal_burning.md"}
    bad = runner.invoke(main, ["ask", QUESTION, "--index", index, "--scope", "area=Dunmoore"])
    assert bad.exit_code != 0 and "did you mean Dunmore City?" in bad.output
    bad = runner.invoke(main, ["ask", QUESTION, "--index", index, "--as-of", "31/12/2020"])
    assert bad.exit_code != 0 and "--as-of takes a date as YYYY-MM-DD" in bad.output
    shown = runner.invoke(main, ["ask", QUESTION, "--index", index, "--scope", "state=Avonia"])
    assert shown.exit_code == 0 and "scope: state=Avonia" in shown.output


def test_a_local_document_without_its_area_is_a_review_finding(tmp_path: Path) -> None:
    folder = _write(
        tmp_path,
        {
            "l.md": "---\njurisdiction: local\nstate: Avonia\n---\n# L By-law\n\n## 1 Rule\n\n"
            "1.1 A rule that is long enough to be a section of its own in this by-law.\n"
        },
    )
    findings = [
        f for f in validate(load([folder]).documents) if f.check == "jurisdiction-incomplete"
    ]
    assert len(findings) == 1 and findings[0].severity == "REVIEW"
    assert "no area is given" in findings[0].message


# ------------------------------------------------------------------ metadata beside the files


def test_folder_defaults_and_sidecars_give_documents_their_jurisdiction(tmp_path: Path) -> None:
    body = "# {t}\n\n## 1 Rule\n\n1.1 A rule that is long enough to be a section of its own here.\n"
    corpus = tmp_path / "corpus"
    _write(corpus / "federal", {"a.md": body.format(t="A Act")})
    _write(corpus / "local" / "corley", {"b.md": body.format(t="B By-law")})
    _write(corpus / "local" / "corley", {"c.md": "---\narea: Own Area\n---\n" + body.format(t="C")})
    (corpus / "federal" / "_meta.yaml").write_text("jurisdiction: federal\n")
    (corpus / "local" / "_meta.yaml").write_text("jurisdiction: local\nstate: Avonia\n")
    (corpus / "local" / "corley" / "_meta.yaml").write_text("area: Corley Shire\n")
    (corpus / "local" / "corley" / "b.md.meta.yaml").write_text(
        "effective_date: 2021-03-01\nframeworks: [NGER]\n"
    )
    loaded = load([corpus])
    meta = {Path(d.source).name: d.metadata for d in loaded.documents}
    assert meta["a.md"] == {"jurisdiction": "federal"}
    assert meta["b.md"] == {
        "jurisdiction": "local",
        "state": "Avonia",
        "area": "Corley Shire",
        "effective_date": "2021-03-01",
        "frameworks": ["NGER"],
    }
    assert meta["c.md"]["area"] == "Own Area"  # the document's own front matter wins
    # Metadata files are not corpus and are not reported as skipped.
    assert not [f for f in loaded.findings if f.check == "skipped-files"]


def test_a_broken_sidecar_blocks_and_the_index_stays(tmp_path: Path) -> None:
    corpus = _write(tmp_path / "c", {"a.md": "# A\n\n## 1 Rule\n\n1.1 " + "word " * 30 + "\n"})
    ingest([corpus], tmp_path / "idx", dense=None)
    before = Engine.open(tmp_path / "idx").manifest.build_id
    (corpus / "a.md.meta.yaml").write_text("state: [unclosed\n")
    findings = load([corpus]).findings
    blocks = [f for f in findings if f.severity == "BLOCK"]
    assert [f.check for f in blocks] == ["metadata-file"]
    assert "a.md.meta.yaml cannot be read as YAML" in blocks[0].message
    with pytest.raises(ValidationBlocked):
        ingest([corpus], tmp_path / "idx", dense=None)
    engine = Engine.open(tmp_path / "idx")
    assert engine.manifest.build_id == before
    assert engine.search("rule word", depth=1)
