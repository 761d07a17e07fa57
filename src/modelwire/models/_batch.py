"""Batches: many requests submitted at once, answered within a day at the provider's batch
price (``WireProtocol.batch_submit`` and its kin).

Each request is built exactly as the same call would be (formatter, options, tools, media),
as a whole-answer body; the results are decoded by the protocol's adapter from the whole
answers, folded into one assistant ``Msg`` per request, in the order submitted, each call
priced at the batch price. A request the provider could not answer is its typed
``ProviderError`` in that place.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any, Sequence

from .. import errors as E
from .._ids import new_id
from ..message import AssistantMsg, Msg, as_messages
from ..protocols import BatchState, WireProtocol
from ._body import send_call
from ._files import send_json

__all__ = ["Batch", "submit_batch"]

_RESULTS_LIMIT = 256 << 20
log = logging.getLogger("modelwire.models")


class Batch:
    """A batch a provider holds: its ``id`` and last known ``state``; :meth:`status`,
    :meth:`wait`, :meth:`cancel` and :meth:`results`. ``model.batch_by_id(id)`` finds one
    again (the results come in the order submitted either way)."""

    def __init__(self, model: Any, state: BatchState, size: int | None = None) -> None:
        self.model = model
        self.state: BatchState = state
        self.size = size  # how many requests were submitted, where this process submitted them
        self.unplaced: list[E.ProviderError] = []
        """Results :meth:`results` read last that name no request of the batch (an id the
        batch never gave, a line whose request cannot be told): each a typed error saying
        what it held. Reported here (and logged), never placed."""

    @property
    def id(self) -> str:
        return self.state.id

    def __repr__(self) -> str:
        return f"Batch({self.id!r}, {self.state.status!r}, {dict(self.state.counts)})"

    async def status(self) -> BatchState:
        """The batch's state, asked afresh."""
        return await self._ask("status")

    async def cancel(self) -> BatchState:
        """Ask the provider to stop the batch (requests already answered keep their answers)."""
        return await self._ask("cancel")

    async def wait(self, *, poll: float = 30.0, deadline: float | None = None) -> BatchState:
        """Ask every ``poll`` seconds until the batch ended; a ``TimeoutError`` once
        ``deadline`` seconds have passed (the batch goes on: wait again, or cancel it)."""
        loop = asyncio.get_running_loop()
        ends = None if deadline is None else loop.time() + deadline
        state = await self.status()
        while not state.ended:
            if ends is not None and loop.time() + poll > ends:
                raise E.TimeoutError(
                    f"batch {self.id} had not ended after {deadline:g} s ({state.status})",
                    which="total",
                    seconds=deadline or 0.0,
                )
            await asyncio.sleep(poll)
            state = await self.status()
        return state

    async def results(self) -> list[Msg | E.ProviderError]:
        """One assistant message per request, in the order submitted; a typed error where the
        provider did not answer one. The batch must have ended (:meth:`wait`)."""
        state = self.state if self.state.ended else await self.status()
        if not state.ended:
            raise E.AgentError(f"batch {self.id} has not ended ({state.status}): wait() for it first")
        self.model.ask_for_cost()  # each answer at the batch price
        await self.model._prices_loaded()
        found: dict[int, Msg | E.ProviderError] = {}
        size = state.size or self.size
        self.unplaced = []
        for call in state.results:
            text = (await send_call(self.model, call, _RESULTS_LIMIT))[1].decode("utf-8", "replace")
            for index, answer, error in self._read(text):
                if index < 0 or (size and index >= size):
                    self.unplaced.append(self._unplaced(index, _result(self.model, answer, error)))
                    log.warning("%s", self.unplaced[-1])
                else:
                    found[index] = _result(self.model, answer, error)
        size = size or max(found, default=-1) + 1
        return [
            found[n]
            if n in found
            else E.UpstreamError(f"batch {self.id} ({state.status}) holds no result for request {n}")
            for n in range(size)
        ]

    def _read(self, text: str) -> list[Any]:
        """The protocol's reading of a results text; a text it cannot read at all (not the JSON
        it is made of) is a typed error, never the reader's own exception."""
        try:
            return list(self.model.wire.batch_results(text))
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise E.StreamProtocolError(
                f"the results of batch {self.id} could not be read ({type(exc).__name__}: {exc}): {text[:200]!r}",
                body=text[:2000],
            ) from None

    def _unplaced(self, index: int, result: Msg | E.ProviderError) -> E.ProviderError:
        what = f"request {index}, which batch {self.id} does not hold" if index >= 0 else "no request it names"
        said = f": {result}" if isinstance(result, E.ProviderError) else ""
        return E.StreamProtocolError(f"a result for {what} (left out of the results){said}")

    async def _ask(self, action: str) -> BatchState:
        model = self.model
        _, answer = await send_json(
            model, model.wire.batch_call(model.spec.base_url or "", model.spec.preset, self.id, action)
        )
        state: BatchState = model.wire.batch_state(answer, model.spec.base_url or "", model.spec.preset)
        if not state.id:  # an answer that is not the batch (Gemini's cancel): ask for it
            return await self._ask("status")
        self.state = state
        return state


