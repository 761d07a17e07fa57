"""The package's imports point down only, and no module imports itself back through others.

Every import is counted, the ones written inside functions included (they run too, only
later); those under ``if TYPE_CHECKING:`` are not (they never run). Layers, lowest first:

    the contract      modelwire.message, modelwire.event (and the helpers they stand on)
    the kits          modelwire.adapters, modelwire.formatters
    the protocols     modelwire.protocols (a package per wire protocol, the registry)
    the models        modelwire.models (transport, config, capabilities: the network I/O)
    the rest          agent, cassettes, serve, testing, integrations, conform, the CLI
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "modelwire"

# The top-level names of each layer; a module may import its own layer or any below it.
LAYERS = [
    {
        "_version",
        "_ids",
        "_secrets",
        "_sync",
        "_record",
        "_record_code",
        "_record_convert",
        "_record_fields",
        "errors",
        "sources",
    },
    {"message", "event"},
    {"adapters", "formatters"},
    {"protocols", "cost", "telemetry"},
    {"models"},
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["modelwire", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modelwire modules ``name`` imports, at any depth of its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for guard in ast.walk(tree)
        if isinstance(guard, ast.If) and "TYPE_CHECKING" in ast.unparse(guard.test)
        for stmt in guard.body
        for node in ast.walk(stmt)
    }
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{source}.{alias.name}"
                out.add(target if target in modules else source)
    return {m for m in out if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    return next((i for i, names in enumerate(LAYERS) if top in names), len(LAYERS))


def test_imports_point_down_only():
    upward = [
        f"{module} imports {target}"
        for module, targets in sorted(_graph().items())
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert upward == [], "\n".join(upward)


def test_no_module_imports_itself_back():
    graph = _graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                walk(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert cycles == [], "\n".join(cycles)


def test_the_walk_sees_imports_inside_functions():
    """The graph is read from the code: a function-level import is an edge."""
    graph = _graph()
    assert "modelwire.protocols.anthropic._body" in graph["modelwire.protocols.anthropic"]  # imported in methods
    assert "modelwire.formatters._toolids" in graph["modelwire.formatters._common"]


# -- no cloud named in generic code -------------------------------------------------------------

# A cloud's name as a word of code (a string, a name, an attribute), camelCase split.
CLOUD = re.compile(
    r"(?<![a-z])(aws|amazon|bedrock|azure|vertex|gcp|gcloud|googleapis|google cloud|sagemaker|watsonx|entra)(?![a-z])",
    re.IGNORECASE,
)
# (module, word): where a generic module still names a cloud, and why.
CLOUD_WORDS_KEPT = {
    ("adapters/__init__.py", "aws-eventstream"): "a framing's name (the format is AWS's), as sse and ndjson are",
    ("adapters/__init__.py", "AWSStreamDecoder"): "that framing's decoder, a public name of the kit",
    ("adapters/_base.py", "AWSStreamDecoder"): "the same",
    ("adapters/_decoders.py", "AWSStreamDecoder"): "the same (its home)",
    ("cassettes/_drift.py", "aws-eventstream"): "the same framing's name",
    ("testing/_conformance_parts.py", "aws-eventstream"): "the same framing's name",
}


def _words_of_code(path: Path) -> set[str]:
    """The strings, names and attributes of a module's code, its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words.add(node.value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            words.add(node.name)
        for field in ("id", "attr", "arg"):
            if isinstance(getattr(node, field, None), str):
                words.add(getattr(node, field))
        if isinstance(node, ast.alias):
            words.add(node.name)
    return words


def _cloud_words(path: Path) -> list[str]:
    found = []
    for word in _words_of_code(path):
        split = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", word).replace("_", " ")
        match = CLOUD.search(split)
        if match:
            found.append(word)
    return sorted(found)


def test_generic_modules_name_no_cloud():
    """Facts about a cloud (its credentials, endpoints, headers) live in the protocol package
    whose provider it is, or in its table rows: no module outside protocols/<name>/ names
    one in its code, but for the words kept above with their reason."""
    named = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "protocols" and len(relative.parts) > 2:
            continue  # a protocol's own package
        module = relative.as_posix()
        for word in _cloud_words(path):
            if not any(module == kept and kept_word in word for kept, kept_word in CLOUD_WORDS_KEPT):
                named.append(f"{module}: {word[:100]!r}")
    assert named == [], "\n".join(named)


def test_the_cloud_walk_sees_names_strings_and_camel_case(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        '"""Bedrock in a docstring is prose."""\nclass AWSStreamDecoder: pass\nx = "azure"\nvertex_url = 1\n'
    )
    assert _cloud_words(source) == ["AWSStreamDecoder", "azure", "vertex_url"]


