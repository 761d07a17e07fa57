"""The capability lookup against a local server answering like each provider's models
endpoint (shapes built through the official SDK types where they have one), including
slow, failing and malformed answers, and the on-disk cache shared by processes."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from datetime import datetime, timezone

import pytest

from modelwire.models import load_model
from modelwire.models._lookup import CapabilityCache
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.server import Reply, error_reply
from modelwire.testing.sse import body as sse_body

# How long a call here waits for the provider's published capabilities: long enough for a
# loaded machine, so that a test of what the answer does never depends on how fast it came.
WAIT = 30.0


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MODELWIRE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def anthropic_info(model: str, *, adaptive: bool, budget: bool, levels: tuple[str, ...]) -> dict:
    """A Models API answer, built and checked by the anthropic SDK's own ModelInfo type."""
    from anthropic.types import ModelInfo

    yes = lambda v: {"supported": v}  # noqa: E731
    info = ModelInfo.model_validate(
        {
            "id": model,
            "type": "model",
            "display_name": "A Claude",
            "created_at": datetime(2026, 11, 1, tzinfo=timezone.utc),
            "lifecycle": "active",
            "max_tokens": 64000,
            "max_input_tokens": 500000,
            "capabilities": {
                "batch": yes(True),
                "citations": yes(True),
                "code_execution": yes(False),
                "context_management": {"supported": False},
                "effort": {
                    "supported": bool(levels),
                    **{lvl: yes(lvl in levels) for lvl in ("low", "medium", "high", "max", "xhigh")},
                },
                "image_input": yes(True),
                "pdf_input": yes(False),
                "server_tools": {"supported": True, "web_search": yes(True), "code_execution": yes(False)},
                "structured_outputs": yes(True),
                "thinking": {
                    "supported": True,
                    "types": {
                        "adaptive": yes(adaptive),
                        "enabled": yes(budget),
                        "disabled": yes(True),
                        "between_tools": yes(False),
                    },
                },
            },
        }
    )
    return json.loads(info.model_dump_json())


def json_reply(data, **kw) -> Reply:
    return Reply(
        body=json.dumps(data).encode(),
        headers={"content-type": "application/json"},
        pieces=[json.dumps(data).encode()],
        **kw,
    )


def answer(server, *infos: Reply):
    """The models endpoint answers with ``infos`` (in order), the messages endpoint with a reply."""
    pending = list(infos)

    def respond(request):
        if request["method"] == "GET":
            return pending.pop(0) if pending else error_reply(404, {"error": {"message": "no such model"}})
        return sse_reply(sse_body("anthropic", ("text", "Four.")))

    server.respond = respond


def posts(server):
    return [r["json"] for r in server.requests if r["method"] == "POST"]


def gets(server):
    return [r for r in server.requests if r["method"] == "GET"]


def call(model, **options):
    return asyncio.run(asyncio.wait_for(model.complete("What is 2+2?", options=options or None), 20))


def test_what_anthropic_publishes_shapes_the_request_and_is_asked_once(cache_dir):
    with ProviderServer() as server:
        answer(server, json_reply(anthropic_info("claude-next", adaptive=True, budget=False, levels=("low", "high"))))
        model = load_model(
            "anthropic:claude-next",
            api_key="sk-test",
            base_url=server.url,
            capability_lookup=True,
            capability_lookup_seconds=WAIT,
        )
        call(model, thinking=True, reasoning_effort="high")
        call(model, thinking=True)
        (lookup,) = gets(server)
        assert lookup["path"] == "/v1/models/claude-next" and lookup["headers"]["x-api-key"] == "sk-test"
        first, second = posts(server)
        assert first["thinking"] == {"type": "adaptive"} and first["output_config"] == {"effort": "high"}
        caps = model.capabilities
        assert caps.effort == ("low", "high") and caps.max_output_tokens == 64000 and caps.context_window == 500000
        assert caps.sources["effort"] == "provider: GET /v1/models" and caps.pdf_input is False
        with pytest.raises(Exception, match="it takes low, high"):
            call(model, reasoning_effort="medium")  # refused before sending: no third POST
        assert len(posts(server)) == 2
    # Another model object (another process) reads the answer from the disk cache.
    with ProviderServer() as server:
        answer(server)
        again = load_model(
            "anthropic:claude-next",
            api_key="sk-test",
            base_url=server.url.replace("127.0.0.1", "localhost"),
            capability_lookup=True,
            capability_lookup_seconds=WAIT,
        )
        # A different base URL is a different endpoint: asked again (and here it says 404).
        call(again, thinking=True)
        assert len(gets(server)) == 1 and posts(server)[0]["thinking"]["type"] == "enabled"


