"""The protocol registry: one place per protocol, provenance per provider, AgentScope's
messages replayed right, and every option either mapped or refused on every preset."""

from __future__ import annotations

import base64
import json
import re
import warnings
from pathlib import Path

import pytest
import sdk_params

from modelwire.errors import UnknownProtocolError, UnsupportedOptionError
from modelwire.message import AssistantMsg, Msg, ToolResultBlock, UserMsg, origin
from modelwire.models import all_presets, load_model
from modelwire.protocols import Capabilities, get_protocol, protocol_names
from modelwire.testing import conformance

SRC = Path(__file__).resolve().parents[1] / "src" / "modelwire"


def fmt(preset: str, messages, tools=None, **options):
    """The payload a preset's model would send (the formatter the model layer builds)."""
    model = load_model(f"{preset}:m", api_key="k", base_url="http://127.0.0.1:9", **options)
    return model.build_request(messages, tools)[0]


# -- the registry ---------------------------------------------------------------------------------


def test_builtin_protocols_are_registered_with_their_parts():
    assert set(protocol_names()) >= {
        "anthropic",
        "openai-chat",
        "openai-responses",
        "gemini",
        "bedrock-converse",
        "ollama",
    }
    for name in protocol_names():
        proto = get_protocol(name)
        assert proto.name == name and isinstance(proto.capabilities, Capabilities)
        assert proto.adapter_class().protocol == name
        assert proto.formatter_class().protocol == name


def _built_in_protocols() -> dict[str, str]:
    """Each protocol package of modelwire (a folder of modelwire/protocols whose module gives
    a PROTOCOL), by its protocol's name: the entry point that should name it."""
    import importlib

    import modelwire.protocols as package

    found = {}
    for folder in sorted(Path(package.__file__).parent.iterdir()):
        if (folder / "__init__.py").is_file() and not folder.name.startswith("_"):
            module = importlib.import_module(f"modelwire.protocols.{folder.name}")
            found[module.PROTOCOL.name] = f"modelwire.protocols.{folder.name}:PROTOCOL"
    return found


def test_built_ins_are_entry_points_of_the_package_as_a_plugin_declares_them():
    """The built-in protocols and every preset they bring are read from modelwire's own
    entry points (its installed metadata), the path a plugin takes: no table in the code.
    Each protocol package is named there, and each of its presets, and nothing else is."""
    from importlib.metadata import distribution

    entries = distribution("modelwire").entry_points
    declared = {ep.name: ep.value for ep in entries if ep.group == "modelwire.protocols"}
    presets = {ep.name: ep.value for ep in entries if ep.group == "modelwire.presets"}
    packages = _built_in_protocols()
    assert declared == packages
    brought: dict[str, str] = {}
    for name, value in declared.items():
        assert all(p.protocol == name for p in get_protocol(name).presets)
        brought.update(dict.fromkeys((p.name for p in get_protocol(name).presets), value))  # each names its protocol
    assert presets == brought


def test_resolving_a_model_string_loads_only_the_protocol_it_uses():
    import subprocess
    import sys

    code = (
        "import sys, modelwire\n"
        "for spec in sys.argv[1:]:\n"
        "    modelwire.load_model(spec, api_key='k')\n"
        "print(' '.join(sorted({m.split('.')[2] for m in sys.modules if m.startswith('modelwire.protocols.')})))"
    )
    base = {"_caps", "_parts", "_protocol", "_records"}  # what every protocol is made of
    run = lambda *specs: [
        name
        for name in subprocess.run(
            [sys.executable, "-c", code, *specs], capture_output=True, text=True, check=True
        ).stdout.split()
        if name not in base
    ]
    assert run("deepseek:deepseek-chat") == ["_openai_errors", "_openai_shared", "openai_chat"]
    assert run("vertex-anthropic:claude-sonnet-4-5@20250929", "google:gemini-2.5-flash") == [
        "_claude",
        "anthropic",
        "gemini",
    ]


