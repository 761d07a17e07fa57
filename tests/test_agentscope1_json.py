"""AgentScope 1.x JSON read into modelwire's messages and written back
(``modelwire.message.from_agentscope1`` / ``from_agentscope1_history`` / ``to_agentscope1``),
with AgentScope 1.0.21's own ``Msg.from_dict`` as the judge, in its own environment."""

from __future__ import annotations

import base64
import copy
import json
import random
from typing import Any

import pytest

import agentscope1_env
from modelwire.errors import InvalidMessageError, RoleError, ValidationError
from modelwire.message import (
    AssistantMsg,
    DataBlock,
    HintBlock,
    Msg,
    ToolCallBlock,
    ToolResultBlock,
    from_agentscope1,
    from_agentscope1_history,
    to_agentscope1,
    to_agentscope1_memory,
)

# Strings as people and models write them: scripts, emoji (astral), combining marks,
# right-to-left, control characters, JSON's own metacharacters, and nothing at all.
WORDS = ["", "hello", "你好，世界", "😀🦜", "e\u0301", "שלום", "\x00\t\n", '"quoted" \\ {json}', "ø" * 40, " "]
# Media types as 1.x takes them (any string): canonical, and aliases modelwire makes standard
MEDIA = {
    "image": ["image/png", "image/jpeg", "image/webp", "image/jpg", "jpeg", "PNG"],
    "audio": ["audio/mpeg", "audio/wav", "audio/mp3"],
    "video": ["video/mp4"],
}
URLS = {
    "image": [
        "https://example.com/cat.png",
        "https://example.com/x?id=3",
        "/srv/data/a b.jpg",
        "./image.png",
        "b%20c.png",
    ],
    "audio": ["https://example.com/a.mp3", "https://example.com/stream"],
    "video": ["https://example.com/v.mp4", "/tmp/clip.webm"],
}


