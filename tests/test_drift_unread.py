"""A provider that changes its format is noticed while it happens: a body whose text field,
usage fields or event types were renamed decodes to nothing (or to zero tokens), and then the
call's ``MODEL_CALL_END.metadata["unread_fields"]`` names what the adapter did not read and one
warning per (protocol, field) is logged, on the live path (the real transport against the local
provider server) and when a cassette replays it. The drifted bodies are real recordings with
fields renamed (skipped without ../shared) and bodies of ``modelwire.testing.sse.body``."""

from __future__ import annotations

import asyncio
import logging

import pytest

from modelwire.cassettes import use_cassette
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.protocols import decode_sse
from modelwire.testing import ProviderServer
from modelwire.testing.sse import body, stream_reply

from paths import HAVE_SHARED, ROOT

PRESETS = {
    "openai-chat": ("openai:gpt-test", "/v1"),
    "anthropic": ("anthropic:claude-test", ""),
    "openai-responses": ("openai-responses:resp-test", "/v1"),
    "gemini": ("google:gemini-test", ""),
}


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "sk-test-0123456789")


def renamed(raw: bytes, *pairs: tuple[str, str]) -> bytes:
    for old, new in pairs:
        assert old.encode() in raw, f"{old} is not in the body to rename"
        raw = raw.replace(old.encode(), new.encode())
    return raw


def end_of(events):
    (end,) = [e for e in events if e.type == "MODEL_CALL_END"]
    return end


def call(url: str, protocol: str):
    preset, path = PRESETS[protocol]
    model = load_model(preset, base_url=url + path)

    async def run():
        return [e async for e in model.stream([UserMsg("user", "What is the capital of France?")])]

    return asyncio.run(run())


def live_then_replayed(tmp_path, protocol: str, raw: bytes, caplog):
    """The call's end through the real transport (recorded into a cassette), the warnings it
    logged, and the end of the same call replayed from that cassette with its warnings."""
    path = tmp_path / "drifted.json"
    ends, warnings = [], []
    with ProviderServer() as server:
        server.script(stream_reply(protocol, raw))
        for mode in ("once", "none"):
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="modelwire.drift"), use_cassette(path, mode):
                ends.append(end_of(call(server.url, protocol)))
            warnings.append([r.getMessage() for r in caplog.records if r.name == "modelwire.drift"])
        assert len(server.requests) == 1  # the second call was the cassette's
    return ends, warnings


SHARED = {"usage.total_tokens"}  # not renamed: the same name in several cases


def warned_names(warnings: list[str]) -> set[str]:
    return {w.split("carried ")[1].split(",")[0].strip("'") for w in warnings}


GENERATED = {
    # (protocol, renames, the names the metadata must hold, whether the text still came)
    "chat text field renamed": (
        "openai-chat",
        [('"content"', '"text_content_gen"')],
        {"choices[].delta.text_content_gen"},
        False,
    ),
    "chat usage renamed": (
        "openai-chat",
        [('"prompt_tokens"', '"input_tok_gen"'), ('"completion_tokens"', '"output_tok_gen"')],
        {"usage.input_tok_gen", "usage.output_tok_gen", "usage.total_tokens"},
        True,
    ),
    "chat usage object renamed": ("openai-chat", [('"usage"', '"token_usage_gen"')], {"token_usage_gen"}, True),
    "anthropic new event type with the text": (
        "anthropic",
        [("content_block_delta", "content_block_text_gen")],
        {"content_block_text_gen"},
        False,
    ),
    "anthropic usage renamed": (
        "anthropic",
        [('"input_tokens"', '"prompt_tok_gen"'), ('"output_tokens"', '"reply_tok_gen"')],
        {"usage.prompt_tok_gen", "usage.reply_tok_gen"},
        True,
    ),
    "responses new event type with the text": (
        "openai-responses",
        [("response.output_text.delta", "response.output_text.piece_gen")],
        {"response.output_text.piece_gen"},
        False,
    ),
    "gemini part text renamed": ("gemini", [('"text"', '"textContentGen"')], {"parts[].textContentGen"}, False),
    "gemini usage object renamed": ("gemini", [("usageMetadata", "usageStatsGen")], {"usageStatsGen"}, True),
}


@pytest.mark.parametrize("case", list(GENERATED))
def test_a_drifted_generated_body_warns_once_and_names_what_was_not_read(tmp_path, caplog, case):
    protocol, renames, names, text_came = GENERATED[case]
    raw = renamed(body(protocol, ("text", "Paris is the capital."), usage=(11, 7)), *renames)
    (live, replayed), (warned, warned_again) = live_then_replayed(tmp_path, protocol, raw, caplog)
    assert set(live.metadata["unread_fields"]) == names
    assert replayed.metadata["unread_fields"] == live.metadata["unread_fields"]
    assert all(count >= 1 for count in live.metadata["unread_fields"].values())
    assert names - SHARED <= warned_names(warned) <= names  # (a field named in both sets is warned of once)
    assert all(protocol in w for w in warned)
    assert warned_again == []  # once per (protocol, field) in a process
    if text_came:  # the text decoded; the tokens did not
        assert (live.input_tokens, live.output_tokens) == (0, 0)
    else:
        assert (live.input_tokens, live.output_tokens) == (11, 7)


@pytest.mark.parametrize("protocol", list(PRESETS))
def test_a_body_that_decoded_gives_no_finding(protocol, caplog):
    with caplog.at_level(logging.WARNING, logger="modelwire.drift"):
        events = decode_sse(protocol, body(protocol, ("text", "Paris."), usage=(11, 7)), "r")
    assert "unread_fields" not in end_of(events).metadata and caplog.records == []