def test_a_protocol_entry_point_under_another_name_is_a_clear_error(monkeypatch):
    from modelwire import protocols

    class Entry:
        name, group, value = "anthropc", "modelwire.protocols", "modelwire.protocols.anthropic:PROTOCOL"

        def load(self):
            return get_protocol("anthropic")

    monkeypatch.setattr(protocols, "_loaded", {**protocols._loaded})
    monkeypatch.setattr(
        protocols, "_entry_points", {"modelwire.protocols": {"anthropc": Entry()}, "modelwire.presets": {}}
    )
    with pytest.raises(
        UnknownProtocolError,
        match="entry point 'anthropc' gives a protocol named 'anthropic': the two names must be the same",
    ):
        protocols.get_protocol("anthropc")


def test_a_preset_entry_point_naming_the_wrong_protocol_is_a_clear_error(monkeypatch):
    from modelwire import protocols

    class Entry:
        name, group, value = "mistaken", "modelwire.presets", "modelwire.protocols.ollama:PROTOCOL"

        def load(self):
            return get_protocol("ollama")

    monkeypatch.setattr(protocols, "_presets", {})
    monkeypatch.setattr(
        protocols, "_entry_points", {"modelwire.protocols": {}, "modelwire.presets": {"mistaken": Entry()}}
    )
    with pytest.raises(
        UnknownProtocolError,
        match="'mistaken' names modelwire.protocols.ollama:PROTOCOL, which brings no preset of that name",
    ):
        protocols.find_preset("mistaken")


def test_a_dialect_key_the_protocol_does_not_read_is_an_error():
    from modelwire.errors import ConfigError
    from modelwire.protocols import Preset

    chat = get_protocol("openai-chat")
    with pytest.raises(ConfigError, match="reads no dialect key 'reasoning_feild'; did you mean 'reasoning_field'"):
        chat.check_dialect(
            Preset("mine", "openai-chat", "http://127.0.0.1:1", None, dialect={"reasoning_feild": "reasoning"})
        )
    with pytest.raises(
        ConfigError, match="dialect thinking_switch='ollama' must be 'deepseek' or 'openrouter' or 'qwen' or 'vllm'"
    ):
        chat.check_dialect(
            Preset("mine", "openai-chat", "http://127.0.0.1:1", None, dialect={"thinking_switch": "ollama"})
        )
    with pytest.raises(ConfigError, match="dialect stream_usage=1 must be bool"):
        chat.check_dialect(Preset("mine", "openai-chat", "http://127.0.0.1:1", None, dialect={"stream_usage": 1}))
    with pytest.raises(ConfigError, match="the gemini protocol reads no dialect key 'reasoning_field'"):
        get_protocol("gemini").check_dialect(
            Preset("mine", "gemini", "http://127.0.0.1:1", None, dialect={"reasoning_field": "reasoning"})
        )
    get_protocol("anthropic").check_dialect(
        Preset("mine", "anthropic", "http://127.0.0.1:1", None, dialect={"credentials": "aws", "endpoint": "bedrock"})
    )


def test_error_codes_belong_to_their_protocol_and_are_read_across_them():
    from modelwire.errors import OverloadedError, RateLimitError, error_from_body

    assert "throttlingexception" in get_protocol("bedrock-converse").error_types
    assert "throttlingexception" not in get_protocol("anthropic").error_types
    assert isinstance(
        error_from_body({"type": "ThrottlingException", "message": "slow down"}, "bedrock-converse"), RateLimitError
    )
    # A gateway in front of Claude that answers in Google's words is still understood.
    assert isinstance(
        error_from_body({"error": {"status": "UNAVAILABLE", "message": "busy"}}, "anthropic"), OverloadedError
    )


def test_an_unknown_protocol_is_a_clear_error():
    with pytest.raises(UnknownProtocolError, match="unknown protocol 'gopher'; known: anthropic"):
        get_protocol("gopher")


# Every registered protocol's and preset's name, as a string literal (the registry, not a list here).
PROTOCOL_NAMES = re.compile(r"[\"'](" + "|".join(re.escape(n) for n in [*protocol_names(), *all_presets()]) + r")[\"']")


