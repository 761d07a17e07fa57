"""What every dialect shares: a request read as a :class:`Turn`, and an :class:`Encoder`
that writes the agent's events in the dialect's stream format.

The modelwire / AgentScope event dialect lives here too; AG-UI and the Vercel UI message
stream have a module each. A dialect is a ``read(data) -> Turn`` function and an
``Encoder`` subclass; the app knows nothing else about them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..event import CustomEvent, AgentEvent, event_to_json, parse_event
from ..message import Msg, ToolCallBlock, ToolResultBlock, UserMsg

JSON = dict[str, Any]


class BadRequest(Exception):
    """A request this app cannot take; answered with 400 and the reason."""


@dataclass
class Resume:
    """The client's answer to a parked reply: confirmations, external results, or stop."""

    reply_id: str | None = None  # None: found from the call ids (AG-UI names only those)
    confirm: dict[str, bool] = field(default_factory=dict)  # call id -> allowed
    results: dict[str, ToolResultBlock] = field(default_factory=dict)  # call id -> result
    interrupt: bool = False
    about: set[str] = field(default_factory=set)  # other call ids naming the reply
    partial: bool = False  # the client sent its whole message: answers to calls not waiting are ignored
    token: str | None = None  # the reply's resume token, which only its client was given

    def call_ids(self) -> set[str]:
        return set(self.confirm) | set(self.results) | self.about


@dataclass
class Turn:
    """One request: the conversation so far, the new input, or an answer to a parked reply."""

    history: list[Msg] = field(default_factory=list)  # becomes the agent's context
    inputs: list[Msg] = field(default_factory=list)  # what the reply answers
    resume: Resume | None = None
    info: JSON = field(default_factory=dict)  # what the dialect echoes back (AG-UI's ids)


def split_history(messages: list[Msg]) -> tuple[list[Msg], list[Msg]]:
    """The trailing user (and system) messages are the input; what comes before is history."""
    cut = len(messages)
    while cut > 0 and messages[cut - 1].role in ("user", "system"):
        cut -= 1
    if cut == len(messages):
        raise BadRequest("the last message must be the user's (or resume a parked reply)")
    return messages[:cut], messages[cut:]


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; ``data`` is JSON-encoded unless it is already a string."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


class Encoder:
    """Writes one reply's events in a stream format.

    ``msg`` is the reply as the agent keeps it, folded up to the event being encoded (the
    app sets it), so an encoder can read a finished tool call or result whole."""

    headers: list[tuple[bytes, bytes]] = []

    def __init__(self, turn: Turn, session_id: str) -> None:
        self.turn = turn
        self.session_id = session_id
        self.msg: Msg | None = None
        self.reply_id: str | None = None  # the reply, when no ``msg`` is at hand (a stream followed from elsewhere)

    @property
    def reply(self) -> Msg:
        """The reply being encoded (the app sets ``msg`` before the first event)."""
        assert self.msg is not None, "the app sets msg before an event is encoded"
        return self.msg

    def event(self, ev: AgentEvent) -> list[bytes]:
        raise NotImplementedError

    def token(self, token: str) -> list[bytes]:
        """Right after the reply starts: its resume token, which a client sends to take the
        stream up again after a lost connection, to stop the reply, and with its answer
        when the reply parks."""
        return []

    def parked(self, calls: list[ToolCallBlock], token: str) -> list[bytes]:
        """The stream ends with the reply waiting for ``calls`` (confirmation or results);
        ``token`` is the reply's resume token, which the client must send with its answer."""
        return []

    def error(self, message: str) -> list[bytes]:
        """The reply failed outside the agent's own error handling."""
        raise NotImplementedError

    def done(self) -> list[bytes]:
        return []


# -- the modelwire / AgentScope event dialect ----------------------------------------------


def read_events(data: JSON) -> Turn:
    keys = [k for k in ("input", "messages", "resume") if k in data]
    token = data.get("resume_token")
    if len(keys) != 1:
        raise BadRequest(
            'send {"input": "text"}, {"messages": [message, ...]} or {"resume": event, "resume_token": token}'
        )
    if "input" in data:
        if not isinstance(data["input"], str) or not data["input"]:
            raise BadRequest('"input" must be a non-empty string')
        return Turn(inputs=[UserMsg("user", data["input"])])
    if "messages" in data:
        if not isinstance(data["messages"], list) or not data["messages"]:
            raise BadRequest('"messages" must be a non-empty list of messages')
        try:
            messages = [Msg.from_dict(m) for m in data["messages"]]
        except (ValueError, TypeError, AttributeError) as exc:  # modelwire's ValidationError is a ValueError
            raise BadRequest(f"a message is not valid: {str(exc).splitlines()[0]}") from None
        history, inputs = split_history(messages)
        return Turn(history=history, inputs=inputs)
    try:
        ev = parse_event(data["resume"])
    except (ValueError, TypeError, AttributeError) as exc:
        raise BadRequest(f'"resume" is not an event: {str(exc).splitlines()[0]}') from None
    token = token if isinstance(token, str) else None
    if ev.type == "USER_CONFIRM_RESULT":
        return Turn(
            resume=Resume(ev.reply_id, confirm={r.tool_call.id: r.confirmed for r in ev.confirm_results}, token=token)
        )
    if ev.type == "EXTERNAL_EXECUTION_RESULT":
        return Turn(resume=Resume(ev.reply_id, results={r.id: r for r in ev.execution_results}, token=token))
    if ev.type == "USER_INTERRUPT":
        return Turn(resume=Resume(ev.reply_id, interrupt=True, token=token))
    raise BadRequest(f'"resume" is USER_CONFIRM_RESULT, EXTERNAL_EXECUTION_RESULT or USER_INTERRUPT, not {ev.type}')


class EventsEncoder(Encoder):
    """Each event as its JSON on a ``data:`` line, exactly as ``reply_stream()`` yields it."""

    def event(self, ev: AgentEvent) -> list[bytes]:
        return [sse(event_to_json(ev))]

    def token(self, token: str) -> list[bytes]:
        # Not an event of the reply (CUSTOM folds into nothing): what a client must keep.
        return [
            sse(
                event_to_json(
                    CustomEvent(
                        name=RESUME_EVENT, value={"reply_id": self.msg.id if self.msg else None, "resume_token": token}
                    )
                )
            )
        ]

    def parked(self, calls: list[ToolCallBlock], token: str) -> list[bytes]:
        return self.token(token)  # said again last, where the answer is written

    def error(self, message: str) -> list[bytes]:
        rid = self.msg.id if self.msg is not None else self.reply_id
        return [sse({"type": "ERROR", "reply_id": rid, "message": message}, event="error")]


RESUME_EVENT = "modelwire.resume"