def _result(model: Any, answer: Any, error: Any) -> Msg | E.ProviderError:
    """One request's result: its answer decoded, or its typed error."""
    if isinstance(answer, dict):
        return _decoded(model, answer)
    if answer is not None:
        return E.StreamProtocolError(f"a batch answer that is a JSON {type(answer).__name__}, not an object")
    if isinstance(error, E.ProviderError):
        return error
    wire: WireProtocol = model.wire
    return wire.error(dict(error) if isinstance(error, dict) else {"error": error} if error else {}, status=None)


def _decoded(model: Any, answer: Any) -> Msg | E.ProviderError:
    """One request's whole answer as its assistant message, priced at the batch price."""
    from ..adapters import decode_answer

    reply_id = new_id()
    adapter = model.wire.new_adapter(reply_id, model.spec.preset, model_name=model.name)
    adapter.endpoint = model.endpoint
    try:
        events = decode_answer(adapter, model.wire.answer_events(answer))
    except E.ProviderError as err:
        return err
    msg = AssistantMsg("assistant", [], id=reply_id)
    for event in events:
        if event.type == "MODEL_CALL_END":
            event = _batch_priced(model._ended(event, None), model.wire.batch_discount)
        msg.append_event(event, strict=True)
    return msg


def _batch_priced(end: Any, discount: float) -> Any:
    cost = end.cost
    if not cost or discount == 1.0:
        return end
    priced = {k: round(v * discount, 12) if isinstance(v, float) else v for k, v in cost.items()}
    priced["batch_discount"] = discount
    return end.replace(cost=priced)


def _request(item: Any) -> tuple[Any, Any, Any, Any]:
    """(messages, tools, tool_choice, options) of one batch request: a conversation, or a
    dict with ``messages`` and any of ``tools``, ``tool_choice``, ``options``."""
    if isinstance(item, dict) and "messages" in item:
        unknown = set(item) - {"messages", "tools", "tool_choice", "options"}
        if unknown:
            raise E.ConfigError(
                f"a batch request takes messages, tools, tool_choice and options, not {sorted(unknown)}"
            )
        return item["messages"], item.get("tools"), item.get("tool_choice"), item.get("options")
    return item, None, None, None


async def submit_batch(model: Any, requests: Sequence[Any]) -> Batch:
    """Build every request as the same call would be, as a whole answer, and submit them."""
    from ._media import resolve_sources

    if not requests:
        raise E.ConfigError("a batch needs at least one request")
    limit = model.wire.batch_limit
    if limit and len(requests) > limit:
        raise E.ConfigError(
            (
                f"{model.provider} takes at most {limit:,} requests in one batch, not {len(requests):,}: "
                "submit them as several batches"
            )
        )
    bodies = []
    for item in requests:
        messages, tools, tool_choice, options = _request(item)
        opts = model.options.merged(options)
        messages = await resolve_sources(
            as_messages(messages), model.wire, model.transport, model.max_source_bytes, model.endpoint
        )
        payload, _ = model.build_request(messages, tools, tool_choice, replace(opts, stream=False))
        bodies.append(payload)
    base_url = model.spec.base_url or ""
    call = model.wire.batch_submit(base_url, model.spec.preset, model.name, bodies)
    for _ in range(4):  # a submission takes at most a few requests (OpenAI's: two)
        _, answer = await send_json(model, call)
        result = model.wire.batch_submitted(answer, call, base_url, model.spec.preset)
        if isinstance(result, BatchState):
            return Batch(model, result, len(bodies))
        call = result
    raise E.UpstreamError(f"{model.provider}: the batch was not submitted")
