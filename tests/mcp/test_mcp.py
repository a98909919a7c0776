"""The MCP server as an assistant meets it: `groundqa mcp` in a real process over a real
index, driven by the MCP SDK's own client, over stdio and over streamable HTTP."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client import Client
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from groundqa import registry
from groundqa.errors import UsageError
from groundqa.exposure import MAX_ANSWER_CHARS, MAX_PASSAGE_CHARS
from groundqa.generate import Evidence, Generation
from groundqa.mcp import create_server
from groundqa.mcp.results import MAX_SOURCE_CHARS
from groundqa.providers import GeneratorOptions
from groundqa.query import check_k, check_question
from tests.conftest import REGPACK_PROBES, copy_index
from tests.fakes import FakeServer, Out, Reply, Seen

EXE = [sys.executable, "-m", "groundqa.cli"]
ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
REFUSED = "Who won the 1994 World Cup?"
WAIT_S = 120


def probe(probe_id: str) -> dict[str, Any]:
    for line in REGPACK_PROBES.read_text(encoding="utf-8").splitlines():
        p: dict[str, Any] = json.loads(line)
        if p["id"] == probe_id:
            return p
    raise LookupError(probe_id)


ANSWERABLE = probe("a15")  # the turbine setback in Northmere: "1,500 metres"


def text_of(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


def cli_error(*args: str) -> str:
    """The one line the CLI prints for a mistake, without its `error: ` prefix."""
    proc = subprocess.run([*EXE, *args], capture_output=True, text=True, timeout=WAIT_S)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    return line.removeprefix("error: ")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Path:
    """A full build of the example corpus (BM25 and vectors), as `groundqa ingest` makes it."""
    path = tmp_path_factory.mktemp("mcp") / "idx"
    copy_index(regpack_build, path)
    return path


# --- over stdio, as a desktop assistant starts it ------------------------------------------


@dataclass
class Connection:
    """A client session in a portal's event loop, for tests that are not async themselves."""

    portal: BlockingPortal
    session: ClientSession
    stray: list[Exception] = field(default_factory=list)

    def call(self, tool: str, **arguments: Any) -> CallToolResult:
        result = self.portal.call(self.session.call_tool, tool, arguments)
        assert isinstance(result, CallToolResult)
        return result


@asynccontextmanager
async def stdio_session(
    index: Path, errlog: TextIO, stray: list[Exception]
) -> AsyncIterator[ClientSession]:
    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, Exception):  # a line on stdout that is not the protocol
            stray.append(message)

    server = StdioServerParameters(
        command=EXE[0], args=[*EXE[1:], "mcp", "--index", str(index)], env=ENV
    )
    async with (
        stdio_client(server, errlog=errlog) as (read, write),
        ClientSession(
            read, write, read_timeout_seconds=WAIT_S, message_handler=on_message
        ) as session,
    ):
        await session.initialize()
        yield session


@pytest.fixture(scope="module")
def stderr_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-log") / "stderr.txt"


@pytest.fixture(scope="module")
def stdio(index: Path, stderr_log: Path) -> Iterator[Connection]:
    stray: list[Exception] = []
    with (
        stderr_log.open("w", encoding="utf-8") as errlog,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(stdio_session(index, errlog, stray)) as session,
    ):
        yield Connection(portal, session, stray)


def test_the_server_lists_three_tools_that_explain_a_refusal(stdio: Connection) -> None:
    tools = {t.name: t for t in stdio.portal.call(stdio.session.list_tools).tools}
    assert set(tools) == {"ask", "search", "source"}
    for name in ("ask", "search"):
        description = tools[name].description or ""
        assert "refus" in description and "general knowledge" in description, name
    assert "only from the corpus" in (tools["ask"].description or "")
    for tool in tools.values():
        assert tool.output_schema is not None and tool.annotations is not None
        assert tool.annotations.read_only_hint is True
    assert {"question", "k", "scope", "filters", "as_of", "history"} == set(
        tools["ask"].input_schema["properties"]
    )
    instructions = stdio.session.instructions or ""
    assert "only from it" in instructions and "refus" in instructions