@pytest.mark.parametrize(
    "module",
    [
        "models/options.py",
        "models/_http.py",
        "models/_capable.py",
        "models/_building.py",
        "models/_services.py",
        "models/_endpoint.py",
        "models/transport.py",
        "models/__init__.py",
        "models/_fallback.py",
        "models/_cache.py",
        "models/_lookup.py",
        "agent/_agent.py",
        "agent/_acting.py",
        "agent/_asking.py",
        "agent/_ending.py",
        "agent/_reply.py",
        "agent/_mcp.py",
        "agent/_tools.py",
        "cli/__init__.py",
        "cli/__main__.py",
        "cli/_batch.py",
        "cli/_cassette.py",
        "cli/_chat.py",
        "cli/_check.py",
        "cli/_common.py",
        "cli/_conform.py",
        "cli/_count.py",
        "cli/_decode.py",
        "cli/_demo.py",
        "cli/_format.py",
        "cli/_main.py",
        "cli/_models.py",
        "cli/_serve.py",
        "cassettes/_show.py",
        "cassettes/_hook.py",
        "testing/sse.py",
        "testing/server.py",
        "testing/fake.py",
        "testing/conformance.py",
        "testing/_conformance_kit.py",
        "testing/_conformance_streams.py",
        "testing/_conformance_parts.py",
        "testing/_conformance_formatting.py",
        "adapters/_base.py",
        "adapters/_adapter.py",
        "adapters/_decoders.py",
        "adapters/_makers.py",
        "adapters/_shapes.py",
        "adapters/_state.py",
        "adapters/__init__.py",
        "message/_provenance.py",
        "message/_msg.py",
        "message/_fold.py",
        "message/_blocks.py",
        "event/_events.py",
        "_record.py",
        "_record_code.py",
        "_record_convert.py",
        "_record_fields.py",
        "formatters/_common.py",
        "formatters/_blocks.py",
        "formatters/_replay.py",
        "formatters/_turns.py",
        "formatters/_toolids.py",
        "models/config.py",
        "models/capabilities.py",
        "telemetry.py",
        "cost.py",
        "errors/__init__.py",
        "errors/_base.py",
        "errors/_mapping.py",
        "errors/_provider.py",
        "protocols/__init__.py",
        "protocols/_caps.py",
        "conform.py",
        "cassettes/_drift.py",
        "cassettes/_recheck.py",
        "cassettes/_transpose.py",
        "adapters/_unread.py",
        "models/_learned.py",
        "models/_preflight.py",
        "protocols/_probe.py",
    ],
)
def test_generic_modules_name_no_protocol(module):
    """What the registry answers is never decided by matching a protocol's name elsewhere."""
    found = PROTOCOL_NAMES.findall((SRC / module).read_text())
    assert found == [], f"{module} names {found}"


# -- provenance -----------------------------------------------------------------------------------


def test_reasoning_is_replayed_only_to_the_provider_that_made_it():
    """DeepSeek's reasoning went back to Groq when provenance was per protocol."""
    from modelwire.testing.sse import body
    from modelwire.protocols import decode_sse

    events = decode_sse(
        "openai-chat",
        body("openai-chat", ("think", "Call the tool."), ("tool", "c1", "f", "{}")),
        "r",
        provider="deepseek",
    )
    reply = AssistantMsg("a", [], id="r")
    for event in events:
        reply.append_event(event)
    thinking = reply.get_content_blocks("thinking")[0]
    assert thinking.provider_metadata == {"deepseek": {"protocol": "openai-chat"}}
    reply.content.append(ToolResultBlock(id="c1", name="f", output="done", state="success"))
    conversation = [UserMsg("u", "go"), reply]
    deepseek = fmt("deepseek", conversation)["messages"][1]
    assert deepseek["reasoning_content"] == "Call the tool."
    groq = fmt("groq", conversation)["messages"][1]
    assert "reasoning" not in groq and "reasoning_content" not in groq
    moonshot = fmt("moonshot", conversation)["messages"][1]
    # It wants the reasoning of tool-call turns back and has none of its own here: the plain text
    # goes, as AgentScope's formatters send it (nothing signed is in Chat reasoning).
    assert moonshot["reasoning_content"] == "Call the tool."


