"""One registry for every kind of swappable backend: embedders, rerankers, generators.

A config string names a backend: `NAME` or `NAME:ARG` (`minilm`,
`ollama:llama3.1:8b`, `cross-encoder:/models/reranker`). The registry maps a
(kind, NAME) pair to a factory called as `factory(ARG, options)`, where the
options are the kind's own settings object (`EmbedderOptions`,
`GeneratorOptions`). `get_embedder`, `get_reranker` and `get_generator` are thin
functions over `create`.

Built-in backends are entries like any other, written below as
`"module:attribute"` strings and imported only when one is asked for. So
importing this module loads no stage and no SDK, a process that never asks for
a model never loads its HTTP client, and the table is complete whether or not
the stage that owns a backend has been imported. An optional backend registers
the same way, with a factory or such a string.

It refuses what it cannot resolve: an unknown name is a `UsageError` that lists
what is available; an unknown kind, or a name that holds `:` (it could never be
asked for), is a programming error (`ValueError`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groundqa.errors import UsageError

KINDS = ("embedder", "reranker", "generator")
# The spec that asks for no backend of an optional kind; `available` lists it first.
NONE = "none"

Factory = Callable[[str, Any], Any]


@dataclass(frozen=True)
class _Entry:
    target: Factory | str  # a factory, or "module:attribute" naming one
    arg: str = ""  # what ARG is ("PATH"), shown by `available`; empty when not shown


_BUILTINS: dict[tuple[str, str], _Entry] = {
    ("embedder", "minilm"): _Entry("groundqa.embed.minilm:from_spec"),
    ("embedder", "ollama"): _Entry("groundqa.embed.remote:OllamaEmbedder.from_spec"),
    ("embedder", "openai"): _Entry("groundqa.embed.remote:OpenAIEmbedder.from_spec"),
    ("reranker", NONE): _Entry("groundqa.retrieve.rerank:no_reranker"),
    ("reranker", "cross-encoder"): _Entry(
        "groundqa.retrieve.rerank:CrossEncoderReranker.from_spec", "PATH"
    ),
    ("reranker", "llm"): _Entry("groundqa.retrieve.rerank:LLMReranker.from_spec", "GENERATOR_SPEC"),
    ("reranker", "reader"): _Entry("groundqa.read.rerank:ReaderReranker.from_spec"),
    ("generator", "extractive"): _Entry("groundqa.generate:extractive_generator"),
    ("generator", "ollama"): _Entry("groundqa.generate.ollama:OllamaGenerator.from_spec"),
    ("generator", "openai"): _Entry("groundqa.generate.openai_compat:OpenAIGenerator.from_spec"),
    ("generator", "anthropic"): _Entry("groundqa.generate.anthropic:AnthropicGenerator.from_spec"),
    ("generator", "bedrock"): _Entry("groundqa.generate.bedrock:BedrockGenerator.from_spec"),
    ("generator", "gguf"): _Entry("groundqa.generate.gguf:GGUFGenerator.from_spec"),
}

_ENTRIES: dict[str, dict[str, _Entry]] = {kind: {} for kind in KINDS}
for (_kind, _name), _entry in _BUILTINS.items():
    _ENTRIES[_kind][_name] = _entry


def _entries(kind: str) -> dict[str, _Entry]:
    entries = _ENTRIES.get(kind)
    if entries is None:
        raise ValueError(f"unknown backend kind {kind!r}; kinds: {', '.join(KINDS)}")
    return entries


def register(kind: str, name: str, factory: Factory | str, arg: str = "") -> None:
    """Make `name` (or `name:ARG`) of `kind` resolvable by `create`, replacing any entry
    of that name. `factory` is a callable or a lazily imported `"module:attribute"`;
    `arg` names ARG in `available` ("PATH")."""
    entries = _entries(kind)
    if not name or ":" in name or name != name.strip():
        raise ValueError(f"a {kind} name must be non-empty, without ':' or spaces: {name!r}")
    entries[name] = _Entry(factory, arg)


def available(kind: str) -> list[str]:
    """Every spec form of `kind`, sorted, `none` first where the kind has it:
    `["none", "cross-encoder:PATH", "llm:GENERATOR_SPEC", "reader"]`."""
    forms = {name: f"{name}:{e.arg}" if e.arg else name for name, e in _entries(kind).items()}
    return [forms[name] for name in sorted(forms, key=lambda name: (name != NONE, name))]


def _resolve(target: Factory | str) -> Factory:
    if not isinstance(target, str):
        return target
    module, _, path = target.partition(":")
    obj: Any = importlib.import_module(module)
    for attr in path.split("."):
        obj = getattr(obj, attr)
    factory: Factory = obj
    return factory


def create(kind: str, spec: str, options: object) -> Any:
    """The backend `spec` names, built by its factory with `options`.

    An unknown name is a `UsageError`: `unknown generator 'x'; available: ...`.
    """
    name, _, arg = spec.partition(":")
    entry = _entries(kind).get(name)
    if entry is None:
        raise UsageError(f"unknown {kind} {spec!r}; available: {', '.join(available(kind))}")
    return _resolve(entry.target)(arg, options)


__all__ = ["KINDS", "NONE", "Factory", "available", "create", "register"]
