"""``modelwire models --verify PROVIDER`` against local servers answering with Models-API
bodies in each provider's documented shape (each checked by the provider's own SDK type
where it has one), and ``modelwire models --crosscheck`` against the catalogs of the
libraries installed: the report, the exit status, and a patch the table's own reader takes.

Where each body's shape comes from:
- Anthropic ``GET /v1/models``: ``{data: [ModelInfo], first_id, has_more, last_id}``, paged
  with ``limit`` and ``after_id`` (https://platform.claude.com/docs/en/api/models/list); each
  ModelInfo validated by ``anthropic.types.ModelInfo``.
- OpenAI ``GET /v1/models``: ``{object: "list", data: [{id, object: "model", created,
  owned_by}]}`` (https://developers.openai.com/api/reference/resources/models, list);
  each row validated by ``openai.types.Model``.
- Gemini ``models.list``: ``{models: [Model], nextPageToken}`` paged with ``pageSize`` and
  ``pageToken`` (https://ai.google.dev/api/models); rows as a real answer quoted in
  https://discuss.ai.google.dev/t/list-models-shows-incomplete-invalid-response-for-gemma/73769
  (``inputTokenLimit``, ``outputTokenLimit``, ``supportedGenerationMethods``,
  ``temperature`` ...) with the ``thinking`` field of the Model resource; each validated by
  ``google.genai.types.Model``.
- OpenRouter ``GET /api/v1/models``: ``{data: [{id, canonical_slug, name, created,
  context_length, architecture: {input_modalities, output_modalities, tokenizer},
  top_provider: {context_length, max_completion_tokens, is_moderated}, pricing,
  supported_parameters}]}`` (https://openrouter.ai/docs/overview/models, "API Response
  Schema").
"""

from __future__ import annotations

import importlib.metadata
from datetime import datetime, timezone
from pathlib import Path

import pytest

from modelwire.cli import main
from modelwire.models.capabilities import assumed_from, entries_of, from_table, normalize
from modelwire.testing import ProviderServer
from modelwire.testing.server import error_reply, json_reply


def _today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


TODAY = _today()  # the day the last verify() ran on (set by it: a run may cross midnight)


@pytest.fixture(autouse=True)
def quiet_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MODELWIRE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MODELWIRE_DEBUG", "0")
    monkeypatch.chdir(tmp_path)  # no modelwire.toml of the checkout's


def verify(provider: str, patch: Path, capsys) -> tuple[int, str]:
    global TODAY
    before = _today()
    code = main(["models", "--verify", provider, "--write-patch", str(patch)])
    out = capsys.readouterr()
    after = _today()
    TODAY = after if after != before and after in out.out + out.err else before
    return code, out.out + out.err


def patch_entries(patch: Path) -> dict[str, tuple]:
    """The written patch read by the table's own reader: family -> (patterns, record)."""
    return {family: (patterns, record) for patterns, record, family in entries_of(patch.read_text(), "patch")}


def model_info(model: str, *, max_tokens: int, levels: tuple[str, ...], adaptive: bool = True) -> dict:
    from anthropic.types import ModelInfo

    yes = lambda v: {"supported": v}  # noqa: E731
    info = ModelInfo.model_validate(
        {
            "id": model,
            "type": "model",
            "display_name": model,
            "created_at": "2026-11-01T00:00:00Z",
            "lifecycle": "active",
            "max_tokens": max_tokens,
            "max_input_tokens": 1000000,
            "capabilities": {
                "batch": yes(True),
                "citations": yes(True),
                "code_execution": yes(True),
                "context_management": {"supported": True},
                "effort": {
                    "supported": True,
                    **{lvl: yes(lvl in levels) for lvl in ("low", "medium", "high", "max", "xhigh")},
                },
                "image_input": yes(True),
                "pdf_input": yes(True),
                "server_tools": {"supported": True, "web_search": yes(True), "code_execution": yes(True)},
                "structured_outputs": yes(True),
                "thinking": {
                    "supported": True,
                    "types": {
                        "adaptive": yes(adaptive),
                        "enabled": yes(not adaptive),
                        "disabled": yes(True),
                        "between_tools": yes(False),
                    },
                },
            },
        }
    )
    return info.model_dump(mode="json", exclude_none=True)


