"""An in-process model for testing agents: scripted replies, decoded by a real adapter.

    from modelwire.testing import FakeModel

    model = FakeModel([
        [("tool", "call_1", "weather", '{"city": "Paris"}')],   # the first call: a tool call
        [("text", "It is sunny in Paris.")],                     # the second: the answer
    ])
    agent = Agent("bot", model, tools=[weather])
    reply = agent.reply_sync("Weather in Paris?")
    assert model.requests[1]["messages"][-1]["content"][0]["type"] == "tool_result"

Each reply is a list of neutral blocks: ``("think", text)``, ``("text", text)``,
``("tool", call_id, name, arguments_json)``, or a function ``(messages, tools) -> blocks``
for replies that depend on what was asked. The model writes each one as the chosen
protocol's own stream (``anthropic`` by default) and decodes it with that protocol's real
adapter, in pieces, so a test runs the same decoding as production, with no socket. Every
request is formatted by the protocol's real formatter too and kept in ``requests``: a
conversation the provider would refuse fails here as it would there.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncGenerator, Callable, Sequence

from .._ids import new_id
from .._sync import run_sync
from ..message import AssistantMsg, Msg, MsgInput, as_messages

if TYPE_CHECKING:
    from ..formatters import Formatter
    from ..protocols import WireProtocol

__all__ = ["FakeModel"]

Blocks = Sequence[tuple[Any, ...]]
Script = Blocks | Callable[[list[Msg], Any], Blocks]


_ARITY = {"think": (2, 3), "text": (2, 2), "tool": (4, 4)}  # kind -> (fewest, most) items, the kind included


def _checked(blocks: Any, call: int) -> Blocks:
    """A scripted reply's blocks, each one a block the fake streams can write; a typed error
    naming the call and the block otherwise."""
    from ..errors import ConfigError

    if isinstance(blocks, tuple) and blocks and isinstance(blocks[0], str):
        blocks = [blocks]  # one block given bare
    if not isinstance(blocks, (list, tuple)):
        raise ConfigError(f"FakeModel: the reply for call {call} is a {type(blocks).__name__}, not a list of blocks")
    for n, block in enumerate(blocks, 1):
        kind = block[0] if isinstance(block, tuple) and block else None
        arity = _ARITY.get(kind) if isinstance(kind, str) else None
        if arity is None or not arity[0] <= len(block) <= arity[1]:
            raise ConfigError(
                (
                    f"FakeModel: call {call}, block {n}: {block!r} is not a block; use ('think', text), "
                    "('text', text) or ('tool', call_id, name, arguments_json)"
                )
            )
    return blocks


class FakeModel:
    """A model for tests, with no network: each call answers with the next scripted reply
    (see the module's doc), written as the protocol's own stream and decoded by its real
    adapter; every request is formatted by its real formatter and kept in ``requests``.

    ``replies``: a list of replies (each a list of blocks, or a function ``(messages, tools)
    -> blocks``), or one such function for every call. ``protocol``: whose stream and
    formatter (the first registered by default, ``anthropic``). ``usage``: the (input,
    output) tokens each call reports. A call past the last scripted reply, or a block that
    is not one, is a :class:`~modelwire.errors.ConfigError` naming it."""

    def __init__(
        self,
        replies: Sequence[Script] | Callable[[list[Msg], Any], Blocks],
        *,
        protocol: str | None = None,
        name: str = "fake-model",
        usage: tuple[int, int] = (10, 5),
    ) -> None:
        from ..protocols import all_presets
        from ..protocols import get_protocol, protocol_names

        protocol = protocol or protocol_names()[0]  # the first registered protocol by default
        self.wire: WireProtocol = get_protocol(protocol)
        self.name = name
        self.usage = usage
        self._replies = replies
        self._next = 0
        preset = next((p for p in all_presets().values() if p.protocol == protocol), None)  # a plugin's too
        if preset is None:
            raise ValueError(f"no provider preset speaks {protocol!r}")
        self.preset = preset
        self.formatter: Formatter = self.wire.new_formatter(preset, name)
        self.requests: list[dict[str, Any]] = []  # each call's request payload, as the formatter made it

    def __repr__(self) -> str:
        return f"FakeModel({self.wire.name}:{self.name}, {len(self.requests)} calls)"

    @property
    def capabilities(self) -> Any:
        return self.wire.capabilities_for(self.preset)

    def _script(self, messages: list[Msg], tools: Any) -> Blocks:
        from ..errors import ConfigError

        replies = self._replies
        call = self._next + 1
        if callable(replies):
            self._next += 1
            return _checked(replies(messages, tools), call)
        if self._next >= len(replies):
            raise ConfigError(
                f"FakeModel: call {call} has no scripted reply ({len(replies)} were given): add one to the list"
            )
        script = replies[self._next]
        self._next += 1
        return _checked(script(messages, tools) if callable(script) else script, call)

    async def stream(
        self,
        messages: MsgInput,
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: Any = None,
        reply_id: str | None = None,
    ) -> AsyncGenerator[Any, None]:
        msgs = as_messages(messages)
        self.requests.append(self.formatter.format(msgs, tools, tool_choice))  # a FormatError here as in production
        raw = self.wire.fake_stream(*self._script(msgs, tools), usage=self.usage)
        decoder = self.wire.decoder(self.wire.new_adapter(reply_id or new_id(), self.preset, model_name=self.name))
        from ..errors import ProviderError

        try:
            for piece in self.wire.split_stream(raw):
                for event in decoder.feed(piece):
                    yield event
                await asyncio.sleep(0)  # a stream takes turns with the rest of the loop, as a real one does
            for event in decoder.close():
                yield event
        except ProviderError as err:
            for event in err.events:
                yield event
            err.events = []
            raise

    async def complete(
        self,
        messages: MsgInput,
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: Any = None,
        reply_id: str | None = None,
        name: str = "assistant",
    ) -> Msg:
        reply = AssistantMsg(name, [], id=reply_id or new_id())
        async for event in self.stream(
            messages, tools=tools, tool_choice=tool_choice, options=options, reply_id=reply.id
        ):
            reply.append_event(event, strict=True)
        return reply

    def complete_sync(self, messages: MsgInput, **kwargs: Any) -> Msg:
        return run_sync(self.complete(messages, **kwargs), "model.complete")
