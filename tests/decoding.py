"""Decode SSE bodies into one reply and fold it, the way an agent would (test helper)."""

from __future__ import annotations

import random

from modelwire import event as E
from modelwire.protocols import get_protocol
from modelwire.errors import ProviderError
from modelwire.message import AssistantMsg, Msg

CLOCK = "2026-01-01T00:00:00"


def counter_ids():
    n = iter(range(10**9))
    return lambda: f"id{next(n)}"


def decode(
    protocol: str, bodies: list[bytes], split_seed: int | None = None
) -> tuple[Msg, list[E.EventBase], ProviderError | None]:
    """Decode one or more model calls into one reply, as an agent would, and fold."""
    reply = AssistantMsg("agent", [], id="reply", created_at=CLOCK)
    events: list[E.EventBase] = [
        E.ReplyStartEvent(id="start", created_at=CLOCK, session_id="s", reply_id="reply", name="agent")
    ]
    error = None
    ids = counter_ids()
    for body in bodies:
        wire = get_protocol(protocol)
        decoder = wire.decoder(wire.adapter_class()("reply", new_id=ids, clock=lambda: CLOCK), keep=True)
        try:
            if split_seed is None:
                decoder.feed(body)
            else:
                rnd = random.Random(split_seed)
                i = 0
                while i < len(body):
                    n = rnd.choice([1, 2, 3, 7, 64, 512, 4096])
                    decoder.feed(body[i : i + n])
                    i += n
            decoder.close()
        except ProviderError as err:
            error = err
        events += decoder.events
    events.append(
        E.ReplyEndEvent(
            id="end",
            created_at=CLOCK,
            session_id="s",
            reply_id="reply",
            finished_reason="error" if error else "completed",
        )
    )
    assert E.check_stream(events) == len(events)
    for ev in events:
        reply.append_event(ev)
    return reply, events, error


def ends(events):
    return [e for e in events if e.type == "MODEL_CALL_END"]


def decode_whole(protocol: str, answer: dict) -> tuple[Msg, list[E.EventBase]]:
    """A whole (non-streamed) answer, decoded by the protocol's ``answer_events`` into one
    reply and folded, with the same ids and clock as :func:`decode`."""
    from modelwire.adapters import decode_answer

    wire = get_protocol(protocol)
    reply = AssistantMsg("agent", [], id="reply", created_at=CLOCK)
    events: list[E.EventBase] = [
        E.ReplyStartEvent(id="start", created_at=CLOCK, session_id="s", reply_id="reply", name="agent")
    ]
    events += decode_answer(
        wire.adapter_class()("reply", new_id=counter_ids(), clock=lambda: CLOCK), wire.answer_events(answer)
    )
    events.append(
        E.ReplyEndEvent(id="end", created_at=CLOCK, session_id="s", reply_id="reply", finished_reason="completed")
    )
    assert E.check_stream(events) == len(events)
    for ev in events:
        reply.append_event(ev)
    return reply, events
