"""What one reply may spend: model calls, tokens, money."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, UsageLimitExceeded

__all__ = ["UsageLimits", "ReplyLimits"]


@dataclass(frozen=True)
class UsageLimits:
    """Limits on one reply, checked before each model call: a call that would start past one
    is not made, and the reply ends with :class:`~modelwire.errors.UsageLimitExceeded`
    naming it (``REPLY_END`` with the error; what the reply has so far is kept).

    Attributes:
        requests: model calls in the reply.
        input_tokens / output_tokens / total_tokens: tokens the reply's calls used so far.
        cost: what the calls cost so far (``Msg.cost["total"]``, in its currency); a reply
            whose calls have no price cannot be held to a cost limit, which is then refused.
        count_before_request: count each request's input tokens first, with the provider's
            own endpoint (``model.count_tokens``), and refuse before sending a request whose
            input would pass ``input_tokens`` or ``total_tokens``. A provider without such an
            endpoint is refused then too (the count cannot be made), unless
            ``estimate_count`` allows an estimate from the request's size.
    """

    requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None
    count_before_request: bool = False
    estimate_count: bool = False

    def __post_init__(self) -> None:
        for name in ("requests", "input_tokens", "output_tokens", "total_tokens", "cost"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise ConfigError(f"UsageLimits({name}={value!r}): a limit is a number, at least 0")

    def check_count(self, counted: int, usage: Any) -> None:
        """Raise if the next request's input (``counted`` tokens) would pass a token limit."""
        used_in = usage.input_tokens if usage is not None else 0
        used_out = usage.output_tokens if usage is not None else 0
        for name, allowed, used in (
            ("input_tokens", self.input_tokens, used_in + counted),
            ("total_tokens", self.total_tokens, used_in + used_out + counted),
        ):
            if allowed is not None and used > allowed:
                raise UsageLimitExceeded(name, allowed, used)

    def check(self, calls: int, usage: Any, cost: dict[str, Any] | None) -> None:
        """Raise if one more model call would go past a limit (``calls`` made so far)."""
        if self.requests is not None and calls + 1 > self.requests:
            raise UsageLimitExceeded("requests", self.requests, calls)
        used_in = usage.input_tokens if usage is not None else 0
        used_out = usage.output_tokens if usage is not None else 0
        for name, allowed, used in (
            ("input_tokens", self.input_tokens, used_in),
            ("output_tokens", self.output_tokens, used_out),
            ("total_tokens", self.total_tokens, used_in + used_out),
        ):
            if allowed is not None and used >= allowed:
                raise UsageLimitExceeded(name, allowed, used)
        if self.cost is not None:
            if calls and (cost is None or not cost.get("complete", False)):
                raise UsageLimitExceeded("cost", self.cost, float("nan"))
            spent = (cost or {}).get("total") or 0.0
            if spent >= self.cost:
                raise UsageLimitExceeded("cost", self.cost, spent)


class ReplyLimits:
    """:class:`UsageLimits` held to one reply, as middleware around its model calls: each
    call's ``request`` hook checks the limits against what the reply used so far (and with
    ``count_before_request`` counts the request the layers inside would send), so a call
    that would start past one is refused before anything is sent. ``reply`` is the reply's
    state: ``reply.iters`` (model calls made) and ``reply.reply`` (the message so far).
    (Middleware by its ``request`` hook, without importing the models package.)"""

    def __init__(self, limits: UsageLimits, reply: Any) -> None:
        self.limits = limits
        self.reply = reply

    def __repr__(self) -> str:
        return f"ReplyLimits({self.limits!r})"

    async def request(self, call: Any) -> None:
        limits, state = self.limits, self.reply
        if limits.cost is not None and hasattr(call.model, "ask_for_cost"):
            call.model.ask_for_cost()  # a cost limit needs every call priced
        limits.check(state.iters, state.reply.usage, state.reply.cost)  # before the call that would pass one
        if limits.count_before_request:
            count = getattr(call.inner, "count_tokens", None)
            if count is None:
                raise ConfigError(
                    "UsageLimits(count_before_request=True): the model "
                    f"{getattr(call.model, 'name', call.model)!r} cannot count tokens"
                )
            counted = await count(
                call.messages,
                tools=call.tools,
                tool_choice=call.tool_choice,
                options=call.options or None,
                estimate=limits.estimate_count,
            )
            limits.check_count(int(counted), state.reply.usage)
