"""``modelwire decode``: a raw response body rebuilt into the assistant message it carries."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._common import UsageError, _read_bytes


def _decode_command(decode: argparse.ArgumentParser) -> None:
    from ..protocols import protocol_names

    protocols = protocol_names()
    decode.add_argument(
        "--protocol", required=True, choices=protocols, help=f"the wire protocol of the body: {', '.join(protocols)}"
    )
    decode.add_argument(
        "--preset",
        help=(
            "the preset whose endpoint framed the body, where it frames the protocol's events its "
            "own way (`modelwire models` lists the presets); found from the body when not given"
        ),
    )
    decode.add_argument("--events", action="store_true", help="print the events as JSON lines instead of the message")
    decode.add_argument("--name", default="assistant", help="the name to give the rebuilt message")
    decode.add_argument("file", help="the body, or - for standard input")
    decode.set_defaults(func=_cmd_decode)


def _framing_preset(protocol: Any, name: str | None, body: bytes) -> Any:
    """The preset whose endpoint framed this body: the one named (``--preset``), else, for
    a body that is no text stream (AWS event-stream frames: Claude on Bedrock), the first of
    the protocol's presets whose answers arrive in other framing; None: the protocol's own."""
    from ..protocols import all_presets

    presets = [p for p in all_presets().values() if p.protocol == protocol.name]
    if name is not None:
        found = next((p for p in presets if p.name == name), None)
        if found is None:
            raise UsageError(
                f"--preset {name!r} does not speak {protocol.name}; one of {', '.join(p.name for p in presets)}"
            )
        return found
    if body[:1] != b"\x00":
        return None  # text (SSE, NDJSON, JSON): the protocol's own framing; a frame's length starts with 0
    return next((p for p in presets if protocol.stream_content_type(p) != protocol.content_type), None)


def _cmd_decode(args: argparse.Namespace) -> int:
    """Raw response body -> the rebuilt assistant message (or the events)."""
    from ..errors import ProviderError
    from ..event import ReplyEndEvent, ReplyStartEvent, dumps_jsonl
    from ..message import AssistantMsg, ErrorInfo
    from ..protocols import get_protocol, sniff

    protocol = get_protocol(args.protocol)
    body = _read_bytes(args.file)
    reply = AssistantMsg(args.name, [])
    start = ReplyStartEvent(session_id="decode", reply_id=reply.id, name=args.name)
    preset = _framing_preset(protocol, args.preset, body)
    adapter = protocol.new_adapter(reply.id)
    decoder = (
        protocol.decoder_for(adapter, preset, keep=True) if preset is not None else protocol.decoder(adapter, keep=True)
    )
    error: ProviderError | None = None
    try:
        decoder.feed(body)
        decoder.close()
    except ProviderError as exc:
        error = exc
    events = [start, *decoder.events]
    events.append(
        ReplyEndEvent(
            session_id="decode",
            reply_id=reply.id,
            finished_reason="error" if error else "completed",
            error=ErrorInfo.from_dict(error.to_error_info()) if error else None,
        )
    )
    for event in events:
        reply.append_event(event, strict=True)
    if args.events:
        sys.stdout.write(dumps_jsonl(events))
    else:
        sys.stdout.write(json.dumps(reply.to_dict(), indent=2, ensure_ascii=False) + "\n")
    end = next((e for e in reversed(events) if e.type == "MODEL_CALL_END"), None)
    if end is not None:
        print(f"stop: {end.stop_reason} (the provider's: {end.provider_stop_reason})", file=sys.stderr)
    if error is not None:
        other = sniff(body)
        hint = (
            f"; this looks like the stream of another protocol, {other}: use --protocol {other}"
            if other and other != protocol.name
            else ""
        )
        print(f"modelwire decode: {type(error).__name__}: {error.message}{hint}", file=sys.stderr)
        return 1
    return 0
