"""Traces and metrics (OpenTelemetry, GenAI conventions) and the price of every reply."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest

from modelwire import cost
from modelwire.protocols import decode_sse
from modelwire.agent import Agent
from modelwire.message import Usage, UserMsg
from modelwire.models import load_model
from modelwire.protocols import all_presets, get_protocol, protocol_names
from modelwire.models.transport import RetryPolicy
from modelwire.testing import ProviderServer, Reply
from modelwire.testing import stream_reply as framed_reply
from modelwire.testing.sse import body

from paths import HAVE_SHARED, ROOT

otel_sdk = pytest.importorskip("opentelemetry.sdk", reason="the dev extra installs the OpenTelemetry SDK")
pytest.importorskip("genai_prices", reason="the dev extra installs genai-prices")

from opentelemetry import metrics, trace  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402


class _OnlyHere(InMemorySpanExporter):
    """The tracer provider is process-wide once set: spans are kept only while a test of
    this module runs, so other tests (the soak ones) do not pay for them."""

    active = False

    def export(self, spans):  # type: ignore[override]
        return super().export(spans) if self.active else None


SPANS = _OnlyHere()
READER = InMemoryMetricReader()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(SPANS))
trace.set_tracer_provider(_provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))

# The providers OpenTelemetry's GenAI conventions name (gen_ai.provider.name, its well-known
# values: https://opentelemetry.io/docs/specs/semconv/registry/attributes/gen-ai/); a provider
# they do not name is named by itself (its preset's name).
SEMCONV_PROVIDERS = {
    "anthropic", "aws.bedrock", "azure.ai.inference", "azure.ai.openai", "cohere", "deepseek", "gcp.gemini",
    "gcp.gen_ai", "gcp.vertex_ai", "groq", "ibm.watsonx.ai", "mistral_ai", "openai", "perplexity", "x_ai",
}  # fmt: skip


def _first_preset(protocol):
    from modelwire.testing.server import first_preset

    return all_presets()[first_preset(protocol)]


# For each registered protocol: its first preset with the model that preset gives as its example.
PRESETS = {name: f"{preset.name}:{preset.example}" for name in protocol_names() for preset in [_first_preset(name)]}


def _priced(protocol: str) -> bool:
    """Whether genai-prices (the price catalogue modelwire reads) prices that model."""
    import genai_prices

    preset = _first_preset(protocol)
    usage = genai_prices.Usage(input_tokens=100, output_tokens=20)
    try:
        return genai_prices.calc_price(usage, preset.example, provider_id=preset.price_id).total_price > 0
    except LookupError:
        return False


@pytest.fixture(autouse=True)
def fresh_spans():
    SPANS.clear()
    SPANS.active = True
    yield
    SPANS.active = False
    SPANS.clear()


def weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: sunny"


def local_time(city: str) -> str:
    """Local time in a city."""
    raise RuntimeError("clock broken")


def stream_reply(protocol, *blocks, **kw) -> Reply:
    return framed_reply(protocol, body(protocol, *blocks, **kw))


def model_takes_temperature(protocol):
    """What the capability table says of the protocol's example model (a fact with its source there)."""
    provider, name = PRESETS[protocol].split(":", 1)
    return load_model(f"{provider}:{name}", api_key="k", capability_lookup=False).capabilities.sampling is not False


def run_agent(server, protocol):
    provider, name = PRESETS[protocol].split(":", 1)
    sampled = (
        {"temperature": 0.2} if model_takes_temperature(protocol) else {}
    )  # a reasoning model (o4-mini) takes none
    model = server.model(protocol, name, preset=provider, max_tokens=500, pricing=True, **sampled)
    agent = Agent("Buddy", model, tools=[weather, local_time])
    ids = ("fc_1", "fc_2") if protocol == "gemini" else ("call_1", "call_2")
    server.script(
        stream_reply(
            protocol,
            ("tool", ids[0], "weather", '{"city": "Paris"}'),
            ("tool", ids[1], "local_time", '{"city": "Paris"}'),
            usage=(100, 20),
        ),
        stream_reply(protocol, ("text", "Sunny."), usage=(150, 10)),
    )
    return asyncio.run(agent.reply(UserMsg("user", "Weather and time in Paris?")))