class Gen:
    """A seeded generator of AgentScope 1.x histories as its ``Msg.to_dict()`` writes them."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.n = 0

    def text(self) -> str:
        return "".join(self.r.choice(WORDS) for _ in range(self.r.randint(0, 3)))

    def stamp(self) -> str:
        r = self.r
        day = f"20{r.randint(10, 30)}-{r.randint(1, 12):02}-{r.randint(1, 28):02}"
        return f"{day} {r.randint(0, 23):02}:{r.randint(0, 59):02}:{r.randint(0, 59):02}.{r.randint(0, 999):03}"

    def json_value(self, depth: int = 0) -> Any:
        r = self.r
        kind = r.randint(0, 7 if depth < 3 else 4)
        if kind < 5:
            return [None, r.random() < 0.5, r.randint(-(2**40), 2**40), r.uniform(-1e6, 1e6), self.text()][kind]
        if kind == 5:
            return [self.json_value(depth + 1) for _ in range(r.randint(0, 3))]
        if kind == 6:
            return {self.text() or "k": self.json_value(depth + 1) for _ in range(r.randint(0, 3))}
        return {"nested": {"deep": [self.json_value(depth + 1)]}}

    def media(self) -> dict[str, Any]:
        r = self.r
        kind = r.choice(list(MEDIA))
        if r.random() < 0.5:
            data = base64.b64encode(r.randbytes(r.randint(0, 24))).decode()
            # as written in the wild: a data: URI (1.x's docs say RFC 2397), MIME line breaks
            data = r.choice([data, data, data, f"data:image/png;base64,{data}", data[:8] + "\n" + data[8:]])
            source = {"type": "base64", "media_type": r.choice(MEDIA[kind]), "data": data}
        else:
            source = {"type": "url", "url": r.choice(URLS[kind])}
        return {"type": kind, "source": source}

    def message(self, name: str, role: str, content: Any) -> dict[str, Any]:
        self.n += 1
        r = self.r
        metadata = r.choice([None, {}, {"structured": {"answer": self.text()}}, {"k": self.json_value()}])
        return {
            "id": f"m{self.n}{self.text()}",
            "name": name,
            "role": role,
            "content": content,
            "metadata": metadata,
            "timestamp": self.stamp(),
        }

    def user(self) -> dict[str, Any]:
        r = self.r
        if r.random() < 0.4:
            return self.message("user", "user", self.text())
        blocks = [
            self.media() if r.random() < 0.4 else {"type": "text", "text": self.text()} for _ in range(r.randint(0, 3))
        ]
        return self.message(self.text() or "user", "user", blocks)

    def call(self) -> dict[str, Any]:
        arguments = {self.text() or "a": self.json_value() for _ in range(self.r.randint(0, 3))}
        block = {
            "type": "tool_use",
            "id": f"call_{self.r.randrange(10**9)}",
            "name": self.r.choice(["get_weather", "查询", "f"]),
            "input": arguments,
        }
        if self.r.random() < 0.5:
            block["raw_input"] = json.dumps(arguments, ensure_ascii=False)
        return block

    def assistant(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        r = self.r
        blocks: list[dict[str, Any]] = []
        if r.random() < 0.4:
            thinking = {"type": "thinking", "thinking": self.text()}
            if r.random() < 0.5:
                thinking["signature"] = base64.b64encode(r.randbytes(12)).decode()
            blocks.append(thinking)
        blocks += [r.choice([{"type": "text", "text": self.text()}, self.media()]) for _ in range(r.randint(0, 2))]
        calls = [self.call() for _ in range(r.choice([0, 0, 1, 1, 2, 3]))]
        blocks += calls
        if calls and r.random() < 0.05:  # a result kept in the assistant's own message (not 1.x's agent's way)
            blocks.append(self.result_block(calls.pop()))
        content: Any = self.text() if not blocks and r.random() < 0.3 else blocks
        return self.message(r.choice(["Friday", "助手", "assistant"]), "assistant", content), calls

    def result_block(self, call: dict[str, Any]) -> dict[str, Any]:
        r = self.r
        output: Any = self.text()
        if r.random() < 0.4:
            output = [r.choice([{"type": "text", "text": self.text()}, self.media()]) for _ in range(r.randint(0, 3))]
        return {"type": "tool_result", "id": call["id"], "name": call["name"], "output": output}

    def result(self, call: dict[str, Any]) -> dict[str, Any]:
        role = "user" if self.r.random() < 0.1 else "system"  # some 1.x programs answer tools as the user
        return self.message(role, role, [self.result_block(call)])

    def history(self) -> list[dict[str, Any]]:
        r = self.r
        out = [self.message("system", "system", self.text())] if r.random() < 0.3 else []
        for _ in range(r.randint(1, 4)):
            out.append(self.user())
            for _ in range(r.randint(1, 3)):
                reply, calls = self.assistant()
                out.append(reply)
                out += [self.result(c) for c in calls if r.random() < 0.95]  # a call now and then never answered
        if r.random() < 0.1:  # a result whose call is not in this history (a memory cut short)
            out.append(self.result(self.call()))
        return out


def histories(total: int, seed: int = 74) -> list[list[dict[str, Any]]]:
    gen = Gen(seed)
    out = []
    while gen.n < total:
        out.append(gen.history())
    return out


def as_1x(message: dict[str, Any]) -> dict[str, Any]:
    """What 1.x's ``Msg.from_dict(message).to_dict()`` gives (metadata None is {} there)."""
    return {**message, "metadata": message["metadata"] or {}}


def test_5000_random_1x_messages_read_and_written_back_read_equal_by_agentscope_1():
    pairs = []
    kinds: set[str] = set()
    for history in histories(5000):
        before = copy.deepcopy(history)
        msgs = from_agentscope1_history(history)
        written = to_agentscope1(msgs)
        assert history == before  # the caller's JSON is read, never changed
        assert len(written) == len(history)
        pairs += list(zip(history, written))
        for msg in msgs:
            kinds.update(b.type for b in msg.content)
        # one message at a time too (a tool-result message stays one, of role assistant)
        for item in history[:3]:
            assert to_agentscope1(from_agentscope1(item)) == [as_1x(item)]
    assert len(pairs) >= 5000
    assert kinds == {"text", "thinking", "data", "tool_call", "tool_result"}
    assert [w for o, w in pairs if as_1x(o) != w] == []
    verdict = agentscope1_env.run("read_back.py", pairs)
    assert verdict["read"] == len(pairs)
    assert verdict["count_unequal"] == 0, verdict["unequal"]