def test_ask_answers_with_numbered_citations_and_a_sources_list(stdio: Connection) -> None:
    result = stdio.call("ask", question=ANSWERABLE["question"])
    assert not result.is_error
    data = result.structured_content
    assert data is not None and data["refused"] is False and data["refused_by"] is None
    assert data["outcome"] == "confident"
    for expected in ANSWERABLE["answer_contains"]:
        assert expected in data["answer"]
    assert "[1]" in data["answer"] and 0.0 < data["confidence"] <= 1.0
    first = data["citations"][0]
    assert first["n"] == 1
    assert first["section_id"] in ANSWERABLE["expected"]
    assert first["section"].startswith("Renewable Energy") or " > " in first["section"]
    assert "page" in first and first["uri"].startswith("file://") and first["snippet"]
    text = text_of(result)
    assert text.startswith(data["answer"]) and "\nSources:\n[1] " in text
    assert f"<{first['uri']}>" in text


def test_a_question_the_corpus_does_not_cover_is_refused_without_citations(
    stdio: Connection,
) -> None:
    result = stdio.call("ask", question=REFUSED)
    assert not result.is_error
    data = result.structured_content
    assert data is not None and data["refused"] is True and data["refused_by"] == "gate"
    assert data["citations"] == []
    assert text_of(result) == data["answer"]
    assert "Sources" not in text_of(result)


def test_a_follow_up_is_read_against_the_history(stdio: Connection) -> None:
    history = [
        {"role": "user", "content": ANSWERABLE["question"]},
        {"role": "assistant", "content": "1,500 metres from a dwelling. [1]"},
    ]
    result = stdio.call("ask", question="And for a solar farm?", history=history)
    assert not result.is_error
    data = result.structured_content
    assert data is not None
    standalone = data["standalone_question"]
    assert standalone and standalone != "And for a solar farm?"
    assert "Northmere" in standalone or "turbine" in standalone
    without = stdio.call("ask", question="And for a solar farm?").structured_content
    assert without is not None and without["standalone_question"] is None


def test_a_history_longer_than_six_turns_is_cut_and_the_answer_says_so(
    stdio: Connection,
) -> None:
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"earlier turn {i}"}
        for i in range(8)
    ]
    result = stdio.call("ask", question=ANSWERABLE["question"], history=turns)
    data = result.structured_content
    assert data is not None and not result.is_error
    assert any("2 earlier turns were left out" in note for note in data["notes"]), data["notes"]


def test_search_ranks_passages_without_answering(stdio: Connection) -> None:
    result = stdio.call("search", question=ANSWERABLE["question"], k=3)
    assert not result.is_error
    data = result.structured_content
    assert data is not None
    passages = data["passages"]
    assert [p["rank"] for p in passages] == [1, 2, 3]
    assert passages[0]["score"] >= passages[-1]["score"]
    assert any(p["section_id"] in ANSWERABLE["expected"] for p in passages)
    for p in passages:
        assert {"doc_id", "section_id", "chunk_id", "section", "page", "uri", "text"} <= set(p)
        assert p["text"] and p["text"] in text_of(result)
    assert "answer" not in data


def test_source_reads_a_document_a_section_and_a_chunk(stdio: Connection) -> None:
    section_id = ANSWERABLE["expected"][0]
    doc_id = section_id.partition("#")[0]
    document = stdio.call("source", id=doc_id).structured_content
    assert document is not None and document["kind"] == "document"
    sections = [p["section_id"] for p in document["parts"]]
    assert section_id in sections and len(set(sections)) > 1
    assert document["omitted_sections"] == []  # the example documents are short
    assert sum(len(p["text"]) for p in document["parts"]) <= MAX_SOURCE_CHARS

    section = stdio.call("source", id=section_id)
    data = section.structured_content
    assert data is not None and data["kind"] == "section"
    assert {p["section_id"] for p in data["parts"]} == {section_id}
    assert "1,500 metres" in text_of(section) and f"section_id: {section_id}" in text_of(section)

    chunk_id = data["parts"][0]["chunk_id"]
    chunk = stdio.call("source", id=chunk_id).structured_content
    assert chunk is not None and chunk["kind"] == "chunk"
    assert [p["chunk_id"] for p in chunk["parts"]] == [chunk_id]