@pytest.mark.parametrize("protocol", protocol_names())
def test_a_reply_with_two_parallel_tool_calls_gives_the_span_tree(protocol, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    with ProviderServer() as server:
        reply = run_agent(server, protocol)
    spans = SPANS.get_finished_spans()
    (root,) = [s for s in spans if s.name == "invoke_agent Buddy"]
    chats = [s for s in spans if s.name.startswith("chat ")]
    tools = sorted((s for s in spans if s.name.startswith("execute_tool ")), key=lambda s: s.name)
    assert len(chats) == 2 and [s.name for s in tools] == ["execute_tool local_time", "execute_tool weather"]
    for span in chats + tools:
        assert span.parent is not None and span.parent.span_id == root.context.span_id
        assert span.context.trace_id == root.context.trace_id
    first = min(chats, key=lambda s: s.start_time)
    a = first.attributes
    model = PRESETS[protocol].split(":", 1)[1]
    provider = a["gen_ai.provider.name"]
    assert provider in SEMCONV_PROVIDERS or provider == _first_preset(protocol).name
    assert (a["gen_ai.operation.name"], a["gen_ai.request.model"]) == ("chat", model)
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (100, 20)
    assert a["gen_ai.request.max_tokens"] == 500
    assert a.get("gen_ai.request.temperature") == (0.2 if model_takes_temperature(protocol) else None)
    assert a["server.address"] == "127.0.0.1" and "modelwire.time_to_first_token" in a
    assert list(a["gen_ai.response.finish_reasons"]) and a["modelwire.stop_reason"] == "tool_use"
    assert (a.get("modelwire.cost.total_usd", 0) > 0) == _priced(protocol)
    broken = tools[0].attributes
    (call,) = [c for c in reply.get_content_blocks("tool_call") if c.name == "local_time"]
    assert call.id == {"gemini": "fc_2", "ollama": call.id}.get(protocol, "call_2")  # Ollama gives no ids: one is made
    assert (broken["gen_ai.tool.name"], broken["gen_ai.tool.call.id"], broken["error.type"]) == (
        "local_time",
        call.id,
        "RuntimeError",
    )
    assert root.attributes["gen_ai.usage.input_tokens"] == reply.usage.input_tokens == 250
    assert not any(
        k.startswith(("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments"))
        for s in spans
        for k in s.attributes
    )


def test_content_is_recorded_only_when_asked(monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    with ProviderServer() as server:
        run_agent(server, "anthropic")
    spans = SPANS.get_finished_spans()
    chat = next(s for s in spans if s.name.startswith("chat "))
    assert "Weather and time in Paris?" in chat.attributes["gen_ai.input.messages"]
    tool = next(s for s in spans if s.name == "execute_tool weather")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"city": "Paris"}


def test_token_usage_and_duration_metrics():
    with ProviderServer() as server:
        run_agent(server, "openai-chat")
    data = READER.get_metrics_data()
    found = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    tokens = found["gen_ai.client.token.usage"]
    kinds = {dict(p.attributes)["gen_ai.token.type"] for p in tokens.data.data_points}
    assert kinds == {"input", "output"} and tokens.unit == "{token}"
    assert found["gen_ai.client.operation.duration"].unit == "s"


def test_an_error_ends_the_call_span_with_its_type():
    with ProviderServer() as server:
        server.script(
            Reply(
                status=429,
                body=b'{"error": {"type": "rate_limit_error", "message": "slow"}}',
                headers={"content-type": "application/json"},
            )
        )
        model = load_model(
            "anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url, retry=RetryPolicy(max_retries=0)
        )
        with pytest.raises(Exception):
            asyncio.run(model.complete([UserMsg("u", "hi")]))
    (span,) = SPANS.get_finished_spans()
    assert span.attributes["error.type"] == "rate_limit" and span.status.status_code.name == "ERROR"


def test_a_key_the_server_echoes_is_masked_in_the_span():
    key = "sk-ant-echoed-0123456789"
    with ProviderServer() as server:
        server.script(
            Reply(
                status=401,
                body=json.dumps(
                    {"error": {"type": "authentication_error", "message": f"invalid x-api-key {key}"}}
                ).encode(),
                headers={"content-type": "application/json"},
            )
        )
        model = load_model(
            "anthropic:claude-sonnet-4-5", api_key=key, base_url=server.url, retry=RetryPolicy(max_retries=0)
        )
        with pytest.raises(Exception):
            asyncio.run(model.complete([UserMsg("u", "hi")]))
    (span,) = SPANS.get_finished_spans()
    shown = json.dumps(
        [span.status.description, dict(span.attributes), [(e.name, dict(e.attributes)) for e in span.events]],
        default=str,
    )
    assert key not in shown and "***" in shown


def test_without_opentelemetry_nothing_of_it_is_imported(tmp_path):
    """In a fresh process where opentelemetry cannot be imported, a call works and imports none of it."""
    script = textwrap.dedent(
        """
        import importlib.abc, sys, asyncio
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ModuleNotFoundError(name)
        sys.meta_path.insert(0, Block())
        import importlib.util
        real = importlib.util.find_spec
        importlib.util.find_spec = lambda name, *a: None if name.startswith("opentelemetry") else real(name, *a)
        from modelwire.testing import ProviderServer, sse_reply
        from modelwire.testing.sse import body
        from modelwire.models import load_model
        from modelwire.message import UserMsg
        with ProviderServer() as server:
            server.script(sse_reply(body("anthropic", ("text", "hi there"))))
            model = load_model("anthropic:claude-test", api_key="k", base_url=server.url)
            reply = asyncio.run(model.complete([UserMsg("u", "hi")]))
        assert reply.get_text_content().strip() == "hi there"
        print("otel modules:", sorted(m for m in sys.modules if m.startswith("opentelemetry")))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert "otel modules: []" in done.stdout


def test_installed_but_unused_opentelemetry_is_not_imported_until_the_application_sets_it_up():
    """OpenTelemetry installed (as a dependency of something else) and set up by nobody: a
    call imports none of it; once the application sets up an SDK, the next call is traced."""
    script = textwrap.dedent(
        """
        import sys, asyncio
        from modelwire.testing import ProviderServer, sse_reply
        from modelwire.testing.sse import body
        from modelwire.models import load_model
        from modelwire.message import UserMsg
        with ProviderServer() as server:
            server.script(sse_reply(body("anthropic", ("text", "one"))), sse_reply(body("anthropic", ("text", "two"))))
            model = load_model("anthropic:claude-test", api_key="k", base_url=server.url)
            first = asyncio.run(model.complete([UserMsg("u", "hi")]))
            print("after the first call:", sorted(m for m in sys.modules if m.startswith("opentelemetry")))
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
            second = asyncio.run(model.complete([UserMsg("u", "hi")]))
        assert (first.get_text_content().strip(), second.get_text_content().strip()) == ("one", "two")
        print("spans:", [s.name for s in exporter.get_finished_spans()])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "MODELWIRE_TRACING": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "after the first call: []" in done.stdout
    assert "spans: ['chat claude-test']" in done.stdout


# -- cost ---------------------------------------------------------------------------------------------
# Expected prices are computed here by hand from each provider's published rates per million
# tokens (input / output / cache read / cache write), not by genai-prices.


def test_cache_tokens_are_priced_at_their_own_rates():
    usage = Usage(input_tokens=100, output_tokens=50, cache_input_tokens=2000, cache_creation_input_tokens=500)
    got = cost.price(usage, provider="anthropic", model="claude-sonnet-4-5", input_includes_cache=False)
    # Claude Sonnet 4.5: $3 input, $15 output, $0.30 cache read, $3.75 cache write
    assert got["total"] == pytest.approx(100 * 3e-6 + 50 * 15e-6 + 2000 * 0.30e-6 + 500 * 3.75e-6)


def test_an_unknown_model_has_no_price_and_says_so():
    got = cost.price(
        Usage(input_tokens=10, output_tokens=5), provider="openai", model="gpt-nonexistent-9", input_includes_cache=True
    )
    assert got["total"] is None and "no price for 'gpt-nonexistent-9'" in got["unknown"]
    local = cost.price(
        Usage(input_tokens=10, output_tokens=5), provider="ollama", model="qwen3", input_includes_cache=True
    )
    assert local["total"] is None and "catalogue" in local["unknown"]


RECORDED_COSTS = [
    # protocol, preset, recording, model, expected (published rates, per million tokens)
    (
        "anthropic",
        "anthropic",
        "pydantic-ai/test_anthropic_model_thinking_part_stream.0.sse",
        "claude-sonnet-4-20250514",
        43 * 3e-6 + 282 * 15e-6,
    ),
    (
        "openai-chat",
        "openai",
        "openai-python/f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin",
        "gpt-4o-2024-08-06",
        149 * 2.5e-6 + 60 * 10e-6,
    ),
    # gpt-5: $1.25 input, $0.125 cached input, $10 output; 8,320 of the 9,463 input tokens cached
    (
        "openai-responses",
        "openai-responses",
        "pydantic-ai/test_openai_responses_model_web_search_tool_stream.0.sse",
        "gpt-5-2025-08-07",
        (9463 - 8320) * 1.25e-6 + 8320 * 0.125e-6 + 582 * 10e-6,
    ),
    (
        "gemini",
        "google",
        "gemini/pydantic-ai__test_google_stream_usage_is_live_mid_stream.0.sse",
        "gemini-2.5-flash",
        18 * 0.30e-6 + 115 * 2.50e-6,
    ),
    # Nova Micro: $0.035 input, $0.14 output
    (
        "bedrock-converse",
        "bedrock",
        "bedrock/pydantic-ai__test_bedrock_model_stream.0.eventstream",
        "us.amazon.nova-micro-v1:0",
        13 * 0.035e-6 + 82 * 0.14e-6,
    ),
]


@pytest.mark.skipif(not HAVE_SHARED, reason="../shared/recorded-streams is not present")
@pytest.mark.parametrize("protocol, preset, path, model, expected", RECORDED_COSTS, ids=[r[0] for r in RECORDED_COSTS])
def test_recorded_replies_cost_what_the_published_rates_say(protocol, preset, path, model, expected, monkeypatch):
    """Through a real model call: the recorded body served by the local server."""
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    raw = (ROOT / path).read_bytes()
    with ProviderServer() as server:
        server.script(Reply(body=raw, pieces=[raw], headers={"content-type": get_protocol(protocol).content_type}))
        base = server.url + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
        reply = asyncio.run(
            load_model(
                f"{preset}:{model}", api_key="k", base_url=base, retry=RetryPolicy(max_retries=0), pricing=True
            ).complete([UserMsg("u", "hi")])
        )
    assert reply.cost["total"] == pytest.approx(expected, rel=1e-9)
    assert reply.cost["complete"] and reply.cost["source"].startswith("genai-prices")
    assert decode_sse  # the adapters are the same path: covered by the recorded-stream tests


def test_a_replys_cost_adds_up_its_calls_and_lists_the_unpriced_ones():
    with ProviderServer() as server:
        reply = run_agent(server, "anthropic")
    # two calls of Claude Sonnet 4.5: (100 in, 20 out) and (150 in, 10 out)
    assert reply.cost["total"] == pytest.approx((100 + 150) * 3e-6 + (20 + 10) * 15e-6)
    assert reply.cost["calls"] == 2 and reply.cost["complete"]
    with ProviderServer() as server:
        server.script(stream_reply("anthropic", ("text", "hi")))
        unknown = asyncio.run(
            load_model("anthropic:claude-imaginary", api_key="k", base_url=server.url, pricing=True).complete(
                [UserMsg("u", "hi")]
            )
        )
    assert (
        unknown.cost["total"] is None
        and not unknown.cost["complete"]
        and "claude-imaginary" in unknown.cost["unpriced"][0]
    )


def test_cost_is_priced_where_it_is_asked_for(monkeypatch):
    """Unasked, a call has no cost; ``MODELWIRE_PRICING=on`` prices every call, and an agent
    with a cost limit prices its model's calls (a limit it could not hold would be refused)."""
    from modelwire.agent import UsageLimits
    from modelwire.errors import ConfigError

    monkeypatch.delenv("MODELWIRE_PRICING", raising=False)
    with ProviderServer() as server:
        server.script(*(stream_reply("anthropic", ("text", "Hi."), usage=(100, 20)) for _ in range(3)))
        plain = load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url)
        assert plain.complete_sync("hi").cost is None
        limited = Agent("Buddy", plain, limits=UsageLimits(cost=1.0))
        reply = asyncio.run(limited.reply(UserMsg("u", "hi")))
        assert reply.cost["total"] == pytest.approx(100 * 3e-6 + 20 * 15e-6)
        monkeypatch.setenv("MODELWIRE_PRICING", "on")
        environment = load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url)
        assert environment.complete_sync("hi").cost["total"] == pytest.approx(100 * 3e-6 + 20 * 15e-6)
    refused = load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url, pricing=False)
    refused.ask_for_cost()  # pricing=False is never overruled
    assert refused.pricing is False
    monkeypatch.setenv("MODELWIRE_PRICING", "sometimes")
    with pytest.raises(ConfigError, match="MODELWIRE_PRICING='sometimes' must be on or off"):
        load_model("anthropic:claude-sonnet-4-5", api_key="k")


