"""A response cache: a call asked before is answered from memory, with no request sent.

The key is what the provider would be asked: the model, the messages' roles and content
(ids and times left out), the tools and the options. Only a call that completed is kept; a
replayed call's ``MODEL_CALL_END`` says so (``metadata["cache"] = "hit"``) and counts no
tokens, since none were spent.
"""

import asyncio
import hashlib
import json
from typing import Any, AsyncIterator, cast

import modelwire
from modelwire.event import AgentEvent
from modelwire.models import CallNext, Middleware, ModelCall

VOLATILE = {"id", "created_at", "finished_at"}  # differ between two askings of one question


def plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: plain(v) for k, v in cast("dict[str, object]", value).items() if k not in VOLATILE}
    if isinstance(value, list):
        return [plain(v) for v in cast("list[object]", value)]
    return value


def cache_key(call: ModelCall) -> str:
    asked = {
        "model": f"{getattr(call.model, 'provider', '')}:{call.model.name}",
        "messages": [plain({"role": m.role, "content": [b.to_dict() for b in m.content]}) for m in call.messages],
        "tools": [getattr(t, "__dict__", repr(t)) for t in call.tools or ()],
        "tool_choice": call.tool_choice,
        "options": call.options,
    }
    return hashlib.sha256(json.dumps(asked, sort_keys=True, default=repr).encode()).hexdigest()


class ResponseCache(Middleware):
    """Answers from memory a call asked before (``max_entries`` kept, the oldest dropped first)."""

    def __init__(self, max_entries: int = 1000) -> None:
        self.max_entries = max_entries
        self.kept: dict[str, list[AgentEvent]] = {}
        self.hits = 0

    async def stream(self, call: ModelCall, call_next: CallNext) -> AsyncIterator[AgentEvent]:
        key = cache_key(call)
        kept = self.kept.get(key)
        if kept is not None:
            self.hits += 1
            for event in kept:
                yield self.replayed(event, call.reply_id)
            return
        events: list[AgentEvent] = []
        async for event in call_next(call):
            events.append(event)
            yield event
        end = events[-1] if events else None
        if end is not None and end.type == "MODEL_CALL_END" and end.finished_reason == "completed":
            self.kept[key] = events
            while len(self.kept) > self.max_entries:
                self.kept.pop(next(iter(self.kept)))

    def replayed(self, event: AgentEvent, reply_id: str) -> AgentEvent:
        if event.type == "MODEL_CALL_END":
            return event.replace(
                reply_id=reply_id,
                input_tokens=0,
                output_tokens=0,
                cache_input_tokens=0,
                cache_creation_input_tokens=0,
                reasoning_tokens=0,
                cost=None,
                metadata={**event.metadata, "cache": "hit"},
            )
        return event.replace(reply_id=reply_id)


async def main() -> None:
    cache = ResponseCache()
    model = modelwire.wrap(modelwire.load_model("anthropic:claude-sonnet-4-5"), cache)
    first = await model.complete([modelwire.UserMsg("me", "Name a colour.")])
    again = await model.complete([modelwire.UserMsg("me", "Name a colour.")])  # no request sent
    assert again.get_text_content() == first.get_text_content() and cache.hits == 1
    print(again.get_text_content())


if __name__ == "__main__":
    asyncio.run(main())