def test_an_unknown_id_is_a_tool_error_that_says_what_to_do(stdio: Connection) -> None:
    result = stdio.call("source", id="no_such_document.md")
    assert result.is_error and result.structured_content is None
    message = text_of(result)
    assert "no_such_document.md" in message and "search" in message
    assert "\n" not in message and "Traceback" not in message


@pytest.mark.parametrize(
    ("arguments", "cli_args", "library"),
    [
        ({"k": 0}, ["--k", "0"], lambda: check_k(0)),
        ({"question": "   "}, [], lambda: check_question("   ")),
    ],
    ids=["k=0", "empty question"],
)
def test_a_mistake_is_a_tool_error_with_the_message_the_cli_prints(
    stdio: Connection, index: Path, arguments: dict[str, Any], cli_args: list[str], library: Any
) -> None:
    call = {"question": ANSWERABLE["question"], **arguments}
    result = stdio.call("ask", **call)
    assert result.is_error
    with pytest.raises(UsageError) as raised:
        library()
    expected = raised.value.message
    assert text_of(result) == expected
    assert cli_error("ask", call["question"], "--index", str(index), *cli_args) == expected


def test_a_bad_date_is_a_tool_error_of_one_line(stdio: Connection) -> None:
    result = stdio.call("ask", question=ANSWERABLE["question"], as_of="next tuesday")
    assert result.is_error
    assert text_of(result) == "as_of takes a date as YYYY-MM-DD, got 'next tuesday'"


def test_calls_in_flight_together_are_all_answered(stdio: Connection) -> None:
    async def both() -> list[CallToolResult]:
        results: list[CallToolResult] = []

        async def one(tool: str, arguments: dict[str, Any]) -> None:
            result = await stdio.session.call_tool(tool, arguments)
            assert isinstance(result, CallToolResult)
            results.append(result)

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "ask", {"question": ANSWERABLE["question"]})
            tg.start_soon(one, "search", {"question": REFUSED, "k": 2})
            tg.start_soon(one, "ask", {"question": REFUSED})
        return results

    results = stdio.portal.call(both)
    assert len(results) == 3 and not any(r.is_error for r in results)


def test_stdout_carries_only_the_protocol_and_the_banner_goes_to_stderr(
    stdio: Connection, stderr_log: Path
) -> None:
    stdio.portal.call(stdio.session.send_ping)
    assert stdio.stray == []
    log = stderr_log.read_text(encoding="utf-8")
    assert "groundqa MCP server over" in log and "on stdio" in log
    assert "Traceback" not in log


def test_a_generator_that_fails_is_a_tool_error_with_its_message(
    index: Path, serve: Callable[[Reply], FakeServer]
) -> None:
    def unavailable(seen: Seen, out: Out) -> None:
        out.json({"error": "model 'nowhere' not found"}, 500)

    fake = serve(unavailable)
    options = GeneratorOptions(base_url=fake.url, timeout_s=10)
    server = create_server(index, generator="ollama:nowhere", options=options)

    async def ask() -> CallToolResult:
        async with Client(server) as client:
            return await client.call_tool("ask", {"question": ANSWERABLE["question"]})

    result = anyio.run(ask)
    assert fake.seen and fake.seen[0].body["model"] == "nowhere"
    assert result.is_error and result.structured_content is None
    message = text_of(result)
    assert message.startswith(f"ollama at {fake.url}") and "HTTP 500" in message
    assert "model 'nowhere' not found" in message and "\n" not in message