def test_the_disk_cache_answers_a_new_model_object(cache_dir):
    with ProviderServer() as server:
        answer(server, json_reply(anthropic_info("claude-next", adaptive=True, budget=False, levels=())))
        call(
            load_model(
                "anthropic:claude-next",
                api_key="sk-test",
                base_url=server.url,
                capability_lookup=True,
                capability_lookup_seconds=WAIT,
            ),
            thinking=True,
        )
        call(
            load_model(
                "anthropic:claude-next",
                api_key="sk-test",
                base_url=server.url,
                capability_lookup=True,
                capability_lookup_seconds=WAIT,
            ),
            thinking=True,
        )
        assert len(gets(server)) == 1
        assert [p["thinking"] for p in posts(server)] == [{"type": "adaptive"}] * 2
    assert len(list(cache_dir.glob("capabilities/*.json"))) == 1


@pytest.mark.parametrize(
    "bad",
    [
        error_reply(500, {"error": {"message": "boom"}}),
        Reply(body=b"<html>not json", headers={"content-type": "text/html"}, pieces=[b"<html>not json"]),
        json_reply({"type": "model", "id": "claude-next"}),  # no capabilities
        json_reply(
            {
                "type": "model",
                "capabilities": {"thinking": {"supported": "yes"}, "effort": {"supported": True, "low": "x"}},
            }
        ),
        json_reply({"type": "model", "capabilities": []}),
        Reply(
            body=b'{"type": "model", "capa',
            headers={"content-type": "application/json"},
            pieces=[b'{"type": "model", "capa'],
            drop_after=1,
        ),
    ],
    ids=["500", "html", "no-capabilities", "wrong-types", "list", "cut"],
)
def test_a_failing_or_malformed_answer_changes_nothing(bad, cache_dir):
    with ProviderServer() as server:
        answer(server, bad)
        model = load_model(
            "anthropic:claude-next",
            api_key="sk-test",
            base_url=server.url,
            capability_lookup=True,
            capability_lookup_seconds=WAIT,
        )
        reply = call(model, thinking=True)
        assert reply.get_text_content().strip() == "Four."
        assert posts(server)[0]["thinking"]["type"] == "enabled"  # the protocol's own form
    assert not list(cache_dir.glob("capabilities/*.json"))  # nothing kept that could not be read


def test_a_slow_answer_is_abandoned_and_the_call_goes_on(cache_dir):
    info = json.dumps(anthropic_info("claude-next", adaptive=True, budget=False, levels=())).encode()
    with ProviderServer() as server:
        answer(
            server,
            Reply(
                body=info,
                headers={"content-type": "application/json"},
                pieces=[info[:10], info[10:]],
                stall_after=1,
                stall=30,
            ),
        )
        model = load_model(
            "anthropic:claude-next",
            api_key="sk-test",
            base_url=server.url,
            capability_lookup=True,
        )
        call(model, thinking=True)  # the default half second's bound: the 30 s stall was not waited for
        assert posts(server)[0]["thinking"]["type"] == "enabled"


