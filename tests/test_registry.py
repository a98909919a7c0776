"""The one registry: built-in and registered backends of every kind, resolved lazily."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from groundqa import registry
from groundqa.embed import EmbedderOptions, get_embedder
from groundqa.errors import UsageError
from groundqa.generate import GeneratorOptions, get_generator
from groundqa.retrieve.rerank import get_reranker


@pytest.fixture(autouse=True)
def _restore_entries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Registrations made by a test are undone after it, so other tests see the built-ins."""
    for kind in registry.KINDS:
        monkeypatch.setitem(registry._ENTRIES, kind, dict(registry._ENTRIES[kind]))
    yield


@dataclass
class EchoGenerator:
    """A registered backend: it records what the registry handed its factory."""

    arg: str
    options: GeneratorOptions
    name: str = "echo"
    streams: bool = False

    @classmethod
    def from_spec(cls, arg: str, options: GeneratorOptions) -> EchoGenerator:
        return cls(arg, options)


def test_every_kind_lists_its_built_ins() -> None:
    assert registry.KINDS == ("embedder", "reranker", "generator")
    assert registry.available("embedder") == ["minilm", "ollama", "openai"]
    assert registry.available("reranker") == [
        "none",
        "cross-encoder:PATH",
        "llm:GENERATOR_SPEC",
        "reader",
    ]
    assert registry.available("generator") == [
        "anthropic",
        "bedrock",
        "extractive",
        "gguf",
        "ollama",
        "openai",
    ]


@pytest.mark.parametrize(
    ("kind", "listed"),
    [
        ("embedder", "minilm, ollama, openai"),
        ("reranker", "none, cross-encoder:PATH, llm:GENERATOR_SPEC, reader"),
        ("generator", "anthropic, bedrock, extractive, gguf, ollama, openai"),
    ],
)
def test_an_unknown_name_is_one_usage_error_listing_what_is_available(
    kind: str, listed: str
) -> None:
    with pytest.raises(UsageError) as exc:
        registry.create(kind, "nope:x", None)
    assert exc.value.message == f"unknown {kind} 'nope:x'; available: {listed}"


def test_the_thin_getters_keep_their_messages() -> None:
    with pytest.raises(UsageError, match=r"^unknown generator 'gpt-9'; available: anthropic, "):
        get_generator("gpt-9")
    with pytest.raises(UsageError, match=r"^unknown embedder 'bert'; available: minilm, "):
        get_embedder("bert")
    with pytest.raises(UsageError, match=r"^unknown reranker 'colbert'; available: none, "):
        get_reranker("colbert")


@pytest.mark.parametrize("call", ["available", "create", "register"])
def test_an_unknown_kind_is_a_programming_error(call: str) -> None:
    with pytest.raises(ValueError, match=r"unknown backend kind 'judge'; kinds: embedder, "):
        if call == "available":
            registry.available("judge")
        elif call == "create":
            registry.create("judge", "x", None)
        else:
            registry.register("judge", "x", EchoGenerator.from_spec)


@pytest.mark.parametrize("name", ["", "a:b", " echo"])
def test_a_name_that_could_never_be_asked_for_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="without ':' or spaces"):
        registry.register("generator", name, EchoGenerator.from_spec)


def test_a_registered_factory_gets_the_arg_and_the_options() -> None:
    registry.register("generator", "echo", EchoGenerator.from_spec)
    options = GeneratorOptions(base_url="http://127.0.0.1:1", timeout_s=3)
    gen = get_generator("echo:a:b", options)
    assert isinstance(gen, EchoGenerator)
    assert (gen.arg, gen.options) == ("a:b", options)
    bare = get_generator("echo")
    assert isinstance(bare, EchoGenerator) and bare.arg == ""
    assert "echo" in registry.available("generator")


def test_a_string_factory_is_imported_only_when_asked_for() -> None:
    registry.register("generator", "later", "groundqa_no_such_module:make")
    assert "later" in registry.available("generator")
    with pytest.raises(ModuleNotFoundError, match="groundqa_no_such_module"):
        get_generator("later")
    registry.register("generator", "echo", f"{__name__}:EchoGenerator.from_spec")
    assert isinstance(get_generator("echo:x"), EchoGenerator)


def test_a_registration_can_replace_a_built_in_and_show_its_arg() -> None:
    registry.register("reranker", "llm", EchoGenerator.from_spec, "MODEL")
    assert registry.available("reranker") == ["none", "cross-encoder:PATH", "llm:MODEL", "reader"]
    assert isinstance(get_reranker("llm:x"), EchoGenerator)


@pytest.mark.parametrize(
    ("kind", "spec", "refusal"),
    [
        ("embedder", "minilm:int4", "unknown minilm runtime 'int4'"),
        ("embedder", "ollama:", "ollama: name an embedding model"),
        ("embedder", "openai:", "openai: name an embedding model"),
        ("reranker", "cross-encoder:", "cross-encoder: name a local model directory"),
        ("reranker", "llm:", "llm reranker: generator '' is not supported"),
        ("generator", "ollama:", "ollama: name a model"),
        ("generator", "openai:", "openai: name a model"),
        ("generator", "anthropic:", "anthropic: name a model"),
        ("generator", "bedrock:", "bedrock: name a model"),
        ("generator", "gguf:", "gguf: name a model file"),
    ],
)
def test_every_built_in_resolves_to_its_own_factory(kind: str, spec: str, refusal: str) -> None:
    """Each "module:attribute" of the built-in table names a real factory: asked for with a
    missing argument, the backend itself answers (not an import or attribute error)."""
    options = EmbedderOptions() if kind == "embedder" else GeneratorOptions()
    with pytest.raises(UsageError, match=refusal):
        registry.create(kind, spec, options)


def test_the_registry_alone_is_complete_and_loads_no_stage_or_sdk() -> None:
    code = """
import sys
from groundqa import registry
heavy = ("httpx", "anthropic", "boto3", "onnxruntime", "sentence_transformers", "llama_cpp")
stages = ("groundqa.generate", "groundqa.embed", "groundqa.retrieve")
print(sorted(m for m in (*heavy, *stages) if m in sys.modules))
print(registry.available("generator"))
print(registry.create("generator", "extractive", None).name)
print(registry.create("reranker", "none", None))
print(sorted(m for m in heavy if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "[]",
        "['anthropic', 'bedrock', 'extractive', 'gguf', 'ollama', 'openai']",
        "extractive",
        "None",
        "[]",
    ]