def test_a_1x_tool_round_reads_as_the_2x_form_results_beside_their_calls():
    history = [
        {
            "id": "u1",
            "name": "user",
            "role": "user",
            "content": "Weather in Beijing?",
            "metadata": {},
            "timestamp": "2025-08-27 03:47:11.741",
        },
        {
            "id": "a1",
            "name": "Jarvis",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "343", "name": "get_weather", "input": {"location": "Beijing"}}],
            "metadata": {},
            "timestamp": "2025-08-27 03:47:12.001",
        },
        {
            "id": "s1",
            "name": "system",
            "role": "system",
            "content": [{"type": "tool_result", "id": "343", "name": "get_weather", "output": "北京的天气是晴天"}],
            "metadata": None,
            "timestamp": "2025-08-27 03:47:12.500",
        },
    ]
    user, reply = from_agentscope1_history(history)
    assert user.get_text_content() == "Weather in Beijing?"
    assert user.created_at == "2025-08-27T03:47:11.741"
    call, result = reply.content
    assert (call.type, call.id, json.loads(call.input), call.state) == (
        "tool_call",
        "343",
        {"location": "Beijing"},
        "finished",
    )
    assert (result.type, result.id, result.output, result.state) == (
        "tool_result",
        "343",
        "北京的天气是晴天",
        "success",
    )
    assert result.metadata["agentscope1"]["id"] == "s1"
    assert to_agentscope1([user, reply]) == [as_1x(m) for m in history]


def test_a_2x_reply_with_tool_rounds_is_written_as_1x_keeps_it():
    reply = AssistantMsg(
        "Friday",
        [
            ToolCallBlock(id="c1", name="add", input='{"a": 1}'),
            ToolResultBlock(id="c1", name="add", output="2", state="success"),
            ToolCallBlock(id="c2", name="add", input="{not json"),
            ToolResultBlock(id="c2", name="add", output="error: bad input", state="error"),
        ],
        id="r",
        created_at="2026-01-02T03:04:05.678901",
    )
    written = to_agentscope1(reply)
    assert [(m["id"], m["role"], [b["type"] for b in m["content"]]) for m in written] == [
        ("r", "assistant", ["tool_use"]),
        ("r-1", "system", ["tool_result"]),
        ("r-2", "assistant", ["tool_use"]),
        ("r-3", "system", ["tool_result"]),
    ]
    assert written[0]["timestamp"] == "2026-01-02 03:04:05.678901"
    # arguments 1.x cannot parse are kept as its own models keep them: an empty input and the raw text
    assert written[2]["content"][0]["input"] == {} and written[2]["content"][0]["raw_input"] == "{not json"


def test_what_1x_cannot_hold_is_refused_naming_the_block():
    pdf = DataBlock(source={"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="})
    with pytest.raises(InvalidMessageError, match=r"'m1' content\[1\].*application/pdf"):
        to_agentscope1(Msg(name="u", role="user", content=[{"type": "text", "text": "see"}, pdf], id="m1"))
    with pytest.raises(InvalidMessageError, match=r"'m2' content\[0\].*no hint block"):
        to_agentscope1(Msg(name="a", role="assistant", content=[HintBlock(hint="be brief")], id="m2"))


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ([{"type": "text", "text": "ok"}, {"type": "file", "path": "x"}], r"content\[1\].*'file' is none of"),
        ([{"type": "tool_use", "id": "1", "name": "f"}], r"content\[0\].*no 'input'"),
        ([{"type": "text"}], r"content\[0\].*no 'text'"),
        ([{"type": "audio", "source": {"type": "file", "path": "/a"}}], r"neither 'base64' nor 'url'"),
        (
            [
                {
                    "type": "tool_result",
                    "id": "1",
                    "name": "f",
                    "output": [{"type": "tool_use", "id": "2", "name": "g", "input": {}}],
                }
            ],
            r"output\[0\].*not tool_call",
        ),
    ],
)
def test_a_1x_block_modelwire_cannot_hold_is_refused_naming_it(content, match):
    with pytest.raises(InvalidMessageError, match=match):
        from_agentscope1({"id": "bad", "name": "u", "role": "assistant", "content": content})