def test_after_a_failover_the_answering_calls_span_says_why_the_others_did_not():
    from modelwire.models import FallbackModel
    from modelwire.models.transport import RetryPolicy
    from modelwire.testing import ProviderServer, sse_reply
    from modelwire.testing.server import error_reply
    from modelwire.testing.sse import body

    overloaded = error_reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    with ProviderServer() as a, ProviderServer() as b:
        a.script(overloaded)
        b.script(sse_reply(body("openai-chat", ("text", "From the backup."))))
        primary = load_model(
            "anthropic:claude-sonnet-4-5", api_key="k", base_url=a.url, retry=RetryPolicy(max_retries=0)
        )
        backup = load_model("openai:gpt-4.1", api_key="k", base_url=b.url + "/v1", retry=RetryPolicy(max_retries=0))
        reply = asyncio.run(FallbackModel([primary, backup]).complete("Hi"))
    assert reply.get_text_content().strip() == "From the backup."
    spans = {s.name: s for s in SPANS.get_finished_spans() if s.name.startswith("chat ")}
    failed, answered = spans["chat claude-sonnet-4-5"], spans["chat gpt-4.1"]
    assert failed.status.status_code.name == "ERROR" and "modelwire.fallback.attempt" not in failed.attributes
    assert answered.attributes["modelwire.fallback.attempt"] == 1
    assert list(answered.attributes["modelwire.fallback.failed_models"]) == ["anthropic:claude-sonnet-4-5"]
    assert "Overloaded" in answered.attributes["modelwire.fallback.failed_errors"][0]


