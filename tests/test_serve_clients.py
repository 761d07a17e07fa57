"""The served encodings, read by the clients front ends really use: the Vercel AI SDK's
``Chat`` (what ``useChat`` runs, with its own chunk schema and message fold) and AG-UI's
``HttpAgent`` (its event verifier and message fold), both from npm, in Node, against
``EventStreamApp`` under uvicorn, with the model talking to the local provider server.

Each test compares what the client rebuilt with the message the agent kept. Pauses go
the clients' own way: ``addToolApprovalResponse`` / ``addToolOutput`` for the Vercel
chat, a resumed run answering the interrupts for AG-UI. Every AG-UI event is also
validated by the ``ag-ui-protocol`` Python models.

Needs ``node`` and ``npm ci --prefix tests/js`` (``.ci/run`` does both)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from modelwire.agent import Agent, Tool
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body

from test_serve import Served, agent_app

JS = Path(__file__).resolve().parent / "js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(
    NODE is None
    or not (JS / "node_modules" / "ai").is_dir()
    or not (JS / "node_modules" / "@ag-ui" / "client").is_dir(),
    reason="needs node and the npm clients: npm ci --prefix tests/js",
)


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def tool_turn(call_id: str = "toolu_1") -> bytes:
    return body(
        "anthropic",
        ("think", "They want weather."),
        ("text", "Let me look."),
        ("tool", call_id, "weather", '{"city": "Paris"}'),
        usage=(20, 9),
    )


def answer_turn(text: str = "It is sunny in Paris.") -> bytes:
    return body("anthropic", ("text", text), usage=(40, 7))


def signed_turn(signature: str) -> bytes:
    return body("anthropic", ("think", "They want weather.", signature), ("text", "Sunny."), usage=(20, 9))


def external_weather() -> Tool:
    """weather, run outside the agent (by the client)."""
    return Tool(
        name="weather",
        description="The weather, looked up elsewhere.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
        external=True,
    )


class Setup:
    def __init__(self, provider: ProviderServer, tool: Tool) -> None:
        self.agents: list[Agent] = []
        self.app = agent_app(provider, tool, made=self.agents)

    def kept(self):
        """The one reply the agents kept: a parked reply is data, taken up on resume by a
        fresh agent from the factory, and it stays the same message."""
        assert len({a.context[-1].id for a in self.agents}) == 1, (
            "a resume must continue the parked reply, not start another"
        )
        return self.agents[-1].context[-1]


def run(replies: tuple[bytes, ...], tool: Tool, scenario: str, text: str, arg: str = "") -> tuple[dict, Setup, list]:
    """The client scenario against an app whose model gets ``replies``: what the client
    rebuilt, the app's agents, and the requests the provider received."""
    with ProviderServer() as provider:
        provider.replies = [sse_reply(r) for r in replies]
        setup = Setup(provider, tool)
        with Served(setup.app) as url:
            got = client(scenario, url, text, arg)
    return got, setup, provider.requests