def test_a_1x_block_its_role_does_not_allow_is_a_role_error_naming_the_message():
    with pytest.raises(RoleError, match=r"'m9'.*content\[1\]"):
        from_agentscope1(
            {
                "id": "m9",
                "name": "u",
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "b"}],
            }
        )


def test_the_seed_s_serialized_message_loads():
    seed = {
        "id": "RW9QtrM7sVsrNrP7jXykWm",
        "name": "Jarvis",
        "role": "assistant",
        "content": [
            {"type": "text", "text": "这是一个包含 base64 编码数据的多模态消息。"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQSkZ..."}},
            {"type": "audio", "source": {"type": "base64", "media_type": "audio/mpeg", "data": "SUQzBAAAAA..."}},
            {"type": "video", "source": {"type": "base64", "media_type": "video/mp4", "data": "AAAAIGZ0eX..."}},
        ],
        "metadata": None,
        "timestamp": "2025-08-27 03:47:11.741",
    }
    msg = from_agentscope1(seed)
    assert [b.type for b in msg.content] == ["text", "data", "data", "data"]
    assert [b.source.media_type for b in msg.content[1:]] == ["image/jpeg", "audio/mpeg", "video/mp4"]
    assert to_agentscope1(msg) == [as_1x(seed)]


def test_msg_from_dict_names_the_reader_of_1x_json():
    seed = {
        "name": "Jarvis",
        "role": "assistant",
        "content": [{"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}],
    }
    with pytest.raises(ValidationError, match=r"'image' does not match any of the expected tags.*from_agentscope1"):
        Msg.from_dict(seed)


def test_a_field_1x_does_not_have_is_refused_not_dropped():
    openai_style = {"id": "x", "name": "a", "role": "assistant", "content": [], "tool_calls": [{"id": "c"}]}
    with pytest.raises(InvalidMessageError, match=r"'x'.*fields AgentScope 1.x's Msg does not: tool_calls"):
        from_agentscope1(openai_style)


def test_a_local_file_s_path_is_a_file_url_relative_where_the_path_is():
    content = [
        {"type": "image", "source": {"type": "url", "url": "./image.png"}},
        {"type": "audio", "source": {"type": "url", "url": "/srv/a b.wav"}},
    ]
    msg = from_agentscope1({"id": "p", "name": "u", "role": "user", "content": content})
    assert [b.source.url for b in msg.content] == ["file:./image.png", "file:///srv/a%20b.wav"]
    assert [b.source.media_type for b in msg.content] == ["image/png", "audio/wav"]
    assert to_agentscope1(msg)[0]["content"] == content


def test_a_1x_memory_state_loads_with_its_marks_and_is_written_back_as_1x_loads_it():
    history = histories(40, seed=7)[0]
    marks = [["hint"] if i % 3 == 0 else [] for i in range(len(history))]
    state = {"content": [[m, k] for m, k in zip(history, marks)]}
    msgs = from_agentscope1_history(state)
    assert any(m.metadata.get("agentscope1", {}).get("marks") == ["hint"] for m in msgs)
    written = to_agentscope1_memory(msgs)
    assert written == {"content": [[as_1x(m), k] for m, k in zip(history, marks)]}
    theirs, ours = agentscope1_env.run("memory_state.py", [state, written])
    assert theirs == ours


def test_what_modelwire_makes_standard_is_written_back_as_given_unless_changed_since():
    given = {"type": "base64", "media_type": "image/jpg", "data": "data:image/jpeg;base64,/9j/4A=="}
    msg = from_agentscope1({"id": "i", "name": "u", "role": "user", "content": [{"type": "image", "source": given}]})
    source = msg.content[0].source
    assert (source.media_type, source.data) == ("image/jpeg", "/9j/4A==")  # standard, as sent
    assert to_agentscope1(msg)[0]["content"][0]["source"] == given
    source.media_type = "image/png"
    assert to_agentscope1(msg)[0]["content"][0]["source"]["media_type"] == "image/png"