@dataclass
class BrokenGenerator:
    """A registered generator with a bug: it fails with something other than our errors."""

    name: str = "broken"
    streams: bool = True

    def generate(self, evidence: Evidence) -> Generation:
        raise RuntimeError("internal detail at 0x7f00")

    def stream(self, evidence: Evidence) -> Iterator[str | Generation]:
        raise RuntimeError("internal detail at 0x7f00")


def test_an_unexpected_failure_is_a_generic_line_and_its_detail_stays_in_the_log(
    index: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(registry._ENTRIES, "generator", dict(registry._ENTRIES["generator"]))
    registry.register("generator", "broken", lambda arg, options: BrokenGenerator())
    server = create_server(index, generator="broken")

    async def ask() -> CallToolResult:
        async with Client(server) as client:
            return await client.call_tool("ask", {"question": ANSWERABLE["question"]})

    result = anyio.run(ask)
    assert result.is_error
    assert text_of(result) == "ask failed on an unexpected error; the server's log says why"
    logged = [r for r in caplog.records if r.exc_info]
    assert logged and "internal detail" in str(logged[0].exc_info[1])  # type: ignore[index]


# --- the command line around it -------------------------------------------------------------


def test_a_missing_index_fails_before_serving_with_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*EXE, "mcp", "--index", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=WAIT_S,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: no index at ")


def test_without_the_sdk_the_command_names_the_extra_to_install(index: Path) -> None:
    # An interpreter where `import mcp` fails, as it does when the extra is not installed.
    code = "import sys; sys.modules['mcp'] = None; from groundqa.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "mcp", "--index", str(index)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=WAIT_S,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and "pip install 'groundqa[mcp]'" in line


# --- over streamable HTTP --------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_url(index: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        [*EXE, "mcp", "--index", str(index), "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **ENV},
    )
    try:
        yield banner_url(proc)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=WAIT_S)
        assert "Traceback" not in err, err
        assert out == ""


def banner_url(proc: subprocess.Popen[str]) -> str:
    """The address the server says it listens on, once it says so."""
    assert proc.stderr is not None
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 1.0)
        if not ready:
            continue
        line = proc.stderr.readline()
        assert line, f"the server exited ({proc.wait()}) before listening"
        m = re.search(r" on (http://127\.0\.0\.\d+:\d+/mcp)$", line.strip())
        if m:
            return m.group(1)
    raise AssertionError("the server did not say where it listens")


def test_the_same_tools_over_streamable_http(http_url: str) -> None:
    async def session_calls() -> tuple[set[str], CallToolResult, CallToolResult, CallToolResult]:
        async with (
            streamable_http_client(http_url) as (read, write),
            ClientSession(read, write, read_timeout_seconds=WAIT_S) as session,
        ):
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            answered = await session.call_tool("ask", {"question": ANSWERABLE["question"]})
            refused = await session.call_tool("ask", {"question": REFUSED})
            wrong = await session.call_tool("search", {"question": REFUSED, "k": 0})
            assert isinstance(answered, CallToolResult) and isinstance(refused, CallToolResult)
            assert isinstance(wrong, CallToolResult)
            return names, answered, refused, wrong

    names, answered, refused, wrong = anyio.run(session_calls)
    assert names == {"ask", "search", "source"}
    assert answered.structured_content is not None
    assert answered.structured_content["refused"] is False
    assert ANSWERABLE["answer_contains"][0] in text_of(answered)
    assert refused.structured_content is not None and refused.structured_content["refused"]
    assert wrong.is_error and text_of(wrong) == "k must be between 1 and 100, got 0"


