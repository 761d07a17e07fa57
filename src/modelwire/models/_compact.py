"""Compacting a conversation on request, outside a turn, with the provider's own endpoint
(``WireProtocol.compact_request``): the same formatter, options and media as a request would
have, sent to where the provider compacts; its answer is the compacted window as messages
(the user messages it kept, and the compaction block, whose provenance binds it to the
endpoint that made it: see ``message.BINDINGS``)."""

from __future__ import annotations

import json
from typing import Any

from .. import errors as E
from ..message import AssistantMsg, Msg, UserMsg
from ..protocols import HTTPCall
from ._body import encode_body, send_call

__all__ = ["compact"]

_LIMIT = 64 << 20  # what is read of a compacted answer: the window, encrypted, and the user's messages


async def compact(model: Any, messages: Any, options: Any) -> list[Msg]:
    """The compacted window of ``messages`` (see :meth:`HTTPModel.compact`)."""
    from ..message import as_messages
    from ._media import resolve_sources

    messages = await resolve_sources(
        as_messages(messages), model.wire, model.transport, model.max_source_bytes, model.endpoint
    )
    payload, opts = model.build_request(messages, None, None, options)
    found = model.wire.compact_request(model.url(), payload, model.name, model.spec.preset)
    if found is None:
        raise E.UnsupportedOptionError(
            "compact",
            model.provider,
            f"{model.wire.description} has no endpoint that compacts a conversation on request; ask for the "
            "compaction option in a turn where the provider takes it, or trim the history",
            model=model.name,
        )
    url, body = found
    # What the caller put in extra_body goes too, as the provider's SDK sends its extra_body:
    # the endpoint takes it or says why not; never dropped because the request's fields are.
    body.update((key, payload[key]) for key in opts.extra_body or () if key in payload and key not in body)
    headers = {**(opts.extra_headers or {}), "accept": "application/json"}
    _, text = await send_call(model, HTTPCall("POST", url, headers, encode_body(body)), _LIMIT)
    try:
        answer = json.loads(text)
    except ValueError as exc:
        raise E.StreamProtocolError(
            f"the compaction at {url.split('?')[0]} answered what is not JSON: {text[:200]!r} ({exc})"
        ) from None
    if not isinstance(answer, dict):
        raise E.StreamProtocolError(f"the compaction at {url.split('?')[0]} answered a JSON {type(answer).__name__}")
    return [_message(model, kind, part) for kind, part in model.wire.compacted_window(answer)]


def _message(model: Any, kind: str, part: Any) -> Msg:
    """One message of the window: a user message it kept, or an answer decoded by the
    protocol's adapter (its blocks recording where they came from, as a reply's do)."""
    if kind == "user":
        if isinstance(part, list):  # a part the protocol keeps whole: a provider block, from here
            part = [_kept(p, model) if isinstance(p, dict) else p for p in part]
        return UserMsg("user", part)
    from ..adapters import decode_answer
    from .._ids import new_id

    reply_id = new_id()
    adapter = model.wire.new_adapter(reply_id, model.spec.preset, model_name=model.name)
    adapter.endpoint = model.endpoint
    adapter.bound_model, adapter.bound_account = model._bound_model, model._bound_account
    msg = AssistantMsg("assistant", [], id=reply_id)
    for event in decode_answer(adapter, model.wire.answer_events(part)):
        msg.append_event(event, strict=True)
    return msg


def _kept(raw: dict[str, Any], model: Any) -> Any:
    """A user message's part the protocol has no block for, kept whole as a JSON data block
    bound to where it was made (what an adapter's ``provider_block`` keeps of an answer's)."""
    import base64

    from ..message import Base64Source, DataBlock, provenance

    data = base64.b64encode(json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode()).decode("ascii")
    extras: dict[str, Any] = {
        "provider_metadata": provenance(model.provider, model.wire.name, model.endpoint),
        "provider_block_type": raw.get("type"),
    }
    return DataBlock(source=Base64Source(data=data, media_type="application/json"), **extras)