def test_verify_anthropic_reads_every_page_and_flags_the_id_no_row_names(tmp_path, capsys, monkeypatch):
    """Two pages (has_more, after_id): Claude Opus 4.7 answered with a smaller max_tokens than
    the row's, and claude-sonnet-5-7, which only the Sonnet 5 glob covers. The report says
    both, exit 1, and the patch holds an entry per id with the API as the source of what
    it published (server tools beyond what the API can speak of are not a difference)."""
    opus = model_info("claude-opus-4-7", max_tokens=64000, levels=("low", "medium", "high", "xhigh", "max"))
    sonnet = model_info("claude-sonnet-5-7", max_tokens=128000, levels=("low", "medium", "high"))
    pages = {
        "/v1/models?limit=1000": {
            "data": [opus],
            "first_id": "claude-opus-4-7",
            "has_more": True,
            "last_id": "claude-opus-4-7",
        },
        "/v1/models?limit=1000&after_id=claude-opus-4-7": {
            "data": [sonnet],
            "first_id": "claude-sonnet-5-7",
            "has_more": False,
            "last_id": "claude-sonnet-5-7",
        },
    }
    with ProviderServer() as server:
        server.respond = lambda r: json_reply(pages[r["path"]]) if r["path"] in pages else error_reply(404, {})
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        code, out = verify("anthropic", tmp_path / "patch.toml", capsys)
        asked = [(r["method"], r["path"], r["headers"].get("x-api-key")) for r in server.requests]
    assert code == 1, out
    assert asked == [("GET", path, "sk-test") for path in pages]
    assert "anthropic: 2 model(s), from " + f"{server.url}/v1/models (GET, {TODAY})" in out
    assert "  claude-opus-4-7: the table's Claude Opus 4.8, Opus 4.7 row" in out
    assert "      max_output_tokens: the table says 128000, anthropic says 64000" in out
    assert "      thinking_off: not in the table; anthropic says true" in out
    assert "  claude-sonnet-5-7: no row names it; assumed from Claude Sonnet 5" in out
    assert "      effort: the table says low, medium, high, xhigh, max, anthropic says low, medium, high" in out
    assert "server_tools" not in out  # web_fetch: not among what ModelInfo.capabilities speaks of
    assert "2 model(s) differ from the table (1 not named by a row)" in out

    entries = patch_entries(tmp_path / "patch.toml")
    source = f"{server.url}/v1/models (GET, {TODAY})"
    patterns, record = entries["claude-sonnet-5-7"]
    assert patterns == ("claude-sonnet-5-7",)
    assert record.effort == ("low", "medium", "high") and record.thinking_off is True
    assert record.sources["effort"].endswith(source)
    # the rest is the family's, each of its sources marked as what was assumed
    assert record.sampling is False and "assumed from the table's Claude Sonnet 5 row: " in record.sources["sampling"]
    patterns, record = entries["claude-opus-4-7"]
    assert record.max_output_tokens == 64000 and record.sources["max_output_tokens"].endswith(source)
    assert record.context_window == 1000000 and source not in record.sources["context_window"]  # agreed: kept


def test_verify_openai_lists_ids_only_and_leaves_out_what_is_not_a_chat_model(tmp_path, capsys, monkeypatch):
    """OpenAI's list says nothing but ids: gpt-4.1 and a dated gpt-4o are named by a row
    (nothing to say), gpt-4o-mini and gpt-6.3-sol only by a family's glob (flagged, each
    patch entry the family's row, marked assumed), and an embedding model is left out."""
    from openai.types import Model

    rows = [
        Model(id=i, object="model", created=1700000000, owned_by="system").model_dump(mode="json")
        for i in ("gpt-4.1", "gpt-4o-2024-08-06", "gpt-4o-mini", "gpt-6.3-sol", "text-embedding-3-small")
    ]
    with ProviderServer() as server:
        server.respond = lambda r: json_reply({"object": "list", "data": rows})
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        code, out = verify("openai", tmp_path / "patch.toml", capsys)
        (request,) = server.requests
    assert code == 1, out
    assert request["path"] == "/v1/models" and request["headers"]["authorization"] == "Bearer sk-test"
    assert "(1 listed id(s) not of its chat models left out: text-embedding-3-small)" in out
    assert "gpt-4.1" not in out.split("left out")[1]
    assert "  gpt-6.3-sol: no row names it; assumed from GPT-6 (other models of the family)" in out
    # a dated snapshot is the named model; a variant under the family's pattern is not
    assert (
        "gpt-4o-2024-08-06" not in out and "  gpt-4o-mini: no row names it; only the pattern of GPT-4.1, GPT-4o" in out
    )
    assert "2 model(s) differ from the table (2 not named by a row)" in out
    entries = patch_entries(tmp_path / "patch.toml")
    assert list(entries) == ["gpt-4o-mini", "gpt-6.3-sol"]
    patterns, record = entries["gpt-6.3-sol"]
    family = from_table("gpt-6.3-sol")
    assert record.known() == family.known()  # nothing published: the family's facts, as assumed
    assert all(s.startswith("table: gpt-6.3-sol: assumed from the table's GPT-6") for s in record.sources.values())