def test_auto_asks_only_the_providers_own_endpoint_and_never_under_a_cassette(tmp_path):
    with ProviderServer() as server:
        answer(server, json_reply(anthropic_info("claude-next", adaptive=True, budget=False, levels=())))
        call(
            load_model("anthropic:claude-next", api_key="sk-test", base_url=server.url), thinking=True
        )  # "auto": a custom URL
        call(
            load_model("anthropic:claude-next", api_key="sk-test", base_url=server.url, capability_lookup=False),
            thinking=True,
        )
        from modelwire.cassettes import use_cassette

        with use_cassette(tmp_path / "c.json", "all"):
            call(
                load_model(
                    "anthropic:claude-next",
                    api_key="sk-test",
                    base_url=server.url,
                    capability_lookup=True,
                    capability_lookup_seconds=WAIT,
                ),
                thinking=True,
            )
        assert not gets(server) and len(posts(server)) == 3
        recorded = json.loads((tmp_path / "c.json").read_text())
        assert [i["request"]["method"] for i in recorded["interactions"]] == ["POST"]
    with pytest.raises(Exception, match="capability_lookup"):
        load_model("anthropic:claude-next", api_key="sk-test", capability_lookup="sometimes")


def test_no_lookup_when_no_option_depends_on_it():
    with ProviderServer() as server:
        answer(server, json_reply(anthropic_info("claude-next", adaptive=True, budget=False, levels=())))
        call(
            load_model(
                "anthropic:claude-next",
                api_key="sk-test",
                base_url=server.url,
                capability_lookup=True,
                capability_lookup_seconds=WAIT,
                max_tokens=100,
            )
        )
        assert not gets(server)


def test_gemini_models_get():
    from google.genai import types

    # The REST shape of models.get, checked by google-genai's own Model type.
    info = {
        "name": "models/gemini-next",
        "displayName": "Gemini Next",
        "inputTokenLimit": 2097152,
        "outputTokenLimit": 32768,
        "thinking": False,
    }
    checked = types.Model.model_validate(info)
    assert checked.input_token_limit == 2097152 and checked.thinking is False
    with ProviderServer() as server:
        server.respond = lambda request: (
            json_reply(info) if request["method"] == "GET" else sse_reply(sse_body("gemini", ("text", "Hi.")))
        )
        model = load_model(
            "google:gemini-next",
            api_key="g-key",
            base_url=server.url,
            capability_lookup=True,
            capability_lookup_seconds=WAIT,
        )
        with pytest.raises(Exception, match="does not think"):
            call(model, thinking=True)
        (lookup,) = gets(server)
        assert lookup["path"] == "/v1beta/models/gemini-next" and lookup["headers"]["x-goog-api-key"] == "g-key"
        assert (
            model.capabilities.context_window == 2097152
            and model.capabilities.sources["context_window"] == "provider: models.get"
        )


def test_openrouter_model_list():
    # OpenRouter's GET /models, as its API reference documents each entry.
    listing = {
        "data": [
            {"id": "other/model", "context_length": 8192, "supported_parameters": ["temperature"]},
            {
                "id": "acme/strict-model",
                "context_length": 131072,
                "architecture": {"input_modalities": ["text"], "output_modalities": ["text"]},
                "top_provider": {"max_completion_tokens": 16384, "is_moderated": False},
                "supported_parameters": ["tools", "tool_choice", "max_tokens", "response_format"],
            },
        ]
    }
    with ProviderServer() as server:
        server.respond = lambda request: (
            json_reply(listing) if request["method"] == "GET" else sse_reply(sse_body("openai-chat", ("text", "Hi.")))
        )
        model = load_model(
            "openrouter:acme/strict-model",
            api_key="or-key",
            base_url=server.url + "/v1",
            capability_lookup=True,
            capability_lookup_seconds=WAIT,
        )
        with pytest.raises(Exception, match="temperature"):
            call(model, temperature=0.3)  # the model lists no sampling parameters
        caps = model.capabilities
        assert (
            caps.structured_output,
            caps.image_input,
            caps.context_window,
            caps.max_output_tokens,
            caps.thinking,
        ) == (False, False, 131072, 16384, ())
        assert gets(server)[0]["path"] == "/v1/models"