def mcp_http(index: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*EXE, "mcp", "--index", str(index), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **ENV},
    )
    return proc, banner_url(proc)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def test_over_http_a_host_name_it_does_not_answer_to_gets_421_on_any_address(
    index: Path,
) -> None:
    """The SDK checked the Host only when bound to 127.0.0.1, localhost or ::1; bound to
    127.0.0.2 (or 0.0.0.0) a DNS-rebinding page could call the tools."""
    proc, url = mcp_http(index, "--http", "127.0.0.2:0", "--allowed-host", "qa.example.org")
    try:
        port = url.rsplit(":", 1)[1].split("/")[0]
        for host in ("attacker.example", f"attacker.example:{port}"):
            refused = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Host": host})
            assert refused.status_code == 421, refused.text
            assert "'attacker.example'" in refused.text and "--allowed-host" in refused.text
        for host in (f"127.0.0.2:{port}", f"localhost:{port}", "qa.example.org"):
            taken = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Host": host})
            assert taken.status_code == 200, (host, taken.text)
        page = {**MCP_HEADERS, "Origin": "http://attacker.example"}
        assert httpx.post(url, json=INITIALIZE, headers=page).status_code == 403
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=WAIT_S)
    assert "Traceback" not in err


def test_allowed_host_without_http_is_a_usage_error(index: Path) -> None:
    line = cli_error("mcp", "--index", str(index), "--allowed-host", "qa.example.org")
    assert line == "--allowed-host applies to --http only; over stdio there is no Host"


def test_over_stdio_a_line_that_is_not_json_is_dropped_without_an_answer(index: Path) -> None:
    """What docs/mcp.md says: the SDK reads a line that is not JSON-RPC, logs nothing a
    client sees, and answers nothing; the next message is answered as usual."""
    proc = subprocess.Popen(
        [*EXE, "mcp", "--index", str(index)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **ENV},
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("this is not json\n" + json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], WAIT_S)
        assert ready, "no answer to initialize"
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 1 and "result" in answer  # the one answer is initialize's
        proc.stdin.close()
        rest = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=WAIT_S)
        proc.stdin.close()
        proc.stdout.close()
    assert rest == ""  # and nothing was said about the bad line


def test_a_caller_cannot_choose_the_generator(
    index: Path, serve: Callable[[Reply], FakeServer]
) -> None:
    """`ask` takes no generator: a caller that names one (a gguf path, a model server) gets
    the server's own, and nothing is opened or called."""
    fake = serve(lambda seen, out: out.json({"error": "never asked"}, 500))
    server = create_server(index, options=GeneratorOptions(base_url=fake.url))

    async def ask() -> list[CallToolResult]:
        async with Client(server) as client:
            return [
                await client.call_tool(
                    "ask", {"question": ANSWERABLE["question"], "generator": spec}
                )
                for spec in ("openai:x", "gguf:/etc/shadow")
            ]

    for result in anyio.run(ask):
        assert not result.is_error
        assert (
            result.structured_content is not None and "[1]" in result.structured_content["answer"]
        )
    assert fake.seen == []


def test_every_tool_cuts_an_over_long_text_and_says_so(long_index: Path) -> None:
    server = create_server(long_index)
    question = "When does the harbour ferry leave the stone pier?"

    async def calls() -> list[CallToolResult]:
        async with Client(server) as client:
            return [
                await client.call_tool("ask", {"question": question}),
                await client.call_tool("search", {"question": question, "k": 2}),
                await client.call_tool("source", {"id": "ferry.md"}),
            ]

    asked, searched, read = anyio.run(calls)
    for result in (asked, searched, read):
        assert not result.is_error
        assert len(text_of(result)) < 60_000
        assert len(json.dumps(result.structured_content)) < 100_000
    answer = asked.structured_content
    assert answer is not None and len(answer["answer"]) == MAX_ANSWER_CHARS
    assert any("cut to its first 40,000" in n for n in answer["notes"])
    assert answer["citations"][0]["truncated"] is True
    passages = searched.structured_content
    assert passages is not None and passages["passages"][0]["truncated"] is True
    assert len(passages["passages"][0]["text"]) == MAX_PASSAGE_CHARS
    assert re.search(
        r"\[This passage is cut to its first 20,000 of 660,\d{3} characters\]", text_of(searched)
    )
    parts = read.structured_content
    assert parts is not None and parts["parts"][0]["truncated"] is True
    assert [p["section_id"] for p in parts["parts"]] == ["ferry.md#Timetable", "ferry.md#Fares"]
    assert "[This passage is cut" in text_of(read)