def test_the_price_catalogue_loads_in_a_thread_once_pricing_is_asked_for():
    """In a fresh process: nothing is loaded at import; ``pricing=True`` starts the loader in
    a thread when the model is loaded, the answer streams while it loads, and its end is
    priced."""
    import subprocess
    import sys

    probe = """
import asyncio, sys, threading
import modelwire
from modelwire import cost
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body
assert "genai_prices" not in sys.modules and not cost.ready()
with ProviderServer() as server:
    server.script(sse_reply(body("anthropic", ("text", "Hi."))))
    model = modelwire.load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url, pricing=True)
    seen = []
    async def main():
        async for event in model.stream("hi"):
            seen.append((event.type, any(t.name == "modelwire-prices" for t in threading.enumerate()) or cost.ready()))
            if event.type == "MODEL_CALL_END":
                assert event.cost["total"] is not None, event.cost
    asyncio.run(main())
assert all(loading for kind, loading in seen if kind != "MODEL_CALL_START"), seen
assert cost.ready() and "genai_prices" in sys.modules
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k != "MODELWIRE_DEBUG"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


@pytest.mark.parametrize("how", ["default", "option", "environment"])
def test_unpriced_calls_never_load_the_catalogue_and_no_call_waits_for_it(how):
    """By default (nothing asked for cost), with ``pricing=False`` or ``MODELWIRE_PRICING=off``,
    in a fresh process with genai-prices installed: the call streams and ends with no cost,
    and the price catalogue is never imported, not even in a thread."""
    import subprocess
    import sys

    option = "pricing=False, " if how == "option" else ""
    probe = f"""
