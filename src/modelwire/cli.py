"""The ``modelwire`` command line."""

from __future__ import annotations

import argparse
import sys

from . import __version__


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(out=sys.stdout)


def _cmd_decode(args: argparse.Namespace) -> int:
    """Raw SSE body -> the rebuilt assistant message (or the events)."""
    from .adapters import PROTOCOLS, StreamDecoder, get_adapter
    from .errors import ProviderError
    from .event import ReplyEndEvent, ReplyStartEvent, dumps_jsonl
    from .message import AssistantMsg

    if args.protocol not in PROTOCOLS:  # argparse choices already checks; kept for direct calls
        print(f"modelwire decode: unknown protocol {args.protocol!r}", file=sys.stderr)
        return 2
    try:
        body = sys.stdin.buffer.read() if args.file == "-" else open(args.file, "rb").read()
    except OSError as exc:
        print(f"modelwire decode: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    reply = AssistantMsg(args.name, [])
    start = ReplyStartEvent(session_id="decode", reply_id=reply.id, name=args.name)
    decoder = StreamDecoder(get_adapter(args.protocol)(reply.id), keep=True)
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
            error=error.to_error_info() if error else None,
        )
    )
    for event in events:
        reply.append_event(event)
    if args.events:
        sys.stdout.write(dumps_jsonl(events))
    else:
        sys.stdout.write(reply.model_dump_json(indent=2) + "\n")
    if error is not None:
        print(f"modelwire decode: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


def _cmd_format(args: argparse.Namespace) -> int:
    """A JSON list of messages -> the request payload of one protocol."""
    import json

    from pydantic import TypeAdapter, ValidationError

    from .errors import FormatError
    from .formatters import get_formatter
    from .message import Msg

    def load(path: str) -> object:
        try:
            text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
            return json.loads(text)
        except OSError as exc:
            raise SystemExit(_fail(f"cannot read {path}: {exc.strerror}"))
        except ValueError as exc:
            raise SystemExit(_fail(f"{path} is not JSON: {exc}"))

    data = load(args.file)
    try:
        messages = TypeAdapter(list[Msg]).validate_python(data)
    except ValidationError as exc:
        return _fail(f"{args.file} is not a list of messages: {exc}")
    tools = load(args.tools) if args.tools else None
    choice = args.tool_choice
    try:
        payload = get_formatter(args.protocol)().format(messages, tools, choice)
    except (FormatError, ValueError, TypeError) as exc:
        return _fail(str(exc))
    json.dump(payload, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def _cmd_cassette(args: argparse.Namespace) -> int:
    from .cassettes import Cassette, CassetteError, import_vcr
    from .cassettes._show import summarize

    try:
        if args.cassette_command == "show":
            for line in summarize(Cassette.load(args.file)):
                print(line)
            return 0
        cassette = import_vcr(args.file, args.output)
        cassette.save()
        print(f"wrote {cassette.path} ({len(cassette.interactions)} interaction(s))")
        return 0
    except (OSError, ValueError, KeyError, CassetteError) as exc:
        return _fail(f"cassette {args.cassette_command}: {exc}")


def _fail(message: str) -> int:
    print(f"modelwire: {message}", file=sys.stderr)
    return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="modelwire", description="Plug real LLM providers into agents.")
    parser.add_argument("--version", action="version", version=f"modelwire {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="replay a built-in reply stream and fold it into a message (no API key)")
    demo.set_defaults(func=_cmd_demo)
    decode = sub.add_parser("decode", help="decode a raw SSE response body into the assistant message it carries")
    decode.add_argument("--protocol", required=True, choices=["anthropic", "openai-chat", "openai-responses"])
    decode.add_argument("--events", action="store_true", help="print the events as JSON lines instead of the message")
    decode.add_argument("--name", default="assistant", help="the name to give the rebuilt message")
    decode.add_argument("file", help="the SSE body, or - for standard input")
    decode.set_defaults(func=_cmd_decode)
    fmt = sub.add_parser("format", help="turn a JSON list of messages into a provider's request payload")
    fmt.add_argument("--protocol", required=True, choices=["anthropic", "openai-chat", "openai-responses"])
    fmt.add_argument("--tools", help="a JSON file with a list of tool definitions")
    fmt.add_argument("--tool-choice", help="auto, none, required, or a tool name")
    fmt.add_argument("file", help="a JSON list of messages (Msg.to_dict() form), or - for standard input")
    fmt.set_defaults(func=_cmd_format)
    cas = sub.add_parser("cassette", help="inspect or import recorded provider traffic")
    cas_sub = cas.add_subparsers(dest="cassette_command", metavar="ACTION", required=True)
    show = cas_sub.add_parser("show", help="summarize a cassette: requests, models, events, usage")
    show.add_argument("file")
    imp = cas_sub.add_parser("import", help="convert a VCR.py / pytest-recording YAML cassette")
    imp.add_argument("file")
    imp.add_argument("-o", "--output", help="where to write (default: FILE with .json)")
    cas.set_defaults(func=_cmd_cassette)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
