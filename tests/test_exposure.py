"""What a listening server lets a socket do: the Host check and the text limits, as pure
functions on hand-worked cases. The servers that use them are tested as processes in
test_limits.py (serve) and test_mcp.py (mcp)."""

from __future__ import annotations

import pytest

from groundqa.exposure import (
    MAX_ANSWER_CHARS,
    MAX_PASSAGE_CHARS,
    bounded,
    clip,
    host_allowed,
    host_name,
    is_loopback,
    misdirected,
    origin_allowed,
)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("Example.org:8000", "example.org"),
        ("example.org.", "example.org"),
        ("[::1]:8000", "::1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("127.0.0.1:80", "127.0.0.1"),
        ("  LOCALHOST  ", "localhost"),
    ],
)
def test_host_name_drops_port_brackets_case_and_the_final_dot(value: str, name: str) -> None:
    assert host_name(value) == name


def test_loopback_is_localhost_names_and_loopback_addresses() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "app.localhost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.20", "api.example.org", "localhost.example.org"):
        assert not is_loopback(host), host


# (Host header, the address the connection arrived at, --allowed-host values, allowed?)
HOSTS = [
    ("127.0.0.1:8000", "127.0.0.1", (), True),
    ("localhost:8000", "127.0.0.1", (), True),  # a localhost name on a loopback connection
    ("[::1]:8000", "127.0.0.1", (), True),
    ("attacker.example", "127.0.0.1", (), False),  # DNS rebinding
    ("attacker.example:8000", "127.0.0.1", (), False),
    ("localhost.attacker.example", "127.0.0.1", (), False),
    ("", "127.0.0.1", (), False),
    ("192.168.1.20:8000", "192.168.1.20", (), True),  # bound to 0.0.0.0, reached by address
    ("localhost", "192.168.1.20", (), False),  # not a loopback connection
    ("qa.example.org", "192.168.1.20", (), False),  # a name must be listed
    ("QA.example.org:443", "192.168.1.20", ("qa.example.org",), True),
    ("other.example.org", "192.168.1.20", ("qa.example.org",), False),
    ("anything.example", "192.168.1.20", ("*",), True),
    ("qa.example.org", None, ("qa.example.org",), True),
    ("127.0.0.1", None, (), False),  # no local address: nothing to compare with
]


@pytest.mark.parametrize(("host", "local", "allowed", "expected"), HOSTS)
def test_host_allowed(
    host: str, local: str | None, allowed: tuple[str, ...], expected: bool
) -> None:
    assert host_allowed(host, local, allowed) is expected


def test_a_request_without_a_host_is_not_a_browser_s_and_passes() -> None:
    assert host_allowed(None, "127.0.0.1")


def test_origin_allowed_reads_the_origin_s_host() -> None:
    assert origin_allowed(None, "127.0.0.1")
    assert origin_allowed("http://localhost:5173", "127.0.0.1")
    assert origin_allowed("https://qa.example.org", "10.0.0.5", ("qa.example.org",))
    assert not origin_allowed("http://attacker.example", "127.0.0.1")
    assert not origin_allowed("null", "127.0.0.1")


def test_the_misdirected_message_says_what_to_do() -> None:
    message = misdirected("Attacker.example:8000", ("qa.example.org",))
    assert "'attacker.example'" in message and "qa.example.org" in message
    assert "--allowed-host" in message and "\n" not in message


def test_clip_cuts_at_the_limit_and_says_so() -> None:
    assert clip("short", 10) == ("short", False)
    assert clip("x" * 10, 10) == ("x" * 10, False)
    assert clip("abcdefghijk", 10) == ("abcdefghij", True)
    # A passage is cut well above the chunker's 1,500 characters, an answer above what
    # the largest max_tokens can make.
    assert MAX_PASSAGE_CHARS >= 10 * 1500 and MAX_ANSWER_CHARS >= 4 * 8192


def test_bounded_keeps_short_strings_and_stops_lists_when_the_budget_is_spent() -> None:
    long = "y" * 300
    audit = {
        "method": "rules",
        "claims": [{"claim": long, "verdict": "UNSUPPORTED"} for _ in range(5)],
        "checkable_share": 0.5,
    }
    kept, cut = bounded(audit, 700)
    assert cut and kept["method"] == "rules" and kept["checkable_share"] == 0.5
    # 300 + 300 + what is left (100, but never below 200 for a string it cuts) = 800 > 700
    assert [len(c["claim"]) for c in kept["claims"]] == [300, 300, 200]
    assert all(c["verdict"] == "UNSUPPORTED" for c in kept["claims"])
    assert bounded(audit, 10_000) == (audit, False)