def client(scenario: str, url: str, text: str, arg: str = "") -> dict:
    proc = subprocess.run(
        [NODE, str(JS / "clients.mjs"), scenario, url + "/reply", text, arg], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def ui_view(message: dict) -> list:
    """A Vercel UI message's parts, reduced to what the conversation holds."""
    out = []
    for p in message["parts"]:
        if p["type"] in ("text", "reasoning"):
            out.append((p["type"], p["text"]))
        elif p["type"].startswith("tool-"):
            output = p.get("output") or p.get("errorText")
            if output is not None and not isinstance(output, str):
                output = json.dumps(output)  # a client-side tool's own output, kept as JSON text
            out.append(
                ("tool", p["toolCallId"], p["type"][5:], json.dumps(p["input"], sort_keys=True), p["state"], output)
            )
    return out


def kept_view(msg, denied_state: str = "output-denied") -> list:
    """The kept message in the same terms (thinking -> reasoning, call + result -> tool)."""
    results = {b.id: b for b in msg.content if b.type == "tool_result"}
    out = []
    for b in msg.content:
        if b.type == "text":
            out.append(("text", b.text))
        elif b.type == "thinking":
            out.append(("reasoning", b.thinking))
        elif b.type == "tool_call":
            r = results.get(b.id)
            state = {"success": "output-available", "error": "output-error", "denied": denied_state}[r.state]
            output = (
                None
                if r.state == "denied"
                else (r.output if isinstance(r.output, str) else "".join(x.text for x in r.output))
            )
            out.append(("tool", b.id, b.name, json.dumps(json.loads(b.input), sort_keys=True), state, output))
    return out


def test_vercel_chat_rebuilds_the_reply_the_agent_kept():
    got, setup, sent = run((tool_turn(), answer_turn()), Tool(weather), "ui-chat", "Weather in Paris?")
    assert got["error"] is None and got["status"] == "ready"
    user, assistant = got["messages"]
    assert user["parts"] == [{"type": "text", "text": "Weather in Paris?"}]
    kept = setup.kept()
    assert assistant["id"] == kept.id
    assert ui_view(assistant) == kept_view(kept)
    assert [p["type"] for p in assistant["parts"]].count("step-start") == 2  # one step per model call
    meta = assistant["metadata"]
    assert meta["finishedReason"] == "completed"
    assert (
        (meta["usage"]["input_tokens"], meta["usage"]["output_tokens"])
        == (kept.usage.input_tokens, kept.usage.output_tokens)
        == (60, 16)
    )


@pytest.mark.parametrize("answer", ["yes", "no"])
def test_vercel_chat_answers_a_tool_approval_and_the_same_reply_resumes(answer):
    got, setup, sent = run(
        (tool_turn(), answer_turn("Done." if answer == "yes" else "Understood, I did not look.")),
        Tool(weather, requires_confirmation=True),
        "ui-approve",
        "Weather in Paris?",
        answer,
    )
    assert got["error"] is None and got["requests"] == 2  # the approval went back by itself
    assert len(got["messages"]) == 2  # the resumed stream continued the same assistant message
    kept = setup.kept()
    assert got["messages"][1]["id"] == kept.id and kept.finished_reason == "completed"
    assert ui_view(got["messages"][1]) == kept_view(kept)
    tool = next(b for b in kept.content if b.type == "tool_result")
    assert tool.state == ("success" if answer == "yes" else "denied")
    # What the model was told on the second call: the tool ran, or the user said no.
    told = json.dumps(sent[1]["json"]["messages"][-1])
    assert ("sunny in Paris" in told) == (answer == "yes")
    assert ("denied" in told) == (answer == "no")


def test_vercel_chat_runs_a_client_side_tool_and_its_output_reaches_the_model():
    got, setup, sent = run(
        (tool_turn(), answer_turn("The browser says so.")), external_weather(), "ui-external", "Weather in Paris?"
    )
    assert got["error"] is None and got["requests"] == 2
    kept = setup.kept()
    assert kept.finished_reason == "completed"
    result = next(b for b in kept.content if b.type == "tool_result")
    assert json.loads(result.output) == {"done": "ran weather in the browser"}
    assert "ran weather in the browser" in json.dumps(sent[1]["json"]["messages"][-1])
    assert ui_view(got["messages"][1]) == kept_view(kept)
    assert kept.content[-1].text.strip() == "The browser says so."


def agui_view(messages: list) -> list:
    out = []
    for m in messages:
        if m["role"] == "reasoning":
            out.append(("reasoning", m["content"]))
        elif m["role"] == "assistant":
            if m.get("content"):
                out.append(("text", m["content"]))
            for c in m.get("toolCalls") or []:
                out.append(("call", c["id"], c["function"]["name"], c["function"]["arguments"]))
        elif m["role"] == "tool":
            out.append(("result", m["toolCallId"], m["content"]))
    return out


def kept_agui_view(msg) -> list:
    out = []
    for b in msg.content:
        if b.type == "text":
            out.append(("text", b.text))
        elif b.type == "thinking":
            out.append(("reasoning", b.thinking))
        elif b.type == "tool_call":
            out.append(("call", b.id, b.name, b.input))
        elif b.type == "tool_result":
            out.append(("result", b.id, b.output if isinstance(b.output, str) else "".join(x.text for x in b.output)))
    return out


def test_agui_http_agent_rebuilds_the_reply_the_agent_kept():
    got, setup, sent = run((tool_turn(), answer_turn()), Tool(weather), "agui-run", "Weather in Paris?")
    assert got["interrupts"] == [] and got["pending"] == []
    assert got["messages"][0] == {"id": "u1", "role": "user", "content": "Weather in Paris?"}
    assert agui_view(got["messages"][1:]) == kept_agui_view(setup.kept())


@pytest.mark.parametrize("answer", ["yes", "no"])
def test_agui_interrupt_is_answered_by_a_resumed_run(answer):
    got, setup, sent = run(
        (tool_turn(), answer_turn("Done.")),
        Tool(weather, requires_confirmation=True),
        "agui-approve",
        "Weather in Paris?",
        answer,
    )
    (interrupt,) = got["interrupts"]
    assert (interrupt["id"].partition(".")[2], interrupt["reason"], interrupt["toolCallId"]) == (
        "toolu_1",
        "tool_approval",
        "toolu_1",
    )
    assert got["pending"] == []  # the second run answered it
    kept = setup.kept()
    assert kept.finished_reason == "completed"
    assert next(b for b in kept.content if b.type == "tool_result").state == (
        "success" if answer == "yes" else "denied"
    )
    assert agui_view(got["messages"][1:]) == kept_agui_view(kept)


def test_agui_external_tool_output_resumes_the_run():
    got, setup, sent = run(
        (tool_turn(), answer_turn("Thanks.")), external_weather(), "agui-external", "Weather in Paris?"
    )
    assert [i["reason"] for i in got["interrupts"]] == ["external_execution"]
    kept = setup.kept()
    assert next(b for b in kept.content if b.type == "tool_result").output == "ran toolu_1 outside"
    assert "ran toolu_1 outside" in json.dumps(sent[1]["json"]["messages"][-1])
    assert agui_view(got["messages"][1:]) == kept_agui_view(kept)


def test_agui_thinking_signatures_come_back_with_the_next_run():
    got, setup, sent = run(
        (signed_turn("sig-AbC123"), answer_turn("Still sunny.")),
        Tool(weather),
        "agui-twice",
        "Weather in Paris?",
        "And tomorrow?",
    )
    (reasoning,) = [m for m in got["messages"] if m["role"] == "reasoning"]
    assert reasoning["content"] == "They want weather." and "sig-AbC123" in reasoning["encryptedValue"]
    # The second run's request replays the thinking with its signature, as Anthropic requires.
    replayed = sent[1]["json"]["messages"][1]["content"][0]
    assert replayed == {"type": "thinking", "thinking": "They want weather.", "signature": "sig-AbC123"}


def test_vercel_chat_sends_thinking_signatures_back_with_the_conversation():
    got, setup, sent = run(
        (signed_turn("sig-XyZ789"), answer_turn("Still sunny.")),
        Tool(weather),
        "ui-twice",
        "Weather in Paris?",
        "And tomorrow?",
    )
    assert got["error"] is None and got["requests"] == 2 and len(got["messages"]) == 4
    reasoning = next(p for p in got["messages"][1]["parts"] if p["type"] == "reasoning")
    assert reasoning["providerMetadata"]["modelwire"]["signature"] == "sig-XyZ789"
    # useChat posted the conversation back; the second request replays the signed thinking.
    assert [m["role"] for m in sent[1]["json"]["messages"]] == ["user", "assistant", "user"]
    assert sent[1]["json"]["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "They want weather.",
        "signature": "sig-XyZ789",
    }


def test_use_chat_takes_a_reply_up_again_after_a_lost_connection():
    words = " ".join(f"w{i}" for i in range(200))
    long = body("anthropic", ("think", "Counting."), ("text", words), usage=(9, 200))
    with ProviderServer() as provider:
        provider.replies = [sse_reply(long, delay=0.005)]
        setup = Setup(provider, Tool(weather))
        with Served(setup.app) as url:
            got = client("ui-resume", url, "Count.", "6")
        requests = provider.requests
    kept = setup.kept()
    assert got["token"] and "w199" not in json.dumps(got["partial"])  # the first page got part of it
    (resumed,) = [m for m in got["messages"] if m["role"] == "assistant"]
    assert resumed["id"] == kept.id and got["status"] == "ready"
    assert ui_view(resumed) == [("reasoning", kept.content[0].thinking), ("text", kept.content[1].text)]
    assert kept.content[1].text.split() == words.split()
    assert got["stranger"] == 0  # a chat id without the reply's token gets nothing
    assert len(requests) == 1  # taken up, not asked again


def test_agui_parallel_calls_without_text_are_one_assistant_message():
    """Two calls of one model turn and no text: each TOOL_CALL_START names the same parent
    message, so AG-UI's own fold keeps them on one assistant message (without a
    parentMessageId it makes one assistant message per call)."""
    parallel = body(
        "anthropic",
        ("tool", "toolu_a", "weather", '{"city": "Paris"}'),
        ("tool", "toolu_b", "weather", '{"city": "Oslo"}'),
        usage=(20, 9),
    )
    got, setup, _ = run((parallel, answer_turn("Sunny in both.")), Tool(weather), "agui-run", "Paris and Oslo?")
    roles = [m["role"] for m in got["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"], roles
    calls = got["messages"][1]["toolCalls"]
    assert [c["id"] for c in calls] == ["toolu_a", "toolu_b"]
    assert agui_view(got["messages"][1:]) == kept_agui_view(setup.kept())
