"""Failover: one model made of several, tried in order.

``FallbackModel([primary, backup, ...])`` (or ``load_model(["anthropic:...", "openai:..."])``,
or a profile's ``fallback = [...]``) sends a call to the first model; when that one fails
*before any output* with an error another provider may not have (overloaded, a rate limit
past the retries, a 5xx, a connection or time-out error, a stream that broke before its
first token), the call goes to the next. Each model formats the same history for itself, so
what one provider cannot take (its ids, another endpoint's signatures) is made valid by the
same rules as a provider switch. An error after output has begun is not failed over
silently: the reply ends with it, as it would with one model; with
``continue_after_output=True`` the call is made again on the next model instead, after the
broken call's events, whose ``MODEL_CALL_END`` says so (``metadata["fallback"]
["failed_after_output"]`` and ``["continued_on"]``): the partial output stays in the reply.

The ``MODEL_CALL_END`` of the call says which model answered and why the ones before it did
not (``metadata["fallback"]``); with tracing on, the answering call's span has the attempt
and the failures too (``modelwire.fallback.*``). A model that failed is kept out for
``cooldown`` seconds (a circuit breaker): tried last, not first, until then.
"""

from __future__ import annotations

import time
from typing import Any, AsyncGenerator, Callable, Sequence

from .. import errors as E
from .._ids import new_id
from .._sync import run_sync
from ..message import Msg, MsgInput, as_messages

__all__ = ["FallbackModel", "fails_over"]

_QUIET = ("MODEL_CALL_START", "MODEL_CALL_END")  # what a call that failed before output sends


def fails_over(err: BaseException) -> bool:
    """Whether another provider may well answer where this error came from."""
    if isinstance(err, E.InternalError):
        return False  # a bug here: every model would meet it
    return isinstance(err, (E.UpstreamError, E.RateLimitError, E.ConnectionError, E.IncompleteStreamError))


class FallbackModel:
    """Several models as one (see the module doc). ``cooldown``: seconds a failed model is
    kept out; ``clock``: a monotonic clock (for tests)."""

    def __init__(
        self,
        models: Sequence[Any],
        *,
        cooldown: float = 30.0,
        continue_after_output: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if len(models) < 1:
            raise E.ConfigError("a FallbackModel needs at least one model")
        self.models: list[Any] = list(models)
        self.cooldown = cooldown
        self.continue_after_output = continue_after_output
        self._clock = clock
        self._out_until: dict[int, float] = {}  # index -> when the model may be first again
        self.name: str = getattr(self.models[0], "name", "fallback")

    def __repr__(self) -> str:
        return f"FallbackModel({', '.join(_label(m) for m in self.models)})"

    def order(self) -> list[Any]:
        """The models in the order the next call tries them: those kept out go last."""
        now = self._clock()
        return [
            self.models[i]
            for i in sorted(range(len(self.models)), key=lambda i: (self._out_until.get(i, 0.0) > now, i))
        ]

    @property
    def capabilities(self) -> Any:
        return getattr(self.order()[0], "capabilities", None)

    def ask_for_cost(self) -> None:
        """Price the calls of every model it holds (see ``HTTPModel.ask_for_cost``)."""
        for model in self.models:
            if hasattr(model, "ask_for_cost"):
                model.ask_for_cost()

    def forced_tool_ok(self, options: Any = None) -> bool:
        check = getattr(self.order()[0], "forced_tool_ok", None)
        return bool(check(options)) if callable(check) else True

    async def stream(
        self,
        messages: MsgInput,
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: Any = None,
        reply_id: str | None = None,
    ) -> AsyncGenerator[Any, None]:
        messages = as_messages(messages)
        reply_id = reply_id or new_id()
        order = self.order()
        failed: list[dict[str, str]] = []
        from .. import telemetry

        for n, model in enumerate(order):
            last = n == len(order) - 1
            held: list[Any] = []
            passed = False
            end = None  # the call's MODEL_CALL_END, held until the call is known to have ended well
            token = telemetry.FALLBACK.set({"attempt": n, "failed": list(failed)}) if failed else None
            stream = model.stream(messages, tools=tools, tool_choice=tool_choice, options=options, reply_id=reply_id)
            try:
                async for event in stream:
                    if event.type == "MODEL_CALL_END":
                        end = event
                    elif passed:
                        yield event
                    elif event.type in _QUIET:
                        held.append(event)  # until output shows the call is answered
                    else:
                        passed = True
                        for early in held:
                            yield early
                        held = []
                        yield event
            except E.ProviderError as err:
                again = self._goes_on(err, passed, last)
                if again is None:
                    for early in _closing(held, end, model, failed):
                        yield early
                    if failed:
                        err.message = f"{err.message} (after {', '.join(f['model'] for f in failed)} failed too)"
                    raise
                failure = self._fail_over(model, err)
                if again:  # the broken call's events stand, and say where the call went on
                    if end is not None:
                        after = {"failed_after_output": failure, "continued_on": _label(order[n + 1])}
                        yield end.replace(metadata={**(end.metadata or {}), "fallback": after})
                    failure = {**failure, "after_output": "true"}
                failed.append(failure)
                continue
            finally:
                if token is not None:
                    telemetry.FALLBACK.reset(token)
                await stream.aclose()
            for early in _closing(held, end, model, failed):  # held: an answer with no output at all (an empty reply)
                yield early
            self._out_until.pop(self.models.index(model), None)
            return

    def _goes_on(self, err: E.ProviderError, passed: bool, last: bool) -> bool | None:
        """After a model failed: None, the call fails with ``err`` (the last model, an error
        no other model would mend, or output already passed on); False, the next model
        answers instead; True, the next model goes on after the output passed on
        (``continue_after_output``)."""
        if last or not fails_over(err):
            return None
        if passed:
            return True if self.continue_after_output else None
        return False

    def _fail_over(self, model: Any, err: E.ProviderError) -> dict[str, str]:
        """A model that failed sits out its cooldown; what is recorded of its failure."""
        self._out_until[self.models.index(model)] = self._clock() + self.cooldown
        return {"model": _label(model), "error": f"{type(err).__name__}: {err.message}"[:300]}

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
        from ._http import fold_call

        return await fold_call(self, messages, tools, tool_choice, options, reply_id, name)

    def complete_sync(self, messages: MsgInput, **kwargs: Any) -> Msg:
        return run_sync(self.complete(messages, **kwargs), "model.complete")


def _label(model: Any) -> str:
    provider = getattr(model, "provider", None)
    return f"{provider}:{model.name}" if provider else str(getattr(model, "name", model))


def _closing(held: list[Any], end: Any, model: Any, failed: list[dict[str, str]]) -> list[Any]:
    """The events held back, and the call's end marked with the fallback that led to it."""
    return held + ([_marked(end, model, failed)] if end is not None else [])


def _marked(end: Any, model: Any, failed: list[dict[str, str]]) -> Any:
    metadata = {**(end.metadata or {}), "fallback": {"answered_by": _label(model), "failed": list(failed)}}
    return end.replace(metadata=metadata)