def test_cloud_credentials_come_from_the_protocol_that_declares_them():
    from modelwire.errors import ConfigError
    from modelwire.protocols import credentials_for, get_protocol

    assert get_protocol("bedrock-converse").credential_kinds["aws"].startswith("modelwire.protocols.bedrock.")
    assert get_protocol("gemini").credential_kinds["google"].startswith("modelwire.protocols.gemini.")
    assert "AWS_SESSION_TOKEN" in get_protocol("bedrock-converse").secret_envs
    from modelwire.protocols import environ_prefixes

    assert get_protocol("bedrock-converse").environ_prefixes == ("AWS_",)
    assert {"AWS_", "GOOGLE_"} <= set(environ_prefixes())  # cleared while a plugin's cassette test runs
    assert get_protocol("openai-chat").credential_kinds["azure"].startswith("modelwire.protocols.openai_chat.")
    with pytest.raises(ConfigError, match=r"unknown credential kind 'kerberos'; the protocols declare: aws, azure"):
        credentials_for("kerberos")


def test_generic_code_reads_no_protocols_answer_fields():
    """Whether a frame is an error is each protocol's ``is_error_frame``: no module outside
    protocols/<name>/ reads a protocol's own answer fields (Chat's ``choices``, Gemini's
    ``candidates``) to decide it."""
    named = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "protocols" and len(relative.parts) > 2:
            continue
        strings = {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)}
        found = strings & {"choices", "candidates"}
        named += [f"{relative.as_posix()}: {word}" for word in sorted(found)]
    assert named == [], "\n".join(named)


def test_a_plugin_declaring_a_built_in_credential_kind_does_not_take_its_requests(monkeypatch):
    """A plugin protocol that declares ``aws`` too must not receive the headers and body a
    Bedrock request signs: the preset's own protocol, then the built-in ones, come first."""
    import modelwire.protocols as protocols
    from modelwire.protocols import credentials_for, get_protocol
    from modelwire.protocols.bedrock._credentials import AWSCredentials

    class Grabber(type(get_protocol("ollama"))):  # type: ignore[misc]
        name = "grabber"
        credential_kinds = {"aws": "modelwire.protocols.gemini._credentials:GoogleCredentials"}

    monkeypatch.setitem(protocols._registered, "grabber", Grabber())
    assert type(credentials_for("aws", "anthropic")) is AWSCredentials
    assert type(credentials_for("aws")) is AWSCredentials


def test_a_model_ids_cloud_prefix_comes_from_the_protocol_that_declares_it(monkeypatch):
    """``normalize`` strips what a protocol's ``model_id_prefix`` says its ids put before the
    model's own name: Bedrock's region and vendor, and a protocol registered at run time's."""
    from modelwire import protocols
    from modelwire.models.capabilities import normalize
    from modelwire.protocols import WireProtocol

    assert normalize("us-gov.anthropic.claude-sonnet-4-5-v1:0") == "claude-sonnet-4-5"
    assert normalize("acme.claude-sonnet-4-5") == "acme.claude-sonnet-4-5"  # no protocol declares it yet

    class Acme(WireProtocol):
        name = "toy-acme"
        model_id_prefix = r"(?:eu\.)?acme\."

        def apply_options(self, body, options, /, preset, model="", caps=None):
            raise NotImplementedError  # a toy: it builds no request

    monkeypatch.setitem(protocols._registered, "toy-acme", Acme())
    assert normalize("eu.acme.claude-sonnet-4-5") == "claude-sonnet-4-5"
    assert normalize("gpt-5.1") == "gpt-5-1"  # no dot before a digit: no prefix looked for


def test_a_signatures_credential_is_found_through_the_protocol_that_declares_it(monkeypatch):
    """The key id a signature scheme names inside its header is a sent secret because a
    protocol declares the scheme (SigV4's, on bedrock-converse); without ``schemes`` only the
    whole header is, and a plain key header never asks the protocols."""
    from modelwire import protocols
    from modelwire._secrets import sent_secrets
    from modelwire.protocols import WireProtocol, signed_schemes

    sigv4 = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, Signature=abc"
    assert "AKIDEXAMPLE" in sent_secrets("https://h/x", [("authorization", sigv4)], signed_schemes)
    assert sent_secrets("https://h/x", [("authorization", sigv4)]) == {sigv4}
    asked: list[int] = []

    def counted() -> dict:
        asked.append(1)
        return signed_schemes()

    assert sent_secrets("https://h/x?key=k-123456", [("x-api-key", "sk-123456")], counted) == {"sk-123456", "k-123456"}
    assert asked == []

    class Toy(WireProtocol):
        name = "toy-signed"
        signed_schemes = {"toy-sig": r"KeyId=(\w+)"}

        def apply_options(self, body, options, /, preset, model="", caps=None):
            raise NotImplementedError  # a toy: it builds no request

    monkeypatch.setitem(protocols._registered, "toy-signed", Toy())
    assert "K123" in sent_secrets("https://h/", [("authorization", "TOY-SIG KeyId=K123,Sig=1")], signed_schemes)