def test_model_calls_record_the_provider_on_every_block(server):
    from modelwire.testing import sse_reply
    from modelwire.testing.sse import body

    server.script(sse_reply(body("openai-chat", ("think", "hmm"), ("text", "hi"))))
    model = load_model("groq:m", api_key="k", base_url=server.url + "/v1")
    import asyncio

    reply = asyncio.run(model.complete([UserMsg("u", "hi")]))
    assert origin(reply.get_content_blocks("thinking")[0]).provider == "groq"


# -- options: mapped or refused, never dropped --------------------------------------------------

# The conformance suite's values: one per option, each one a request must show or refuse.
OPTION_VALUES = conformance.OPTION_VALUES
TOOLS = [{"name": "f", "description": "", "parameters": {"type": "object", "properties": {}}}]


def _request(preset: str, **options):
    model = load_model(f"{preset}:m", api_key="k", base_url="http://127.0.0.1:9", **options)
    body, opts = model.build_request([UserMsg("u", "hi")], TOOLS)
    return body, model.headers(opts.extra_headers)


@pytest.mark.parametrize("preset", sorted(all_presets()))
@pytest.mark.parametrize("option", sorted(OPTION_VALUES))
def test_every_option_is_mapped_or_refused_on_every_preset(preset, option):
    base_body, base_headers = _request(preset)
    try:
        body, headers = _request(preset, **{option: OPTION_VALUES[option]})
    except UnsupportedOptionError as err:
        assert err.option == option and err.provider == preset and str(err).count(":") >= 1  # says what to do instead
        return
    assert (body, headers) != (base_body, base_headers), f"{option} was dropped on {preset}"


@pytest.mark.parametrize("preset", sorted(all_presets()))
def test_thinking_false_never_turns_thinking_on(preset):
    try:
        body, _ = _request(preset, thinking=False)
    except UnsupportedOptionError as err:
        assert err.option == "thinking"
        return
    text = json.dumps(body)
    assert not re.search(r'"type": "enabled"|"enabled": true|"enable_thinking": true|"budget_tokens"|"effort"', text), (
        body
    )


@pytest.mark.parametrize("preset", ["anthropic", "deepseek", "dashscope", "openrouter"])
def test_thinking_false_with_a_budget_is_refused(preset):
    with pytest.raises(UnsupportedOptionError, match="thinking_budget"):
        _request(preset, thinking=False, thinking_budget=1000)


