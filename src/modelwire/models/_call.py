"""One model call's state across its requests (:class:`Call`) and one request's
(:class:`Attempt`)."""

from __future__ import annotations

from typing import Any

from ..event import AgentEvent
from ..protocols import ModelOptions

__all__ = ["Attempt", "Call", "open_provider_calls"]


def open_provider_calls(messages: list[Any]) -> frozenset[str]:
    """The ids of the provider-run tool calls ``messages`` leave without their result: the
    only calls a result in the answer may name beside the answer's own (a paused turn goes on
    in a new call, whose first result answers the call the turn paused in; Anthropic's
    ``pause_turn``, recorded in pydantic-ai's ``test_pause_turn_web_search_streaming_vcr``).
    Only the messages after the last user message are read: a turn the user answered is over."""
    calls: set[str] = set()
    answered: set[str] = set()
    for msg in reversed(messages):
        if getattr(msg, "role", None) == "user":
            break
        content = getattr(msg, "content", None)
        for block in content if isinstance(content, list) else ():
            if block.type == "tool_call" and block.__dict__.get("server_side"):
                calls.add(block.id)
            elif block.type == "tool_result":
                answered.add(block.id)
    return frozenset(calls - answered)


class Call:
    """What one call sends, kept across its requests (a retry, the whole history again)."""

    __slots__ = (
        "full",
        "payload",
        "chained",
        "opts",
        "renamed",
        "body",
        "headers",
        "trace",
        "deadline",
        "attempts",
        "drafted",
        "conversation",
        "permit",
        "carried",
    )

    def __init__(self, full: dict[str, Any], opts: ModelOptions, renamed: Any) -> None:
        self.full = self.payload = full  # the whole request, also when a stored response is continued
        self.chained: dict[str, Any] | None = None
        self.opts = opts
        self.renamed = renamed
        self.body = b""
        self.headers: dict[str, str] = {}
        self.trace: Any = None
        self.deadline: float | None = None
        self.attempts = 0  # retries spent
        self.drafted: tuple[Any, list[Any]] | None = None  # the draft the payload came from, and its turns
        self.conversation: dict[str, Any] | None = (
            None  # what a cassette keeps beside the request (config.CONVERSATION)
        )
        self.permit: Any = None  # the place its latest request took in a RateLimiter's budget
        self.carried: frozenset[str] = frozenset()  # see open_provider_calls


class Attempt:
    """One request of a call: its decoder, its response, the start of its body (to name a
    server that speaks another protocol; let go once the answer began, in this one), and the
    events held back until the first one that is not MODEL_CALL_START."""

    __slots__ = ("decoder", "response", "head", "held", "passed_on")

    def __init__(self, decoder: Any) -> None:
        self.decoder = decoder
        self.response: Any = None
        self.head: bytes | None = b""
        self.held: list[AgentEvent] = []
        self.passed_on = False

    def release(self, events: list[AgentEvent], trace: Any) -> list[AgentEvent]:
        """The events to pass on now, before any was: none while only MODEL_CALL_START has
        come (a retry may still replace it), else all those held and these."""
        self.held += events
        if all(e.type == "MODEL_CALL_START" for e in self.held):
            return []
        self.passed_on = True
        if trace is not None:
            trace.first_token()
        held, self.held = self.held, []
        return held

    async def close(self) -> None:
        if self.response is not None:
            response, self.response = self.response, None
            await response.aclose()