def _hammer(folder: str, n: int, rounds: int, out) -> None:
    from pathlib import Path

    cache = CapabilityCache(Path(folder))
    seen = 0
    for i in range(rounds):
        cache.put("https://api.example/v1/models/m", "m", {"writer": n, "round": i, "pad": "x" * 5000})
        fresh = CapabilityCache(Path(folder))  # no memory: read from disk
        data = fresh.get("https://api.example/v1/models/m", "m")
        if data is None or set(data) != {"writer", "round", "pad"} or len(data["pad"]) != 5000:
            out.put(f"writer {n} read {data!r:.80}")
            return
        seen += 1
    out.put(seen)


def test_the_disk_cache_is_safe_under_concurrent_processes(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    workers = [ctx.Process(target=_hammer, args=(str(tmp_path), n, 150, out)) for n in range(4)]
    for w in workers:
        w.start()
    results = [out.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(60)
    assert results == [150] * 4, results
    assert [p.name for p in tmp_path.iterdir()] == [
        f"{CapabilityCache.key('https://api.example/v1/models/m', 'm')}.json"
    ]  # no temp files left


def test_the_cache_expires():
    now = [1000.0]
    cache = CapabilityCache(None, ttl=60, clock=lambda: now[0])
    cache.put("u", "m", {"a": 1})
    assert cache.get("u", "m") == {"a": 1}
    now[0] += 61
    assert cache.get("u", "m") is None


def test_models_capabilities_live_prints_where_the_table_has_drifted(tmp_path):
    """``modelwire models --capabilities MODEL --live`` asks the provider afresh (a local
    server answering in the Models API's shape, built by the anthropic SDK's own type) and
    prints each field where the shipped table differs, exit 1; a field only the provider
    says is listed, not counted; 0 when nothing both know differs."""
    import os
    import re
    import subprocess
    import sys

    published = anthropic_info("claude-opus-4-7", adaptive=True, budget=False, levels=("low", "high"))
    with ProviderServer() as server:
        answer(
            server,
            json_reply(published),
            json_reply(anthropic_info("claude-next", adaptive=True, budget=False, levels=("low", "high"))),
        )
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": "sk-test",
            "ANTHROPIC_BASE_URL": server.url,
            "MODELWIRE_DEBUG": "0",
            "MODELWIRE_CACHE_DIR": str(tmp_path),
        }

        def live(model):
            cmd = [sys.executable, "-m", "modelwire", "models", "--capabilities", model, "--live"]
            return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)

        drifted, unknown = live("anthropic:claude-opus-4-7"), live("anthropic:claude-next")
        asked = len(gets(server))
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr
    assert (
        "effort: the table says low, medium, high, xhigh, max, the provider says low, high (the provider wins)"
        in drifted.stdout
    )
    # the fields where the answer given differs from the Opus 4.7 row, and only those
    assert sorted(re.findall(r"^  (\w+): the table says", drifted.stdout, re.M)) == [
        "context_window",
        "effort",
        "max_output_tokens",
        "pdf_input",
        "server_tools",
    ]
    assert (
        "thinking_off: not in the table; the provider says true" in drifted.stdout
        and "5 field(s) drifted" in drifted.stdout
    )
    assert unknown.returncode == 0 and "agrees" in unknown.stdout and "not in the table" in unknown.stdout, (
        unknown.stdout + unknown.stderr
    )
    assert asked == 2  # each run asked the provider, neither read a kept answer


