"""The ``modelwire`` command line."""

from __future__ import annotations

import argparse
import sys

from . import __version__


def _view(args: argparse.Namespace) -> str:
    return "events" if args.events else ("json" if args.json else "pretty")


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(out=sys.stdout, view=_view(args))


def _cmd_models(args: argparse.Namespace) -> int:
    import os

    from .models.config import all_presets

    print(f"{'provider':<18}{'protocol':<18}{'key variable':<24}{'set?':<9}base URL")
    for preset in all_presets().values():
        key = preset.key_env or "-"
        state = "yes" if preset.key_env and os.environ.get(preset.key_env) else ("n/a" if not preset.key_required else "no")
        if not preset.key_required and state != "yes":
            state = "optional"
        base = (os.environ.get(preset.base_url_env) if preset.base_url_env else None) or preset.base_url or f"${preset.base_url_env}"
        print(f"{preset.name:<18}{preset.protocol:<18}{key:<24}{state:<9}{base}")
    chosen = os.environ.get("MODELWIRE_MODEL")
    print(f"\nMODELWIRE_MODEL={chosen}" if chosen else "\nMODELWIRE_MODEL is not set; chat uses --model, then modelwire.toml's default")
    return 0


def _cmd_chat(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from ._render import renderer
    from .agent import Agent
    from .demo import calculate
    from .errors import ModelwireError
    from .message import UserMsg
    from .models import ConfigError, load_model

    try:
        model = load_model(args.model, **({"base_url": args.base_url} if args.base_url else {}))
    except ConfigError as exc:
        return _fail(str(exc))
    agent = Agent("assistant", model, args.system, tools=[calculate], max_iters=args.max_iters)
    view = _view(args)

    async def one(prompt: str) -> str | None:
        render = renderer(view, sys.stdout, show_thinking=args.show_thinking) if view == "pretty" else renderer(view, sys.stdout)
        loop = asyncio.get_running_loop()
        # Ctrl-C stops the reply, not the program.
        try:
            loop.add_signal_handler(signal.SIGINT, agent.interrupt)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - not on this platform
            pass
        try:
            async for event in agent.reply_stream(UserMsg("user", prompt)):
                render(event)
        finally:
            try:
                loop.remove_signal_handler(signal.SIGINT)
            except (NotImplementedError, RuntimeError):  # pragma: no cover
                pass
        render.close()
        reply = agent.context[-1]
        return reply.error.type if reply.error is not None else None

    if args.prompt:
        try:
            failed = asyncio.run(one(" ".join(args.prompt)))
        except ModelwireError as exc:
            return _fail(str(exc))
        return 1 if failed else 0
    print(f"modelwire chat with {model.provider}:{model.name} (Ctrl-C stops a reply, Ctrl-D or 'exit' quits)")
    while True:
        try:
            prompt = input("you> ")
        except EOFError:
            print()
            return 0
        except KeyboardInterrupt:
            print()
            continue
        if prompt.strip() in ("exit", "quit"):
            return 0
        if not prompt.strip():
            continue
        try:
            asyncio.run(one(prompt))
        except ModelwireError as exc:
            print(f"modelwire: {exc}", file=sys.stderr)


def _cmd_decode(args: argparse.Namespace) -> int:
    """Raw SSE body -> the rebuilt assistant message (or the events)."""
    from .errors import ConfigError, ProviderError
    from .event import ReplyEndEvent, ReplyStartEvent, dumps_jsonl
    from .message import AssistantMsg
    from .protocols import get_protocol

    try:
        protocol = get_protocol(args.protocol)
    except ConfigError as exc:
        print(f"modelwire decode: {exc}", file=sys.stderr)
        return 2
    try:
        body = sys.stdin.buffer.read() if args.file == "-" else open(args.file, "rb").read()
    except OSError as exc:
        print(f"modelwire decode: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    reply = AssistantMsg(args.name, [])
    start = ReplyStartEvent(session_id="decode", reply_id=reply.id, name=args.name)
    decoder = protocol.decoder(protocol.new_adapter(reply.id), keep=True)
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


def _view_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--events", action="store_true", help="print the raw event stream, one event per line")
    group.add_argument("--json", action="store_true", help="print the events as JSON lines")


def build_parser() -> argparse.ArgumentParser:
    from .protocols import protocol_names

    protocols = protocol_names()
    parser = argparse.ArgumentParser(prog="modelwire", description="Plug real LLM providers into agents.")
    parser.add_argument("--version", action="version", version=f"modelwire {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="a small agent with a real tool, replaying a recorded conversation (no API key)")
    _view_flags(demo)
    demo.set_defaults(func=_cmd_demo)
    chat = sub.add_parser("chat", help="talk to a model through the agent (one prompt, or interactive without one)")
    chat.add_argument("prompt", nargs="*", help="the prompt; without one, an interactive session starts")
    chat.add_argument("--model", help="PROVIDER:MODEL or a profile name (default: MODELWIRE_MODEL, then modelwire.toml)")
    chat.add_argument("--base-url", help="send requests to this base URL instead of the provider's")
    chat.add_argument("--system", default="You are a helpful assistant. Use the calculator for arithmetic.", help="the system prompt")
    chat.add_argument("--max-iters", type=int, default=8)
    chat.add_argument("--show-thinking", action=argparse.BooleanOptionalAction, default=True, help="show thinking (dimmed) or collapse it to one line")
    _view_flags(chat)
    chat.set_defaults(func=_cmd_chat)
    models = sub.add_parser("models", help="the providers and presets, the key each needs, and whether it is set")
    models.set_defaults(func=_cmd_models)
    decode = sub.add_parser("decode", help="decode a raw SSE response body into the assistant message it carries")
    decode.add_argument("--protocol", required=True, choices=protocols, help="the wire protocol of the body")
    decode.add_argument("--events", action="store_true", help="print the events as JSON lines instead of the message")
    decode.add_argument("--name", default="assistant", help="the name to give the rebuilt message")
    decode.add_argument("file", help="the SSE body, or - for standard input")
    decode.set_defaults(func=_cmd_decode)
    fmt = sub.add_parser("format", help="turn a JSON list of messages into a provider's request payload")
    fmt.add_argument("--protocol", required=True, choices=protocols, help="the wire protocol of the payload")
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
    try:
        return func(args)
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, as command-line tools do.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