@pytest.mark.parametrize(
    "name,patterns,named",
    [
        ("claude-sonnet-4-5-20250929", ["claude-sonnet-4-5*"], True),
        ("gpt-4o-2024-08-06", ["gpt-4o*"], True),
        ("gemini-2-5-pro-preview-05-06", ["gemini-2-5-pro*"], True),
        ("gemini-2-5-flash", ["gemini-2-5-flash*"], True),
        ("gpt-5-1", ["gpt-5-1", "gpt-5-1-*"], True),
        ("gemini-2-5-flash-lite", ["gemini-2-5-flash*"], False),  # a variant
        ("gpt-4o-mini", ["gpt-4o*"], False),
        ("claude-sonnet-5-7", ["claude-sonnet-5*"], False),  # a version of its own
        ("gpt-6-2-sol", ["gpt-6*"], False),
    ],
)
def test_a_pattern_names_a_model_or_its_snapshot_not_a_variant(name, patterns, named):
    from modelwire.models._verify import names_exactly

    assert names_exactly(name, patterns) is named


def gemini_row(name: str, input_limit: int, output_limit: int, methods=("generateContent", "countTokens"), **more):
    from google.genai import types
    from google.genai.models import _Model_from_mldev

    row = {
        "name": f"models/{name}",
        "version": "001",
        "displayName": name,
        "inputTokenLimit": input_limit,
        "outputTokenLimit": output_limit,
        "supportedGenerationMethods": list(methods),
        "temperature": 1,
        "topP": 0.95,
        "topK": 64,
        "maxTemperature": 2,
        **more,
    }
    # the SDK's own reading of a Gemini API answer (supportedGenerationMethods -> supported_actions)
    converted = _Model_from_mldev(row)
    converted.pop("tuned_model_info", None)  # the SDK's converter copies the whole row there for tuned models
    read = types.Model.model_validate(converted)
    assert read.input_token_limit == input_limit and read.supported_actions == list(methods)
    return row


def test_verify_gemini_agrees_across_pages_and_exits_0(tmp_path, capsys, monkeypatch):
    """Gemini 2.5 Pro and Flash as the table has them, over two pages (nextPageToken); an
    embedding model (no generateContent) and Gemma (not a gemini- model) are not compared."""
    first = {
        "models": [
            gemini_row("gemini-2.5-pro", 1048576, 65536, thinking=True),
            gemini_row("embedding-001", 2048, 1, methods=("embedContent",)),
        ],
        "nextPageToken": "page/2=",
    }
    second = {
        "models": [
            gemini_row("gemini-2.5-flash", 1048576, 65536, thinking=True),
            gemini_row("gemma-3-27b-it", 131072, 8192),
        ]
    }
    with ProviderServer() as server:
        server.respond = lambda r: json_reply(second if "pageToken" in r["path"] else first)
        monkeypatch.setenv("GEMINI_API_KEY", "g-key")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        code, out = verify("google", tmp_path / "patch.toml", capsys)
        paths = [(r["path"], r["headers"].get("x-goog-api-key")) for r in server.requests]
    assert code == 0, out
    assert paths == [
        ("/v1beta/models?pageSize=1000", "g-key"),
        ("/v1beta/models?pageSize=1000&pageToken=page%2F2%3D", "g-key"),
    ]
    assert "google: 2 model(s)" in out and "gemma-3-27b-it" in out  # left out, and said so
    assert "the table names every model and agrees on every field" in out
    assert entries_of((tmp_path / "patch.toml").read_text()) == ()