import asyncio, sys, threading
import modelwire
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body
with ProviderServer() as server:
    server.script(sse_reply(body("anthropic", ("text", "Hi."))))
    model = modelwire.load_model("anthropic:claude-sonnet-4-5", {option}api_key="k", base_url=server.url)
    reply = model.complete_sync("hi")
assert reply.get_text_content() == "Hi." and reply.cost is None, reply.cost
assert "genai_prices" not in sys.modules and not any(t.name == "modelwire-prices" for t in threading.enumerate())
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k not in ("MODELWIRE_DEBUG", "MODELWIRE_PRICING")}
    if how == "environment":
        env["MODELWIRE_PRICING"] = "off"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
    from modelwire import load_model
    from modelwire.errors import ConfigError

    with pytest.raises(ConfigError, match="pricing='no' must be True or False"):
        load_model("anthropic:claude-sonnet-4-5", api_key="k", pricing="no")


def test_every_presets_price_id_is_in_the_catalogue_and_the_clouds_are_priced():
    """The price id lives on each preset: each one names a provider genai-prices has, and
    the presets added for Claude on the clouds and the Anthropic-compatible endpoints are
    priced (they were not, when the ids sat in a table of their own)."""
    genai_prices = pytest.importorskip("genai_prices")
    from modelwire.message import Usage
    from modelwire.models import all_presets

    catalogue = {p.id for p in genai_prices.data_snapshot.get_snapshot().providers}
    for preset in all_presets().values():
        if preset.price_id is not None:
            assert preset.price_id in catalogue, f"{preset.name}: {preset.price_id!r} is not a genai-prices provider"
    usage = Usage(input_tokens=1000, output_tokens=100)
    for provider, model in [
        ("bedrock-anthropic", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("vertex-anthropic", "claude-sonnet-4-5@20250929"),
        ("minimax", "MiniMax-M2"),
        ("azure-v1", "gpt-4.1"),
    ]:
        priced = cost.price(usage, provider=provider, model=model)
        assert priced["total"] and priced["total"] > 0, (provider, priced)
    assert cost.price(usage, provider="ollama", model="qwen3")["total"] is None  # a local server: no price, said so


@pytest.mark.parametrize("protocol", protocol_names())
def test_a_whole_answer_in_one_piece_still_records_its_first_token(protocol, caplog):
    # One piece holds the call's start, its answer and its end (a short answer read in one
    # socket read): the first token is recorded before the span ends, and nothing is set on
    # an ended span.
    provider, name = PRESETS[protocol].split(":", 1)
    raw = body(protocol, ("text", "Sunny."), usage=(10, 2))
    with ProviderServer() as server:
        server.script(Reply(body=raw, headers={"content-type": get_protocol(protocol).content_type}, pieces=[raw]))
        model = server.model(protocol, name, preset=provider)
        reply = asyncio.run(model.complete([UserMsg("user", "Weather?")]))
    assert reply.get_text_content("").strip() == "Sunny."
    (chat,) = [s for s in SPANS.get_finished_spans() if s.name.startswith("chat ")]
    assert "modelwire.time_to_first_token" in chat.attributes
    assert [e.name for e in chat.events] == ["gen_ai.first_token"]
    assert not [r for r in caplog.records if "ended span" in r.getMessage()]


def test_an_answer_that_comes_only_at_the_bodys_end_records_its_first_token():
    # One NDJSON line with the whole answer and no newline after it: the decoder gives
    # every event when the body ends, and the first token is still recorded before the
    # span ends.
    line = json.dumps(
        {
            "model": "llama3.2",
            "created_at": "t",
            "message": {"role": "assistant", "content": "Sunny."},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 10,
            "eval_count": 2,
        }
    ).encode()
    with ProviderServer() as server:
        server.script(Reply(body=line, headers={"content-type": get_protocol("ollama").content_type}, pieces=[line]))
        reply = asyncio.run(server.model("ollama", "llama3.2", preset="ollama").complete([UserMsg("user", "Weather?")]))
    assert reply.get_text_content("") == "Sunny."
    (chat,) = [s for s in SPANS.get_finished_spans() if s.name.startswith("chat ")]
    assert "modelwire.time_to_first_token" in chat.attributes