def test_thinking_maps_onto_each_servers_own_switch():
    assert _request("openai-responses", thinking=True)[0]["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert _request("deepseek", thinking=True)[0]["thinking"] == {"type": "enabled"}
    assert _request("deepseek", thinking=False)[0]["thinking"] == {"type": "disabled"}
    assert (
        _request("dashscope", thinking=True, thinking_budget=500)[0]["enable_thinking"],
        _request("dashscope", thinking_budget=500)[0]["thinking_budget"],
    ) == (True, 500)
    assert _request("vllm", thinking=False)[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert _request("openrouter", thinking=True, thinking_budget=800)[0]["reasoning"] == {
        "enabled": True,
        "max_tokens": 800,
    }
    assert _request("anthropic", thinking=True, max_tokens=4000)[0]["thinking"] == {
        "type": "enabled",
        "budget_tokens": 2000,
    }
    with pytest.raises(UnsupportedOptionError, match="reasoning_effort"):
        _request("openai", thinking=True)


# -- AgentScope's own messages ---------------------------------------------------------------------

agentscope = pytest.importorskip("agentscope", reason="the dev extra installs agentscope==2.0.11")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from agentscope import message as asm  # noqa: E402


def from_agentscope(msg) -> Msg:
    """An AgentScope message, through its own JSON, as modelwire loads it."""
    return Msg.from_dict(json.loads(msg.model_dump_json()))


def as_tool_turn(*blocks):
    return [
        from_agentscope(asm.Msg(name="user", role="user", content=[asm.TextBlock(text="What is the weather?")])),
        from_agentscope(asm.Msg(name="agent", role="assistant", content=list(blocks))),
    ]


def call_and_result():
    return [
        asm.ToolCallBlock(id="toolu_1", name="weather", input='{"city": "Paris"}'),
        asm.ToolResultBlock(id="toolu_1", name="weather", output="sunny", state="success"),
    ]


def test_agentscope_signed_thinking_opens_the_anthropic_tool_turn():
    thinking = asm.ThinkingBlock(thinking="I should call the tool.", signature="EqQBsig==")
    payload = fmt("anthropic", as_tool_turn(thinking, *call_and_result()))
    sdk_params.streaming_request("anthropic", payload)
    assistant = payload["messages"][1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "I should call the tool.",
        "signature": "EqQBsig==",
    }
    assert assistant["content"][1]["type"] == "tool_use"


def test_agentscope_redacted_thinking_is_replayed_to_anthropic():
    thinking = asm.ThinkingBlock(thinking="", redacted_thinking_data="EmwKAhgBEgy")
    payload = fmt("anthropic", as_tool_turn(thinking, *call_and_result()))
    sdk_params.streaming_request("anthropic", payload)
    assert payload["messages"][1]["content"][0] == {"type": "redacted_thinking", "data": "EmwKAhgBEgy"}


def test_agentscope_reasoning_item_reaches_the_responses_input_between_its_texts():
    raw = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Think."}],
        "encrypted_content": "gAAAAenc",
    }
    messages = [
        from_agentscope(asm.Msg(name="user", role="user", content=[asm.TextBlock(text="hi")])),
        from_agentscope(
            asm.Msg(
                name="agent",
                role="assistant",
                content=[
                    asm.TextBlock(text="First."),
                    asm.ThinkingBlock(thinking="Think.", reasoning_item_id="rs_1", reasoning_item_raw=raw),
                    asm.TextBlock(text="Second."),
                ],
            )
        ),
    ]
    payload = fmt("openai-responses", messages)
    sdk_params.streaming_request("openai-responses", payload)
    items = payload["input"][1:]
    assert items == [
        {"type": "message", "role": "assistant", "content": "First."},
        raw,
        {"type": "message", "role": "assistant", "content": "Second."},
    ]


def test_agentscope_plain_thinking_goes_back_to_deepseek_in_full():
    thinking = asm.ThinkingBlock(thinking="Call the tool.")
    payload = fmt("deepseek", as_tool_turn(thinking, *call_and_result()))
    sdk_params.streaming_request("openai-chat", payload)
    assert payload["messages"][1]["reasoning_content"] == "Call the tool."
    assert payload["messages"][1]["tool_calls"][0]["id"] == "toolu_1"
    # ... and to nobody who does not take reasoning back
    assert "reasoning_content" not in fmt("openai", as_tool_turn(thinking, *call_and_result()))["messages"][1]


@pytest.mark.parametrize("where", ["user", "tool_result"])
def test_text_documents_go_to_chat_completions_as_text(where):
    doc = asm.DataBlock(
        source=asm.Base64Source(data=base64.b64encode(b"line one\nline two").decode(), media_type="text/plain"),
        name="notes.txt",
    )
    if where == "user":
        messages = [from_agentscope(asm.Msg(name="user", role="user", content=[asm.TextBlock(text="Summarize:"), doc]))]
    else:
        messages = [
            UserMsg("u", "read it"),
            from_agentscope(
                asm.Msg(
                    name="agent",
                    role="assistant",
                    content=[
                        asm.ToolCallBlock(id="c1", name="read", input="{}"),
                        asm.ToolResultBlock(id="c1", name="read", output=[doc], state="success"),
                    ],
                )
            ),
        ]
    payload = fmt("openai", messages)
    sdk_params.streaming_request("openai-chat", payload)
    text = json.dumps(payload)
    assert '"file"' not in text and "notes.txt:\\nline one\\nline two" in text


@pytest.mark.parametrize(
    "data, media_type",
    [
        ("aGVsbG8gd29ybGQ", "jpg"),  # no padding
        ("aGVsbG8g\nd29ybGQ=", "image/jpg"),  # MIME line break
        ("data:image/png;base64,aGVsbG8gd29ybGQ=", "PNG"),
        ("-_8=", "image/png"),  # URL-safe alphabet
    ],
)
def test_data_agentscope_accepts_loads_normalised(data, media_type):
    msg = from_agentscope(
        asm.Msg(
            name="user", role="user", content=[asm.DataBlock(source=asm.Base64Source(data=data, media_type=media_type))]
        )
    )
    source = msg.content[0].source
    assert re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", source.data) and len(source.data) % 4 == 0
    assert base64.b64decode(source.data) == base64.urlsafe_b64decode(
        data.split(",")[-1].replace("\n", "").replace("+", "-").replace("/", "_") + "=="
    )
    assert source.media_type in ("image/jpeg", "image/png")


def test_data_that_is_not_base64_says_why():
    """Taken from AgentScope as it is; the formatter says where it goes wrong."""
    from modelwire.errors import FormatError
    from modelwire.protocols import get_formatter

    msg = from_agentscope(
        asm.Msg(
            name="user",
            role="user",
            content=[asm.DataBlock(source=asm.Base64Source(data="ab*c", media_type="image/png"))],
        )
    )
    with pytest.raises(FormatError, match="character '\\*' at position 2"):
        get_formatter("anthropic")().format([msg])


def test_what_modelwire_writes_agentscope_reads_and_replays():
    """Our reasoning item, written as JSON, goes through AgentScope's own Responses formatter."""
    from modelwire.protocols import decode_sse
    from modelwire.testing.sse import body

    reply = AssistantMsg("a", [], id="r")
    for event in decode_sse(
        "openai-responses",
        body("openai-responses", ("think", "Plan."), ("text", "Done.")),
        "r",
        provider="openai-responses",
    ):
        reply.append_event(event)
    theirs = asm.Msg.model_validate(json.loads(json.dumps(reply.to_dict())))
    from agentscope.formatter import OpenAIResponseFormatter  # noqa: PLC0415

    import asyncio

    items = asyncio.run(OpenAIResponseFormatter().format([theirs]))
    reasoning = [i for i in items if i.get("type") == "reasoning"]
    assert reasoning and reasoning[0]["id"] == "rs_0" and reasoning[0]["encrypted_content"] == "enc-0"


def test_a_protocol_says_which_blocks_without_provenance_are_its_own(monkeypatch):
    """Blocks another library wrote carry no provenance; each protocol names its own
    (AgentScope's fields), so the message layer names none, and a plugin can do the same."""
    from modelwire import protocols
    from modelwire.message import ThinkingBlock, ToolCallBlock, origin
    from modelwire.protocols import WireProtocol

    assert origin(ThinkingBlock(thinking="t", signature="sig")).protocol == "anthropic"
    assert origin(ThinkingBlock(thinking="t", reasoning_item_id="rs_1")).protocol == "openai-responses"
    assert origin(ToolCallBlock(id="gemini_ts:c2ln", name="f", input="{}")).protocol == "gemini"
    assert origin(ThinkingBlock(thinking="t", toy_seal="x")) is None

    class Toy(WireProtocol):
        name = "toy-claims"

        def apply_options(self, body, options, /, preset, model="", caps=None):
            raise NotImplementedError  # a toy: it builds no request

        def claims(self, block_type, fields, block_id):
            return block_type == "thinking" and "toy_seal" in fields

    monkeypatch.setitem(protocols._registered, "toy-claims", Toy())
    assert origin(ThinkingBlock(thinking="t", toy_seal="x")).protocol == "toy-claims"
    # provenance, where a block has it, is what counts
    marked = ThinkingBlock(thinking="t", toy_seal="x", provider_metadata={"deepseek": {"protocol": "openai-chat"}})
    assert origin(marked).protocol == "openai-chat"

    # claimed_types: the block types a protocol's claims is asked about, and no other
    asked: list[str] = []

    class Calls(WireProtocol):
        name = "toy-calls"
        claimed_types = ("tool_call",)

        def apply_options(self, body, options, /, preset, model="", caps=None):
            raise NotImplementedError  # a toy: it builds no request

        def claims(self, block_type, fields, block_id):
            asked.append(block_type)
            return block_id.startswith("toy_")

    monkeypatch.setitem(protocols._registered, "toy-calls", Calls())
    assert origin(ToolCallBlock(id="toy_1", name="f", input="{}")).protocol == "toy-calls"
    assert origin(ThinkingBlock(thinking="t", other_seal="x")) is None  # every claimant of thinking asked
    assert asked == ["tool_call"]


# -- block extras: one declared vocabulary per protocol ------------------------------------------


def _extras_keys_named(path: Path) -> set[str]:
    """The block-extra keys a module names as string literals: ``extra(block, "k")`` and
    ``<...>.extras.get / setdefault / pop("k")`` / ``<...>.extras["k"]``."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "extra"
            and len(node.args) >= 2
        ):
            key = node.args[1]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "setdefault", "pop")
            and node.args
        ):
            receiver = node.func.value
            key = (
                node.args[0]
                if (receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", None)) == "extras"
                else None
            )
        elif isinstance(node, ast.Subscript):
            receiver = node.value
            key = (
                node.slice
                if (receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", None)) == "extras"
                else None
            )
        else:
            continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.add(key.value)
    return found


@pytest.mark.parametrize("name", protocol_names())
def test_the_extras_a_protocol_reads_and_writes_are_the_ones_it_declares(name):
    """A key its adapter writes or its formatter reads that nobody declares is a typo that
    would drop what it carries without a word (a signature not sent back, say)."""
    import importlib

    from modelwire.adapters import COMMON_EXTRAS

    wire = get_protocol(name)
    package = Path(importlib.import_module(type(wire).__module__).__file__).parent
    named = set().union(*(_extras_keys_named(path) for path in package.glob("*.py")))
    declared = COMMON_EXTRAS | set(wire.extras_keys)
    assert named - declared == set(), f"{name} names extras it does not declare"
    assert set(wire.replay_keys) <= declared


def test_recorded_streams_carry_only_declared_extras():
    from paths import HAVE_SHARED, ROOT

    if not HAVE_SHARED:
        pytest.skip("needs ../shared/recorded-streams")
    from decoding import decode

    from modelwire.adapters import COMMON_EXTRAS
    from modelwire.errors import ProviderError, StreamGrammarError
    from modelwire.message import extras_of
    from modelwire.protocols import sniff

    seen = set()
    for path in sorted(p for p in ROOT.rglob("*") if p.suffix in (".sse", ".txt", ".bin", ".eventstream")):
        body = path.read_bytes()
        name = sniff(body)
        if name is None:
            continue
        try:
            msg, _, _ = decode(name, [body])
        except (ProviderError, StreamGrammarError):
            continue  # streams that are errors or a continuation of another: decoded elsewhere
        declared = COMMON_EXTRAS | set(get_protocol(name).extras_keys)
        for block in msg.content:
            assert set(extras_of(block) or ()) <= declared, (path.name, block.type, set(extras_of(block)) - declared)
        seen.add(name)
    assert {"anthropic", "openai-chat", "openai-responses", "gemini", "bedrock-converse"} <= seen


def test_every_formatter_is_a_formatter_and_another_class_is_refused():
    from modelwire.formatters import Formatter
    from modelwire.protocols import WireProtocol

    for name in protocol_names():
        assert issubclass(get_protocol(name).formatter_class(), Formatter)

    class Wrong(WireProtocol):
        name = "wrong"
        formatter = "json:JSONEncoder"

        def apply_options(self, body, options, /, preset, model="", caps=None):
            raise NotImplementedError  # a toy: it builds no request

    with pytest.raises(
        TypeError,
        match="the wrong protocol's formatter 'json:JSONEncoder' is not a modelwire.formatters.Formatter subclass",
    ):
        Wrong().formatter_class()


def test_a_protocol_without_apply_options_cannot_be_made():
    # The one member with no default is abstract: a plugin that forgets it hears so when its
    # protocol is made, not at its first request.
    from modelwire.protocols import WireProtocol

    class Half(WireProtocol):
        name = "half"

    with pytest.raises(TypeError, match="abstract method '?apply_options"):
        Half()


def test_a_formatter_without_options_of_its_own_refuses_one():
    from modelwire.formatters import Formatter

    class Plain(Formatter):
        protocol = "plain"

    assert Plain(provider="p").provider == "p"
    with pytest.raises(TypeError, match="Plain takes no option 'cache_system'"):
        Plain(cache_system=True)