def test_verify_openrouter_names_a_model_no_row_knows(tmp_path, capsys, monkeypatch):
    """OpenRouter's list: Claude Opus 4.7 as the table has it, and a model no row (nor
    family) covers, whose patch entry holds only what OpenRouter published, sourced."""

    def row(model_id, context, max_out, params, modalities):
        return {
            "id": model_id,
            "canonical_slug": model_id,
            "name": model_id,
            "created": 1760000000,
            "description": "",
            "context_length": context,
            "architecture": {"input_modalities": modalities, "output_modalities": ["text"], "tokenizer": "Other"},
            "top_provider": {"context_length": context, "max_completion_tokens": max_out, "is_moderated": False},
            "pricing": {"prompt": "0.000005", "completion": "0.000025", "request": "0", "image": "0"},
            "supported_parameters": params,
        }

    data = [
        row(
            "anthropic/claude-opus-4.7",
            1000000,
            128000,
            ["tools", "tool_choice", "reasoning", "include_reasoning", "structured_outputs", "max_tokens"],
            ["text", "image", "file"],
        ),
        row("acme/brand-new-1", 256000, 32000, ["tools", "temperature", "top_p", "max_tokens"], ["text"]),
    ]
    with ProviderServer() as server:
        server.respond = lambda r: json_reply({"data": data})
        monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
        monkeypatch.setenv("OPENROUTER_BASE_URL", server.url + "/api/v1")
        code, out = verify("openrouter", tmp_path / "patch.toml", capsys)
        (request,) = server.requests
    assert code == 1, out
    assert request["path"] == "/api/v1/models"
    assert "claude-opus-4.7" not in out.split("\n", 1)[1]  # agrees with its row
    assert "  acme/brand-new-1: no row names it, nor a family" in out
    assert "      context_window: not in the table; openrouter says 256000" in out
    ((patterns, record),) = patch_entries(tmp_path / "patch.toml").values()
    assert patterns == ("brand-new-1",) and normalize("acme/brand-new-1") == "brand-new-1"
    assert record.context_window == 256000 and record.max_output_tokens == 32000 and record.sampling is True
    assert record.forced_tool is False and record.thinking == ()
    source = f"table: acme/brand-new-1: {server.url}/api/v1/models (GET, {TODAY})"
    assert set(record.sources.values()) == {source}


def test_verify_a_refusal_is_the_providers_typed_error_and_a_provider_without_a_list_is_named(
    tmp_path, capsys, monkeypatch
):
    with ProviderServer() as server:
        server.respond = lambda r: error_reply(
            401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key sk-wrong"}}
        )
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        code, out = verify("anthropic", tmp_path / "patch.toml", capsys)
    assert code == 1 and "error (authentication)" in out and "invalid x-api-key ***" in out
    assert "sk-wrong" not in out  # what the server echoed, masked
    assert not (tmp_path / "patch.toml").exists()
    monkeypatch.setenv("GOOGLE_ACCESS_TOKEN", "t")
    code, out = verify("vertex", tmp_path / "patch.toml", capsys)
    assert code == 2 and "vertex: modelwire reads no model list of this provider" in out


def listing_presets() -> list:
    from modelwire.protocols import all_presets, get_protocol

    return [
        p
        for p in all_presets().values()
        if get_protocol(p.protocol).model_list_url("http://127.0.0.1:1", p) is not None
    ]


@pytest.mark.parametrize("preset", listing_presets(), ids=lambda p: p.name)
def test_every_model_list_refuses_an_answer_not_in_its_shape(preset):
    """Each protocol that reads a model list says so with a ValueError (which --verify
    reports as the provider's broken answer), never by listing nothing."""
    from modelwire.protocols import get_protocol

    wire = get_protocol(preset.protocol)
    url = wire.model_list_url("http://127.0.0.1:1", preset)
    assert url.startswith("http://127.0.0.1:1/")  # built from the base URL alone
    for bad in ({"data": "x", "models": "x"}, [1, 2], {"data": [{"no": "id"}], "models": [{"no": "name"}]}):
        with pytest.raises(ValueError):
            wire.models_listed(bad, preset)


