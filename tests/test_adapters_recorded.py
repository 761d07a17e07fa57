"""Every recorded provider stream in ../shared/recorded-streams decodes, passes
check_stream, and matches the official SDK's accumulator fed the same bytes, in one
piece and re-split at random boundaries."""

from __future__ import annotations

import pytest
import sdk_oracle as oracle

from decoding import decode, ends

from modelwire.protocols import decode_sse
from modelwire.errors import InvalidRequestError, ProviderError

from paths import HAVE_SHARED, PA, ROOT

if not HAVE_SHARED:  # pragma: no cover - the shared folder sits beside the repository
    pytest.skip("../shared/recorded-streams is not present", allow_module_level=True)
ANTHROPIC = sorted(
    [p for p in PA.glob("*.sse") if b"event: message_start" in p.read_bytes() and "pause_turn" not in p.name]
    + list((ROOT / "anthropic-sdk-python").glob("*.txt"))
)
CHAT = sorted(
    [p for p in PA.glob("*.sse") if b"chat.completion.chunk" in p.read_bytes()]
    + list((ROOT / "openai-python").glob("*.bin"))
)
RESPONSES = sorted(
    p for p in PA.glob("*.sse") if b"response.created" in p.read_bytes() or b"response.queued" in p.read_bytes()
)
# Streams that end with a provider error: the SDK raises, we raise a typed error after
# closing what was open.
CHAT_ERRORS = {"test_tool_use_failed_error_streaming.0.sse", "test_openrouter_stream_error.0.sse"}


@pytest.mark.parametrize("path", ANTHROPIC, ids=lambda p: p.name)
def test_anthropic_streams_match_the_sdk(path):
    body = path.read_bytes()
    msg, events, error = decode("anthropic", [body])
    assert error is None
    if "compaction" in path.name:
        # The beta SDK reads the compaction block whole and the usage of compacting
        # (usage.iterations), which the top-level usage leaves out and modelwire counts in.
        assert oracle.compare_anthropic(msg, oracle.anthropic_final(body, beta=True), ends(events)) == []
    else:
        oracle.compare_anthropic(msg, oracle.anthropic_final(body), ends(events))


def test_anthropic_pause_turn_continuation_in_one_reply():
    bodies = [(PA / f"test_pause_turn_web_search_streaming_vcr.{i}.sse").read_bytes() for i in (0, 1)]
    msg, events, error = decode("anthropic", bodies)
    assert error is None
    first, second = ends(events)
    assert (first.stop_reason, second.stop_reason) == ("pause_turn", "end_turn")
    # The continuation's results answer server tool calls made in the first call.
    finals = [oracle.anthropic_final(b) for b in bodies]
    oracle.compare_anthropic(msg, finals, [first, second])
    calls = {b.id for b in msg.content if b.type == "tool_call"}
    assert all(r.id in calls for r in msg.content if r.type == "tool_result")


@pytest.mark.parametrize("path", [p for p in CHAT if p.name not in CHAT_ERRORS], ids=lambda p: p.name)
def test_chat_streams_match_the_sdk(path):
    body = path.read_bytes()
    msg, events, error = decode("openai-chat", [body])
    assert error is None
    (end,) = ends(events)
    oracle.compare_chat(msg, oracle.chat_final(body), end)


@pytest.mark.parametrize("path", RESPONSES, ids=lambda p: p.name)
def test_responses_streams_match_the_sdk(path):
    body = path.read_bytes()
    if "starting_after" in path.name and path.name.endswith(".1.sse"):
        pytest.skip("a resumed stream (GET ...?starting_after=) has no response.created; see the resume test")
    msg, events, error = decode("openai-responses", [body])
    assert error is None
    (end,) = ends(events)
    oracle.compare_responses(msg, oracle.responses_final(body), end)


def test_resumed_responses_stream_decodes_from_its_cursor():
    body = (PA / "test_background_mode_streaming_starting_after_vcr.1.sse").read_bytes()
    full = (PA / "test_background_mode_streaming_starting_after_vcr.0.sse").read_bytes()
    resumed, _, error = decode("openai-responses", [body])
    whole, _, _ = decode("openai-responses", [full])
    assert error is None and resumed.get_text_content() == whole.get_text_content()


def test_groq_error_mid_stream_keeps_the_reasoning_received():
    body = (PA / "test_tool_use_failed_error_streaming.0.sse").read_bytes()
    msg, events, error = decode("openai-chat", [body])
    assert isinstance(error, InvalidRequestError) and error.provider_type == "tool_use_failed"
    assert error.status_code == 400 and "did not match schema" in error.message
    (thinking,) = msg.content
    assert thinking.type == "thinking" and thinking.thinking.startswith("We need") and thinking.finished_at
    (end,) = ends(events)
    assert end.stop_reason == "error" and end.metadata["error_type"] == "tool_use_failed"
    with pytest.raises(openai.APIError):
        oracle.chat_final(body)


def test_openrouter_error_chunk_keeps_usage_and_reasoning():
    body = (PA / "test_openrouter_stream_error.0.sse").read_bytes()
    msg, events, error = decode("openai-chat", [body])
    assert isinstance(error, ProviderError) and error.message == "Token limit reached"
    (end,) = ends(events)
    assert (end.input_tokens, end.output_tokens, end.reasoning_tokens) == (43, 10, 11)
    assert end.provider_stop_reason == "length"
    (thinking,) = msg.content
    assert thinking.thinking == "We need to respond to a greeting. The user"
    assert thinking.reasoning_field == "reasoning"
    assert thinking.reasoning_details == [
        {"type": "reasoning.text", "text": "We need to respond to a greeting. The user", "index": 0, "format": None}
    ]


import openai  # noqa: E402  (used above for the SDK's error type)

ALL = (
    [("anthropic", p) for p in ANTHROPIC]
    + [("openai-chat", p) for p in CHAT]
    + [("openai-responses", p) for p in RESPONSES]
)


@pytest.mark.parametrize("protocol,path", ALL, ids=lambda x: getattr(x, "name", x))
def test_any_split_of_the_bytes_gives_the_same_message(protocol, path):
    body = path.read_bytes()
    whole, whole_events, whole_err = decode(protocol, [body])
    for seed in (1, 2, 3):
        split, split_events, split_err = decode(protocol, [body], split_seed=seed)
        assert split == whole
        assert [e.type for e in split_events] == [e.type for e in whole_events]
        assert type(split_err) is type(whole_err)


@pytest.mark.parametrize("protocol,path", ALL, ids=lambda x: getattr(x, "name", x))
def test_crlf_line_ends_give_the_same_message(protocol, path):
    body = path.read_bytes()
    whole, _, _ = decode(protocol, [body])
    crlf, _, _ = decode(protocol, [body.replace(b"\n", b"\r\n")], split_seed=5)
    assert crlf == whole


def test_decode_sse_helper_returns_all_events():
    body = (PA / "test_run_stream_sync_streams_real_model.1.sse").read_bytes()
    events = decode_sse("openai-chat", body, "r")
    assert events[0].type == "MODEL_CALL_START" and events[-1].type == "MODEL_CALL_END"
    assert events[0].model_name == "gpt-4o-mini-2024-07-18"