def test_a_reply_with_no_usage_at_all_and_nothing_unread_gives_no_finding(caplog):
    raw = body("openai-chat", ("text", "Paris."), usage=(11, 7))
    raw = b"\n\n".join(part for part in raw.split(b"\n\n") if b'"usage"' not in part)
    with caplog.at_level(logging.WARNING, logger="modelwire.drift"):
        end = end_of(decode_sse("openai-chat", raw, "r"))
    assert end.input_tokens == 0 and "unread_fields" not in end.metadata and caplog.records == []


RECORDED = {
    # (file, protocol, renames, names)
    "chat text field renamed": (
        "pydantic-ai/test_run_stream_sync_streams_real_model.1.sse",
        "openai-chat",
        [('"content"', '"text_content_rec"')],
        {"choices[].delta.text_content_rec"},
    ),
    "chat usage renamed": (
        "pydantic-ai/test_run_stream_sync_streams_real_model.1.sse",
        "openai-chat",
        [('"prompt_tokens"', '"input_tok_rec"'), ('"completion_tokens"', '"output_tok_rec"')],
        {"usage.input_tok_rec", "usage.output_tok_rec", "usage.total_tokens"},
    ),
    "anthropic new event type with the text": (
        "pydantic-ai/test_anthropic_model_thinking_part_stream.0.sse",
        "anthropic",
        [("content_block_delta", "content_block_text_rec")],
        {"content_block_text_rec"},
    ),
    "anthropic usage renamed": (
        "pydantic-ai/test_anthropic_model_thinking_part_stream.0.sse",
        "anthropic",
        [('"input_tokens"', '"prompt_tok_rec"'), ('"output_tokens"', '"reply_tok_rec"')],
        {"usage.prompt_tok_rec", "usage.reply_tok_rec"},
    ),
    "responses new event type with the text": (
        "pydantic-ai/test_openai_responses_stream.1.sse",
        "openai-responses",
        [("response.output_text.", "response.output_words_rec.")],  # its .delta and its .done
        {"response.output_words_rec.delta", "response.output_words_rec.done"},
    ),
    "gemini part text renamed": (
        "gemini/pydantic-ai__test_google_model_stream.0.sse",
        "gemini",
        [('"text"', '"textContentRec"')],
        {"parts[].textContentRec"},
    ),
    "gemini usage object renamed": (
        "gemini/pydantic-ai__test_google_model_stream.0.sse",
        "gemini",
        [("usageMetadata", "usageStatsRec")],
        {"usageStatsRec"},
    ),
}


@pytest.mark.skipif(not HAVE_SHARED, reason="../shared/recorded-streams is not present")
@pytest.mark.parametrize("case", list(RECORDED))
def test_a_drifted_recording_warns_once_and_names_what_was_not_read(tmp_path, caplog, case):
    name, protocol, renames, names = RECORDED[case]
    raw = renamed((ROOT / name).read_bytes(), *renames)
    (live, replayed), (warned, warned_again) = live_then_replayed(tmp_path, protocol, raw, caplog)
    assert set(live.metadata["unread_fields"]) == names
    assert replayed.metadata["unread_fields"] == live.metadata["unread_fields"]
    assert names - SHARED <= warned_names(warned) <= names and warned_again == []
    undrifted = end_of(decode_sse(protocol, (ROOT / name).read_bytes(), "r"))
    assert "unread_fields" not in undrifted.metadata and undrifted.output_tokens > 0


def recorded_cassette(path, raw: bytes):
    with ProviderServer() as server:
        server.script(stream_reply("anthropic", raw))
        with use_cassette(path, "all"):
            asyncio.run(load_model("anthropic:claude-test", base_url=server.url).complete([UserMsg("u", "Paris?")]))
    return path


def test_recheck_rates_a_new_event_type_carrying_the_text_a_warning(tmp_path):
    from modelwire.cassettes import recheck

    raw = body("anthropic", ("text", "Paris is the capital."), usage=(11, 7))
    path = recorded_cassette(tmp_path / "c.json", raw)
    drifted = renamed(raw, ("content_block_delta", "content_block_text_rc"))
    with ProviderServer() as server:
        server.script(stream_reply("anthropic", drifted))
        report = recheck([path], base_url=server.url)
    found = {(d.severity, d.what) for d in report.drifts}
    assert ("warning", "new event type(s) that carry content: content_block_text_rc") in found
    assert (
        "warning",
        "the reply decoded to nothing or counted no tokens beside field(s) modelwire does not read: "
        "content_block_text_rc",
    ) in found
    assert report.exit_status == 1


def test_recheck_rates_a_new_event_type_carrying_nothing_info(tmp_path):
    from modelwire.cassettes import recheck

    raw = body("anthropic", ("text", "Paris is the capital."), usage=(11, 7))
    path = recorded_cassette(tmp_path / "c.json", raw)
    beat = b'event: heartbeat\ndata: {"type": "heartbeat", "index": 0}\n\n'
    start, rest = raw.split(b"\n\n", 1)
    with ProviderServer() as server:
        server.script(stream_reply("anthropic", start + b"\n\n" + beat + rest))
        report = recheck([path], base_url=server.url)
    assert [(d.severity, d.what) for d in report.drifts] == [("info", "new event type(s): heartbeat")]
    assert report.exit_status == 0