@pytest.mark.parametrize("provider", ["gemini", "openrouter"])
def test_models_capabilities_live_against_gemini_and_openrouter(tmp_path, provider):
    """``--live`` on the two other published sources: Gemini's models.get (the shape
    google-genai's Model type checks) and OpenRouter's model list. Each reports where the
    shipped table differs from what the provider says now."""
    import os
    import subprocess
    import sys

    from google.genai import types

    if provider == "gemini":
        info = {
            "name": "models/gemini-2.5-pro",
            "displayName": "Gemini 2.5 Pro",
            "inputTokenLimit": 2097152,
            "outputTokenLimit": 65536,
            "thinking": True,
        }
        types.Model.model_validate(info)
        spec, env_key, path = "google:gemini-2.5-pro", {"GEMINI_API_KEY": "g-key", "GOOGLE_GEMINI_BASE_URL": None}, ""
        drift = "context_window: the table says 1048576, the provider says 2097152 (the provider wins)"
    else:
        info = {
            "data": [
                {
                    "id": "anthropic/claude-opus-4.7",
                    "context_length": 1000000,
                    "architecture": {"input_modalities": ["text", "image"]},
                    "top_provider": {"max_completion_tokens": 64000},
                    "supported_parameters": ["tools", "tool_choice", "reasoning", "structured_outputs"],
                }
            ]
        }
        spec, env_key, path = (
            "openrouter:anthropic/claude-opus-4.7",
            {"OPENROUTER_API_KEY": "or-key", "OPENROUTER_BASE_URL": None},
            "/v1",
        )
        drift = "max_output_tokens: the table says 128000, the provider says 64000 (the provider wins)"
    with ProviderServer() as server:
        server.respond = lambda request: json_reply(info)
        env = {**os.environ, "MODELWIRE_DEBUG": "0", "MODELWIRE_CACHE_DIR": str(tmp_path)}
        for name, value in env_key.items():
            env[name] = value if value is not None else server.url + path
        run = subprocess.run(
            [sys.executable, "-m", "modelwire", "models", "--capabilities", spec, "--live"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        asked = gets(server)
    assert run.returncode == 1 and drift in run.stdout, run.stdout + run.stderr
    assert len(asked) == 1


def test_a_model_no_row_names_is_looked_up_on_its_first_call_and_the_assumption_logged(cache_dir, caplog):
    """claude-sonnet-5-7 matches only Claude Sonnet 5's glob: its first call asks the Models API
    even with no option that depends on it, the log says what was assumed (once), and what
    the provider publishes wins over the family's rules (thinking turned down with
    between_tools where disabled is not taken, as the SDK's ModelInfo says)."""
    info = anthropic_info("claude-sonnet-5-7", adaptive=True, budget=False, levels=("low", "medium", "high"))
    info["capabilities"]["thinking"]["types"]["disabled"] = {"supported": False}
    info["capabilities"]["thinking"]["types"]["between_tools"] = {"supported": True}
    with ProviderServer() as server:
        answer(server, json_reply(info))
        model = load_model(
            "anthropic:claude-sonnet-5-7",
            api_key="sk-test",
            base_url=server.url,
            capability_lookup=True,
            capability_lookup_seconds=WAIT,
        )
        with caplog.at_level("WARNING", logger="modelwire.models"):
            call(model)
            call(model, thinking=False, reasoning_effort="low")
        assert len(gets(server)) == 1
        said = [r.getMessage() for r in caplog.records if "assumed from" in r.getMessage()]
        assert len(said) == 1 and "Claude Sonnet 5" in said[0] and "the provider publishes" in said[0]
        assert posts(server)[1]["thinking"] == {"type": "between_tools"}
        assert model.capabilities.sources["thinking_off_as"] == "provider: GET /v1/models"


def test_the_lookup_budget_is_a_number_of_seconds():
    for wrong in (0, -1, "soon", True):
        with pytest.raises(Exception, match="capability_lookup_seconds"):
            load_model("anthropic:claude-next", api_key="sk-test", capability_lookup_seconds=wrong)