@pytest.mark.parametrize(
    "body", [b"<html>busy</html>", b'{"data": {"id": "claude-opus-4-7"}}'], ids=["not-json", "not-a-list"]
)
def test_verify_an_answer_not_in_the_lists_shape_is_a_clear_error(body, tmp_path, capsys, monkeypatch):
    from modelwire.testing.server import Reply

    with ProviderServer() as server:
        server.respond = lambda r: Reply(body=body, headers={"content-type": "application/json"}, pieces=[body])
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        code, out = verify("anthropic", tmp_path / "patch.toml", capsys)
    assert code == 1 and "Traceback" not in out, out
    assert f"GET {server.url}/v1/models: " in out and ("not JSON" in out or "cannot read" in out)
    assert not (tmp_path / "patch.toml").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--write-patch", "p.toml"],
        ["--verify", "anthropic", "--crosscheck"],
        ["--verify", "anthropic", "--catalog", "x"],
    ],
    ids=["patch-alone", "both", "catalog-with-verify"],
)
def test_verify_flags_out_of_place_are_one_usage_line(args, capsys):
    assert main(["models", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("modelwire: ") and "go" in err[0]


# -- --crosscheck against the installed libraries ---------------------------------------------


def agentscope_cards() -> list[dict]:
    import importlib.util

    import yaml

    root = Path(next(iter(importlib.util.find_spec("agentscope").submodule_search_locations)))
    cards = [yaml.safe_load(p.read_text()) for p in sorted(root.glob("model/*/_models/*.yaml"))]
    return [c for c in cards if c.get("status", "active") == "active"]


def test_crosscheck_against_agentscope_and_genai_prices(tmp_path, capsys):
    """Ids the installed catalogs know and the table does not, and fields they state
    otherwise, each under the library and its version; the patch reads as a table."""
    from genai_prices.data import providers

    code = main(["models", "--crosscheck", "--write-patch", str(tmp_path / "patch.toml")])
    out = capsys.readouterr().out
    agentscope = f"AgentScope {importlib.metadata.version('agentscope')}"
    prices = f"genai-prices {importlib.metadata.version('genai-prices')}"
    assert code == 1, out
    assert f"{agentscope}: " in out and f"{prices}: " in out
    section = out.split(f"{prices}: ")[0]
    cards = agentscope_cards()
    unknown = [c["name"] for c in cards if from_table(c["name"]) is None and c["name"].startswith(("kimi-", "qwen-"))]
    assert unknown and all(f"  {name}: no row names it, nor a family" in section for name in unknown)
    assumed = [c["name"] for c in cards if assumed_from(c["name"])]
    assert all(f"  {name}: no row names it; assumed from {assumed_from(name)}" in section for name in assumed)
    # Where a card's context size and the row's context window both exist and differ, the report says so.
    differing = [
        (c["name"], from_table(c["name"]).context_window, c["context_size"])
        for c in cards
        if from_table(c["name"]) is not None
        and not assumed_from(c["name"])
        and from_table(c["name"]).context_window not in (None, c["context_size"])
    ]
    for name, ours, theirs in differing:
        assert f"      context_window: the table says {ours}, {agentscope} says {theirs}" in section
    anthropic = next(p for p in providers if p.id == "anthropic")
    old = [m.id for m in anthropic.models if not m.deprecated and from_table(m.id) is None]
    assert old and all(f"  {m}: no row names it" in out.split(f"{prices}: ")[1] for m in old)
    entries = entries_of((tmp_path / "patch.toml").read_text())
    cited = {s for _, record, _ in entries for s in record.sources.values()}
    assert any(agentscope in s for s in cited) and any(prices in s for s in cited)


# Entries as LiteLLM ships them, verbatim (BerriAI/litellm, litellm/model_prices_and_context_window_backup.json
# at 00035b69f416be24e2e323c13198d9b7d2d1bdf9): its spec entry, an image model, and three Bedrock chat models.
LITELLM_ENTRIES = {
    "sample_spec": {"litellm_provider": "one of https://docs.litellm.ai/docs/providers", "mode": "one of: chat, ..."},
    "1024-x-1024/dall-e-2": {
        "input_cost_per_pixel": 1.9e-08,
        "litellm_provider": "openai",
        "mode": "image_generation",
        "output_cost_per_pixel": 0.0,
    },
    "ai21.jamba-1-5-large-v1:0": {
        "input_cost_per_token": 2e-06,
        "litellm_provider": "bedrock",
        "max_input_tokens": 256000,
        "max_output_tokens": 256000,
        "max_tokens": 256000,
        "mode": "chat",
        "output_cost_per_token": 8e-06,
    },
    "us.writer.palmyra-x4-v1:0": {
        "input_cost_per_token": 2.5e-06,
        "litellm_provider": "bedrock_converse",
        "max_input_tokens": 128000,
        "max_output_tokens": 8192,
        "max_tokens": 8192,
        "mode": "chat",
        "output_cost_per_token": 1e-05,
        "supports_function_calling": True,
        "supports_pdf_input": True,
    },
    "amazon.nova-lite-v1:0": {
        "input_cost_per_token": 6e-08,
        "litellm_provider": "bedrock_converse",
        "max_input_tokens": 300000,
        "max_output_tokens": 10000,
        "max_tokens": 10000,
        "mode": "chat",
        "output_cost_per_token": 2.4e-07,
        "supports_function_calling": True,
        "supports_pdf_input": True,
        "supports_prompt_caching": True,
        "supports_response_schema": True,
        "supports_vision": True,
    },
}


def test_crosscheck_reads_a_litellm_catalog_given_with_catalog(tmp_path, capsys):
    """``--catalog`` names LiteLLM's JSON (laid out as installed: the version from the
    dist-info beside the package): its chat models of the families modelwire's providers
    name are compared (a Bedrock id under a cloud prefix no row names is flagged; Nova Lite
    agrees with its row), the rest (an image model, the spec entry, another host's own
    model) is not the table's business."""
    import json

    package = tmp_path / "site-packages" / "litellm"
    package.mkdir(parents=True)
    (tmp_path / "site-packages" / "litellm-1.80.0.dist-info").mkdir()
    catalog = package / "model_prices_and_context_window_backup.json"
    catalog.write_text(json.dumps(LITELLM_ENTRIES))
    code = main(["models", "--crosscheck", "--catalog", str(catalog), "--write-patch", str(tmp_path / "patch.toml")])
    out = capsys.readouterr().out
    assert code == 1, out
    section = out.split("LiteLLM 1.80.0: ")[1].split("AgentScope")[0]
    assert section.startswith("2 model(s), from LiteLLM 1.80.0, model_prices_and_context_window_backup.json")
    assert "  us.writer.palmyra-x4-v1:0: no row names it, nor a family" in section
    assert "nova-lite" not in section and "jamba" not in section and "dall-e" not in section
    entries = {family: record for _, record, family in entries_of((tmp_path / "patch.toml").read_text())}
    record = entries["us.writer.palmyra-x4-v1:0"]
    assert record.context_window == 128000 and record.max_output_tokens == 8192 and record.pdf_input is True
    assert set(record.sources.values()) == {
        "table: us.writer.palmyra-x4-v1:0: LiteLLM 1.80.0, model_prices_and_context_window_backup.json"
    }


REPO = Path(__file__).resolve().parent.parent
LITELLM_JSON = sorted(
    REPO.glob("tests/litellm/.venv/lib/python3*/site-packages/litellm/model_prices_and_context_window_backup.json")
)


@pytest.mark.skipif(not LITELLM_JSON, reason="LiteLLM's environment (tests/litellm/.venv, made by .ci/run) is not here")
def test_crosscheck_against_litellm(tmp_path, capsys):
    import json
    import re

    catalog = LITELLM_JSON[-1]
    code = main(["models", "--crosscheck", "--catalog", str(catalog)])
    out = capsys.readouterr().out
    version = (
        next(catalog.parent.parent.glob("litellm-*.dist-info")).name.removeprefix("litellm-").removesuffix(".dist-info")
    )
    library = f"LiteLLM {version}"
    assert code == 1 and f"{library}: " in out, out
    section = out.split(f"{library}: ")[1].split("AgentScope")[0]
    data = json.loads(catalog.read_text())
    claude = [k for k, v in data.items() if isinstance(v, dict) and v.get("mode") == "chat" and k.startswith("claude-")]
    unknown = {normalize(k) for k in claude if from_table(k) is None}
    flagged = {normalize(m) for m in re.findall(r"^  (\S+): no row names it", section, re.M)}
    assert unknown <= flagged  # one line per model, under whichever of its ids came first
