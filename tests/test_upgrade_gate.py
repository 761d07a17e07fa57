"""``modelwire cassette transpose --to MODEL --gate``: the recorded conversations of a cassette
checked against the successor's rules before a team switches. Offline (nothing sent), a
conversation the successor refuses (a forced tool choice on a model that cannot be made to
call a tool; temperature on a model without sampling) fails the gate and names the finding, a
clean one passes; with ``--live``, a successor that answers with other tools, without a kind of
block the recorded answer had, or with a 400 fails it too."""

from __future__ import annotations

import asyncio
import json

import pytest

from modelwire.cassettes import transpose, use_cassette
from modelwire.cli import UsageError, main
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.testing import ProviderServer, error_reply
from modelwire.testing.sse import body, stream_reply

LOOKUP = {
    "name": "lookup",
    "description": "the weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
CALLED = body("anthropic", ("text", "Let me look."), ("tool", "toolu_01", "lookup", '{"city": "Paris"}'))


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-gate-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-gate-0123456789")


def record(path, answer: bytes = CALLED, model: str = "anthropic:claude-sonnet-4-5", **call):
    """One call recorded through modelwire (its conversation kept beside the request)."""
    with ProviderServer() as server:
        server.script(stream_reply("anthropic", answer))
        with use_cassette(path, "all"):
            recorded = load_model(model, base_url=server.url)
            asyncio.run(recorded.complete([UserMsg("u", "Weather in Paris?")], **call))
    return path


def gate(capsys, path, target, *more):
    code = main(["cassette", "transpose", str(path), "-m", target, "--gate", *more])
    return code, capsys.readouterr().out


def test_a_forced_tool_choice_the_successor_refuses_fails_the_gate_offline(tmp_path, capsys):
    path = record(tmp_path / "c.json", tools=[LOOKUP], tool_choice="lookup")
    with ProviderServer() as server:  # nothing may reach it: the gate is offline
        code, out = gate(capsys, path, "anthropic:claude-sonnet-5-5", "--base-url", server.url)
        assert server.requests == []
    assert code == 1
    assert "FAIL tool-choice [0] (offline): [forced-tool-with-thinking]" in out
    assert "cannot be made to call a tool" in out and "gate: FAILED for anthropic:claude-sonnet-5-5" in out
    assert not (tmp_path / "c.anthropic_claude-sonnet-5-5.json").exists()  # nothing recorded


def test_temperature_on_a_model_without_sampling_is_a_refusal_in_json(tmp_path, capsys):
    path = record(tmp_path / "c.json", options={"temperature": 0.2})
    code, out = gate(capsys, path, "anthropic:claude-opus-4-7", "--json")
    report = json.loads(out)
    assert code == 1 and report["gate_failed"] is True
    (finding,) = report["gate"]
    assert (finding["kind"], finding["where"], finding["rule"]) == ("refusal", "offline", "unsupported-option")
    assert "does not take 'temperature'" in finding["message"]


def test_a_conversation_the_successor_takes_as_it_is_passes(tmp_path, capsys):
    path = record(tmp_path / "c.json", tools=[LOOKUP])
    code, out = gate(capsys, path, "anthropic:claude-sonnet-5-5")
    assert code == 0, out
    assert "gate: passed" in out and "FAIL" not in out


def test_the_same_forced_choice_passes_on_a_model_that_takes_it(tmp_path, capsys):
    path = record(tmp_path / "c.json", tools=[LOOKUP], tool_choice="lookup")
    code, out = gate(capsys, path, "anthropic:claude-sonnet-4-5")
    assert code == 0, out


def test_live_a_successor_that_calls_no_tool_fails_the_gate(tmp_path):
    path = record(tmp_path / "c.json", tools=[LOOKUP])
    with ProviderServer() as server:
        server.script(stream_reply("anthropic", body("anthropic", ("text", "It is sunny in Paris, I believe."))))
        report = transpose(
            path, "anthropic:claude-sonnet-5-5", out=tmp_path / "o.json", base_url=server.url, gate=True, live=True
        )
        assert len(server.requests) == 1
    assert report.gate_failed
    found = {(f.kind, f.where): f.message for f in report.gate}
    assert found[("tool-choice", "live")] == (
        "the recorded answer called ['lookup']; anthropic:claude-sonnet-5-5 called no tool"
    )
    assert found[("dropped-block", "live")] == (
        "the recorded answer had tool_call block(s); anthropic:claude-sonnet-5-5's has none"
    )


def test_live_a_400_is_a_refusal_and_the_same_answer_passes(tmp_path, capsys):
    path = record(tmp_path / "c.json", tools=[LOOKUP])
    refusal = {"type": "error", "error": {"type": "invalid_request_error", "message": "tools are not supported"}}
    with ProviderServer() as server:
        server.script(error_reply(400, refusal), stream_reply("anthropic", CALLED))
        code, out = gate(
            capsys, path, "anthropic:claude-sonnet-5-5", "--live", "--base-url", server.url, "-o", str(tmp_path / "a")
        )
        assert code == 1
        assert "FAIL refusal [0] (live): anthropic:claude-sonnet-5-5 answered InvalidRequestError" in out
        assert "tools are not supported" in out
        code, out = gate(
            capsys, path, "anthropic:claude-sonnet-5-5", "--live", "--base-url", server.url, "-o", str(tmp_path / "b")
        )
        assert code == 0, out
        assert len(server.requests) == 2


def test_live_without_gate_is_a_usage_error(tmp_path, capsys):
    path = record(tmp_path / "c.json")
    assert main(["cassette", "transpose", str(path), "-m", "anthropic:claude-sonnet-5-5", "--live"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--live goes with --gate" in err[0], err  # one line, exit 2


@pytest.mark.debug
def test_live_without_gate_raises_its_usage_error_in_debug_mode(tmp_path):
    path = record(tmp_path / "c.json")
    with pytest.raises(UsageError, match="--live goes with --gate"):
        main(["cassette", "transpose", str(path), "-m", "anthropic:claude-sonnet-5-5", "--live"])


def test_a_successor_no_row_names_is_checked_with_its_familys_rules_and_the_report_says_so(tmp_path, capsys):
    path = record(tmp_path / "c.json", tools=[LOOKUP])
    code, out = gate(capsys, path, "anthropic:claude-sonnet-5-9")
    assert code == 0 and "gate: passed" in out
    assert "note: anthropic:claude-sonnet-5-9: no row of the capability table names this model" in out
    assert "assumed from Claude Sonnet 5" in out


# -- what of the history is bound elsewhere (message.BINDINGS) -------------------------------


def test_transpose_says_what_of_the_history_is_bound_elsewhere_and_what_goes_instead(tmp_path, capsys):
    from modelwire.message import Msg
    from modelwire.testing import sse_reply
    from modelwire.testing import sse as fake
    from test_compaction import anthropic_compacting_stream

    with ProviderServer() as server:
        server.script(
            sse_reply(anthropic_compacting_stream(stop="end_turn")),
            sse_reply(fake.body("anthropic", ("think", "Paris is in France.", "sig-s"), ("text", "Sunny."))),
            stream_reply("anthropic", CALLED),
        )
        url = server.url  # the endpoint the history was made at (its provenance says so)
        sonnet = load_model("anthropic:claude-sonnet-5-5", base_url=url)
        history: list[Msg] = [UserMsg("u", "Weather in Paris?")]
        history.append(asyncio.run(sonnet.complete(history)))
        history.append(UserMsg("u", "Tomorrow?"))
        history.append(asyncio.run(sonnet.complete(history)))
        history.append(UserMsg("u", "And after?"))
        path = tmp_path / "c.json"
        with use_cassette(path, "all"):
            asyncio.run(sonnet.complete(history))

    code, out = gate(capsys, path, "openai:gpt-4.1")
    assert "not replayed on openai:gpt-4.1: [0] message [1]: compaction (bound to endpoint" in out
    assert "its summary, as text" in out
    assert "[0] message [3]: thinking (bound to model claude-sonnet-5-5, endpoint" in out

    code, out = gate(capsys, path, "anthropic:claude-opus-5-5", "--json", "--base-url", url)
    report = json.loads(out)
    (bound,) = report["unreplayed"]  # the window goes back to Anthropic; the thinking is Sonnet's own
    assert (bound["message"], bound["kind"], bound["instead"]) == (3, "thinking", "left out")
    assert bound["bound_to"].startswith("model claude-sonnet-5-5")

    code, out = gate(capsys, path, "anthropic:claude-sonnet-5-5", "--base-url", url)
    assert "not replayed" not in out  # the same model at the same endpoint takes all of it back

    code, out = gate(capsys, path, "anthropic:claude-sonnet-5-5")  # the same model elsewhere: another endpoint
    assert "compaction (bound to endpoint" in out
