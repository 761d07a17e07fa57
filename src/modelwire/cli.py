"""The ``modelwire`` command line.

Every mistake is one line on stderr that names what is wrong and how to fix it, in command
line terms, with exit status 2 (1 when a provider answered with an error); ``--debug``
shows the Python traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import sys
from typing import Any, Callable, Iterator, NoReturn

from ._version import __version__

ENVIRONMENT = """environment:
  MODELWIRE_MODEL       the model when none is given (PROVIDER:MODEL or a profile name)
  <PROVIDER>_API_KEY    each provider's key (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY ...;
                        `modelwire models` lists them all and whether they are set)
  <PROVIDER>_BASE_URL   another endpoint for a provider (ANTHROPIC_BASE_URL, OPENAI_BASE_URL ...)
  MODELWIRE_DEBUG=1     tracebacks instead of one-line errors (as --debug)

start with `modelwire demo`: a small agent with a real tool, replaying a recorded conversation."""


class UsageError(Exception):
    """A mistake on the command line: one line, exit status 2."""


def _port(text: str) -> int:
    """A TCP port, 1 to 65535 (0: any free one), for argparse."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0 to 65535)")
    return port


def _positive_int(text: str) -> int:
    """A whole number, at least 1, for argparse."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str | None:
        # A default worth saying: not "(default: None)" or "(default: False)" on every flag.
        if action.default in (None, False, [], ()):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and did-you-mean for commands and options."""

    def error(self, message: str) -> NoReturn:
        hint = ""
        if message.startswith("unrecognized arguments:"):
            words = message.split(":", 1)[1].split()
            known = _all_options(self)
            for word in words:
                name = word.split("=")[0]
                if name in known:  # an option of another command: "did you mean" itself would mislead
                    users = _commands_with(self, name)
                    hint = f"; {name} is an option of {', '.join(users)}, not of this command" if users else ""
                    break
                close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
                if close:
                    hint = f"; did you mean {close[0]}?"
                    break
        elif "invalid choice:" in message:
            bad = message.split("invalid choice:", 1)[1].split("(")[0].strip().strip("'\"")
            choices = [c for action in self._actions if action.choices for c in action.choices]
            close = difflib.get_close_matches(bad.lower(), [str(c).lower() for c in choices], n=1, cutoff=0.5)
            if close:
                hint = f"; did you mean {close[0]}?"
        sys.stderr.write(f"{self.prog}: {message}{hint} (see {self.prog} --help)\n")
        raise SystemExit(2)


def _commands_with(parser: argparse.ArgumentParser, option: str) -> list[str]:
    """The subcommands that take ``option``."""
    return [
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, sub in action.choices.items()
        if any(option in a.option_strings for a in sub._actions)
    ]


def _all_options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string of a parser and of its subcommands (argparse reports a stray
    option at the top level, whichever subcommand it was meant for)."""
    out = []
    for action in parser._actions:
        out += action.option_strings
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _all_options(sub)
    return out


def _view(args: argparse.Namespace) -> str:
    return "events" if args.events else ("json" if args.json else "pretty")


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(out=sys.stdout, view=_view(args))


def _cmd_models(args: argparse.Namespace) -> int:
    from .protocols import all_presets

    if args.capabilities or args.live or args.forget:
        return _one_model(args)
    if args.verify or args.crosscheck or args.write_patch or args.catalog:
        return _verify_table(args)

    rows = [("provider", "protocol", "key variable", "set?", "example model string", "base URL")]
    rows += [_provider_row(preset) for preset in all_presets().values()]
    # Each column as wide as its widest cell, two spaces apart: no value runs into the next.
    widths = [max(len(row[i]) for row in rows) + 2 for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("".join(cell.ljust(width) for cell, width in zip(row, widths)) + row[-1])
    chosen = os.environ.get("MODELWIRE_MODEL")
    print(
        f"\nMODELWIRE_MODEL={chosen}"
        if chosen
        else "\nMODELWIRE_MODEL is not set: chat uses -m/--model, then modelwire.toml's `default`"
    )
    print(
        (
            "each provider's base URL can be changed with <PROVIDER>_BASE_URL (DEEPSEEK_BASE_URL for "
            "deepseek:, shown where a provider needs one) or --base-url"
        )
    )
    return 0


def _provider_row(preset: Any) -> tuple[str, ...]:
    key = preset.key_env or "-"
    variables = preset.dialect.get("key_envs") or ((preset.key_env,) if preset.key_env else ())
    is_set = any(os.environ.get(v) for v in variables)
    state = "yes" if is_set else ("optional" if not preset.key_required else "no")
    base = os.environ.get(preset.base_url_variable) or preset.base_url or f"${preset.base_url_variable}"
    example = f"{preset.name}:{preset.example}" if preset.example else f"{preset.name}:MODEL"
    return (preset.name, preset.protocol, key, state, example, base)


def _one_model(args: argparse.Namespace) -> int:
    """``models --capabilities MODEL [--live]`` and ``models --forget MODEL``."""
    if args.forget:
        from .models._learned import learned_rules
        from .models.config import REPLAY_KEY, resolve

        spec = resolve(args.forget, api_key=REPLAY_KEY)
        gone = learned_rules().forget(spec.model)
        print(
            f"{spec.preset.name}:{spec.model}: forgot what {gone} refusal record(s) taught"
            if gone
            else f"{spec.preset.name}:{spec.model}: nothing was learned"
        )
        return 0
    if not args.capabilities:
        raise UsageError("--live goes with --capabilities MODEL")
    return _live_drift(args.capabilities) if args.live else _show_capabilities(args.capabilities)


def _live_drift(name: str) -> int:
    """The shipped table beside what the provider publishes now, field by field: each
    difference (the provider wins), and each field only the provider says. Exit status 1
    when the table has drifted, 0 when it agrees."""
    import asyncio

    from .models import load_model
    from .models._lookup import CapabilityCache
    from .models.capabilities import from_table

    model = load_model(name)  # the key is needed: the provider is asked
    published = asyncio.run(model.provider_capabilities(cache=CapabilityCache(None)))  # afresh, not the cached answer
    if published is None:
        raise UsageError(
            (
                f"{model.provider}:{model.name}: the provider published nothing to compare (no models "
                "endpoint, or no answer from it)"
            )
        )
    table = from_table(model.name)
    known = table.known() if table is not None else {}
    entry = table.sources.get(next(iter(known)), "") if table is not None and known else ""
    print(f"{model.provider}:{model.name}: the table ({entry or 'no entry'}) beside the provider's answer")
    drifted = 0
    for field_name, said in published.known().items():
        if field_name not in known:
            print(f"  {field_name}: not in the table; the provider says {_shown(said)}")
        elif known[field_name] != said:
            drifted += 1
            print(
                (
                    f"  {field_name}: the table says {_shown(known[field_name])}, the provider says "
                    f"{_shown(said)} (the provider wins)"
                )
            )
    print(f"{drifted} field(s) drifted" if drifted else "the table agrees with the provider on every field both know")
    return 1 if drifted else 0


def _verify_table(args: argparse.Namespace) -> int:
    """``models --verify PROVIDER`` / ``models --crosscheck``: the table beside the provider's
    list or the installed libraries' catalogs; exit status 1 when anything differs."""
    from datetime import datetime, timezone
    from pathlib import Path

    from .models import _crosscheck, _verify

    if bool(args.verify) == bool(args.crosscheck):
        raise UsageError("--write-patch and --catalog go with one of --verify PROVIDER and --crosscheck")
    if args.catalog and not args.crosscheck:
        raise UsageError("--catalog goes with --crosscheck")
    today = datetime.now(timezone.utc).date().isoformat()
    if args.verify:
        checks = [(args.verify, _verify.verify_provider(args.verify, today))]
    else:
        checks = _crosscheck.crosscheck(args.catalog)
    patches = []
    for what, check in checks:
        print("\n".join(_verify.report_lines(check, what)))
        if check.differing:
            patches.append(_verify.patch_text(check, f"modelwire models: {what} beside the table, {today}"))
    if args.write_patch:
        Path(args.write_patch).write_text("\n".join(patches), encoding="utf-8")
        print(f"wrote {args.write_patch}" if patches else f"wrote {args.write_patch} (nothing differs)")
    return 1 if patches else 0


def _shown(value: Any) -> str:
    return (
        "none"
        if value == ()
        else ", ".join(value)
        if isinstance(value, tuple)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )


def _show_capabilities(name: str) -> int:
    """One model's capability record, field by field, with where each value came from."""
    from dataclasses import fields

    from .models import load_model
    from .models.config import REPLAY_KEY, resolve
    from .protocols import ModelCapabilities

    import asyncio

    from .errors import MissingKeyError

    spec = resolve(name, api_key=REPLAY_KEY)
    try:  # with the key at hand, what the provider publishes joins the table
        keyed = load_model(name) if spec.preset.key_env and spec.preset.key_required else None
    except MissingKeyError:
        keyed = None
    if keyed is not None:
        model = keyed
        caps = asyncio.run(keyed.lookup_capabilities())
    else:  # no key needed to read the table
        model = load_model(name, api_key=REPLAY_KEY, base_url=spec.base_url or "http://unused")
        caps = model.capabilities
    print(f"{spec.preset.name}:{spec.model} ({spec.preset.protocol})")
    assumed = model.assumed_from
    if assumed is not None:
        print(f"assumed from {assumed}: no row of the table names this model; its family's rules are used")
    rows = []
    for f in fields(ModelCapabilities):
        if f.name == "sources":
            continue
        value = getattr(caps, f.name)
        shown = (
            "not known"
            if value is None
            else (
                "none"
                if value == ()
                else ", ".join(value)
                if isinstance(value, tuple)
                else str(value).lower()
                if isinstance(value, bool)
                else str(value)
            )
        )
        rows.append((f.name, shown, caps.sources.get(f.name, "")))
    width = [max(len(r[i]) for r in rows) + 2 for i in range(2)]
    for row in rows:
        print(row[0].ljust(width[0]) + row[1].ljust(width[1]) + row[2])
    print(
        (
            "\nnot known: modelwire sends what the protocol takes and the provider decides; set any "
            "field with capabilities={...} in a profile"
        )
    )
    return 0


def _chat_options(args: argparse.Namespace) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if args.base_url:
        options["base_url"] = args.base_url
    if args.max_tokens is not None:
        options["max_tokens"] = args.max_tokens
    if args.temperature is not None:
        options["temperature"] = args.temperature
    if args.thinking is not None:
        options["thinking"] = args.thinking
    if args.effort is not None:
        options["reasoning_effort"] = args.effort
    if getattr(args, "compaction", None) is not None:
        options["compaction"] = args.compaction
    return options


def _costed(model: Any) -> Any:
    """The model, its calls priced: the chat's closing line shows what each reply cost."""
    if hasattr(model, "ask_for_cost"):
        model.ask_for_cost()
    return model


def _shown_thinking(model: Any, args: argparse.Namespace) -> Any:
    """A model that thinks unasked and omits what it thought (Claude Opus 5, Sonnet 5): asked
    to show it summarized, since the chat and the page show thinking (``--no-show-thinking``
    and ``--thinking``/``--no-thinking`` say otherwise)."""
    caps, options = getattr(model, "capabilities", None), getattr(model, "options", None)
    wanted = getattr(args, "show_thinking", True) and args.thinking is None
    if (
        wanted
        and caps is not None
        and options is not None
        and caps.thinking_default
        and caps.display_default == "omitted"
        and options.thinking_display is None
    ):
        model.options = model.options.merged({"thinking_display": "summarized"})
    return model


class _Waiting:
    """A small indicator on a terminal's stderr until the first token (nothing otherwise)."""

    def __init__(self) -> None:
        self.on = sys.stderr.isatty()
        self.shown = False

    def start(self) -> None:
        if self.on:
            from ._render import no_color

            sys.stderr.write("…" if no_color() else "\x1b[2m…\x1b[0m")
            sys.stderr.flush()
            self.shown = True

    def stop(self) -> None:
        if self.shown:
            sys.stderr.write("\b \b")
            sys.stderr.flush()
            self.shown = False


@contextlib.contextmanager
def _on_ctrl_c(loop: Any, stop: Any) -> Iterator[None]:
    """Inside, Ctrl-C calls ``stop`` instead of raising KeyboardInterrupt."""
    import signal

    try:
        loop.add_signal_handler(signal.SIGINT, stop)
    except (NotImplementedError, RuntimeError):  # pragma: no cover - not on this platform
        pass
    try:
        yield
    finally:
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):  # pragma: no cover
            pass


def _cmd_chat(args: argparse.Namespace) -> int:
    import asyncio

    from ._render import renderer
    from .agent import Agent
    from .message import UserMsg
    from .models import load_model

    model = _costed(_shown_thinking(load_model(args.model, **_chat_options(args)), args))
    agent = Agent("assistant", model, args.system, tools=_tools(args), max_iters=args.max_iters)
    view = _view(args)
    interrupted = False

    async def one(prompt: str) -> str | None:
        nonlocal interrupted
        # Piped or redirected, stdout gets the answer only; the rest goes to stderr.
        side = sys.stdout if sys.stdout.isatty() else sys.stderr
        render = (
            renderer(view, sys.stdout, show_thinking=args.show_thinking, stats=sys.stderr, side=side)
            if view == "pretty"
            else renderer(view, sys.stdout)
        )
        loop = asyncio.get_running_loop()
        waiting = _Waiting() if view == "pretty" else None

        def stop() -> None:
            nonlocal interrupted
            interrupted = True
            agent.interrupt()

        with _on_ctrl_c(loop, stop):  # Ctrl-C stops the reply, not the program
            try:
                if waiting:
                    waiting.start()
                # aclosing: when rendering fails (a reader gone: BrokenPipeError), the reply's
                # stream and its HTTP response are closed here, in the loop, not left for the
                # interpreter's exit, where closing them prints a traceback.
                async with contextlib.aclosing(
                    agent.reply_stream(UserMsg("user", prompt), raise_errors=False)
                ) as events:  # said from the reply below
                    async for event in events:
                        if waiting and event.type not in ("REPLY_START", "MODEL_CALL_START"):
                            waiting.stop()
                        render(event)
            finally:
                if waiting:
                    waiting.stop()
        render.close()
        reply = agent.context[-1]
        if reply.error is not None and view != "pretty":
            print(f"modelwire: error ({reply.error.type}): {reply.error.message}", file=sys.stderr)
        return reply.error.type if reply.error is not None else None

    with asyncio.Runner() as runner:  # one event loop for the session: one connection pool
        try:
            return _chat_session(args, runner, one, model, lambda: interrupted)
        finally:
            if agent.toolsets:
                runner.run(agent.aclose())  # the MCP servers' processes end with the session


def _chat_session(args: argparse.Namespace, runner: Any, one: Any, model: Any, interrupted: Any) -> int:
    """One prompt (given or piped), or the interactive loop, on the session's event loop."""
    piped = not sys.stdin.isatty()
    if args.prompt or piped:
        # Piped text and a prompt together (llm's habit): the text, then the prompt about it.
        stdin = sys.stdin.read().strip() if piped else ""
        prompt = "\n\n".join(p for p in (stdin, " ".join(args.prompt or ())) if p)
        if not prompt:
            raise UsageError('the prompt is empty; give one (modelwire chat "Hi") or pipe one in')
        failed = runner.run(one(prompt))
        if interrupted():
            return 130
        return _provider_exit(failed)
    try:
        import readline  # noqa: F401 - line editing and history at the prompt
    except ImportError:  # pragma: no cover - not on this platform
        pass
    print(
        f"modelwire chat with {model.provider}:{model.name} (Ctrl-C stops a reply, Ctrl-D or 'exit' quits)",
        file=sys.stderr,
    )
    while True:
        try:
            prompt = input("you> ")
        except EOFError:
            print(file=sys.stderr)
            return 0
        except KeyboardInterrupt:
            print(file=sys.stderr)
            continue
        if prompt.strip() in ("exit", "quit"):
            return 0
        if prompt.strip():
            runner.run(one(prompt))


def _provider_exit(failed: str | None) -> int:
    return 1 if failed else 0


def _framing_preset(protocol: Any, name: str | None, body: bytes) -> Any:
    """The preset whose endpoint framed this body: the one named (``--preset``), else, for
    a body that is no text stream (AWS event-stream frames: Claude on Bedrock), the first of
    the protocol's presets whose answers arrive in other framing; None: the protocol's own."""
    from .protocols import all_presets

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
    from .errors import ProviderError
    from .event import ReplyEndEvent, ReplyStartEvent, dumps_jsonl
    from .message import AssistantMsg, ErrorInfo
    from .protocols import get_protocol, sniff

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


def _read_bytes(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _load_json(path: str, what: str) -> Any:
    raw = _read_bytes(path)
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"{path} is not JSON ({exc}); it should hold {what}") from None


def _rules() -> dict[str, str]:
    from .models._preflight import RULES

    return RULES


def _load_messages(path: str) -> list[Any]:
    """A conversation from a JSON file: a list of messages (``Msg.to_dict()`` form), or an
    object holding one as ``messages`` (or ``context``, as ``Agent.save`` writes)."""
    from .errors import ValidationError
    from .message import Msg

    data = _load_json(path, "a list of messages")
    if isinstance(data, dict) and isinstance(data.get("messages", data.get("context")), list):
        data = data.get("messages", data.get("context"))
    if not isinstance(data, list):
        raise UsageError(f"{path} holds a JSON {type(data).__name__}; it should hold a list of messages")
    messages = []
    for n, item in enumerate(data):
        try:
            messages.append(Msg.from_dict(item) if isinstance(item, dict) else Msg.from_dict({}))
        except (ValidationError, ValueError) as exc:
            problems = exc.errors() if isinstance(exc, ValidationError) else [{"loc": (), "msg": str(exc)}]
            first = problems[0]
            where = ".".join(str(p) for p in first["loc"]) or "the message"
            raise UsageError(
                f"{path}: message [{n}]: {where}: {first['msg']} (a message has `name`, `role` and `content`)"
            ) from None
    return messages


def _load_tools(path: str | None) -> list[Any] | None:
    if not path:
        return None
    tools = _load_json(path, "a list of tool definitions")
    if not isinstance(tools, list):
        raise UsageError(
            f'{path} holds a JSON {type(tools).__name__}; it should hold a list of tool definitions ([{{"name": ...}}])'
        )
    return tools


def _cmd_check(args: argparse.Namespace) -> int:
    """A conversation -> every reason the next request to a model would be refused or
    would lose something (0: none, 1: findings, 2: bad input; with ``--fix``, of the fixed
    conversation)."""
    from .models import load_model
    from .models._preflight import repair
    from .models.config import REPLAY_KEY, resolve

    messages = _load_messages(args.file)
    tools = _load_tools(args.tools)
    options: dict[str, Any] = {}
    for item in args.option or ():
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--option {item!r} is not KEY=VALUE (for example thinking=true)")
        try:
            options[key] = json.loads(raw)
        except ValueError:
            options[key] = raw
    spec = resolve(args.model, api_key=REPLAY_KEY)  # offline: no key is needed, none is sent
    model = load_model(
        args.model,
        api_key=REPLAY_KEY,
        base_url=spec.base_url or "http://offline.invalid",
        capability_lookup=False,
        **options,
    )
    findings = model.preflight(messages, tools, args.tool_choice)
    assumed = model.assumption()
    if assumed is not None:
        print(f"note: {assumed}", file=sys.stderr)
    if args.count:
        findings = [f for f in findings if f.rule != "context-window"] + _counted(args, messages, tools, options)
    if args.json:
        sys.stdout.write(json.dumps([f.to_dict() for f in findings], ensure_ascii=False, indent=1) + "\n")
    else:
        for finding in findings:
            print(finding)
        print(
            f"{len(findings)} finding(s) for {model.provider}:{model.name}"
            if findings
            else f"clean: the next request to {model.provider}:{model.name} would be accepted as it is",
            file=sys.stderr,
        )
    if args.fix:
        fixed = repair(model, messages)
        with open(args.fix, "w", encoding="utf-8") as out:
            json.dump([m.to_dict() for m in fixed], out, ensure_ascii=False, indent=1)
        left = model.preflight(fixed, tools, args.tool_choice)
        print(
            f"the conversation with modelwire's fixes: {args.fix}"
            + (f" ({len(left)} finding(s) no fix can repair)" if left else " (it checks clean)"),
            file=sys.stderr,
        )
        return 1 if left else 0  # what the fixed conversation would meet
    return 1 if findings else 0


def _cmd_format(args: argparse.Namespace) -> int:
    """A JSON list of messages -> the request payload of one protocol."""
    from .protocols import get_formatter

    messages = _load_messages(args.file)
    tools = _load_tools(args.tools)
    payload = get_formatter(args.protocol)().format(messages, tools, args.tool_choice)
    json.dump(payload, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def _counted(args: argparse.Namespace, messages: list[Any], tools: Any, options: dict[str, Any]) -> list[Any]:
    """``check --count``: the context-window finding from the provider's own count."""
    from ._sync import run_sync
    from .models import load_model
    from .models._preflight import counted_finding

    model = load_model(args.model, **options)
    counted = run_sync(model.count_tokens(messages, tools=tools, tool_choice=args.tool_choice, estimate=True), "count")
    window = model.capabilities.context_window
    finding = counted_finding(counted, window, f"{model.provider}:{model.name}")
    return [finding] if finding else []


def _count_command(count: argparse.ArgumentParser) -> None:
    count.add_argument("-m", "--model", required=True, help="PROVIDER:MODEL or a profile")
    count.add_argument("--tools", help="a JSON file with a list of tool definitions")
    count.add_argument(
        "--estimate",
        action="store_true",
        help="where the provider cannot count, print an estimate from the request's size (marked as one)",
    )
    count.add_argument("file", help="a JSON list of messages (Msg.to_dict() form), or - for standard input")
    count.set_defaults(func=_cmd_count)


def _cmd_count(args: argparse.Namespace) -> int:
    """The input tokens of a request: the number, then where it came from."""
    from ._sync import run_sync
    from .models import load_model

    messages = _load_messages(args.file)
    tools = _load_tools(args.tools)
    model = load_model(args.model)
    counted = run_sync(model.count_tokens(messages, tools=tools, estimate=args.estimate), "count")
    print(f"{counted.input_tokens} input tokens" + (" (an estimate)" if counted.estimated else ""))
    print(counted.source, file=sys.stderr)
    return 0


def _batch_command(batch: argparse.ArgumentParser) -> None:
    sub = batch.add_subparsers(dest="batch_command", metavar="ACTION", required=True)
    submit = sub.add_parser(
        "submit",
        help=(
            "submit a JSON-lines file of requests (each a list of messages, or {messages, tools, "
            "tool_choice, options}); print the batch id"
        ),
    )
    submit.add_argument("file", help="the requests, one JSON per line, or - for standard input")
    for name, helptext in (
        ("status", "say where a batch stands"),
        ("results", "print one JSON line per request, in order: its message, or its error"),
        ("cancel", "ask the provider to stop a batch"),
    ):
        action = sub.add_parser(name, help=helptext)
        action.add_argument("id", help="the batch's id, as submit printed it")
    for action in sub.choices.values():
        action.add_argument(
            "-m", "--model", required=True, help="PROVIDER:MODEL or a profile (the one the batch was submitted with)"
        )
    sub.choices["results"].add_argument(
        "--wait", type=float, metavar="SECONDS", help="wait for the batch to end, asking every SECONDS"
    )
    batch.set_defaults(func=_cmd_batch)


def _cmd_batch(args: argparse.Namespace) -> int:
    """``modelwire batch submit|status|results|cancel``."""
    from ._sync import run_sync
    from .models import load_model

    model = load_model(args.model)

    async def go() -> int:
        if args.batch_command == "submit":
            from pathlib import Path

            text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
            requests = [json.loads(line) for line in text.splitlines() if line.strip()]
            batch = await model.batch(requests)
            print(batch.id)
            print(f"submitted {len(requests)} requests: {batch.state.status}", file=sys.stderr)
            return 0
        batch = await model.batch_by_id(args.id)
        if args.batch_command == "cancel":
            await batch.cancel()
        if args.batch_command == "results":
            if args.wait is not None:
                await batch.wait(poll=args.wait)
            for result in await batch.results():
                line = (
                    result.to_dict()
                    if hasattr(result, "to_dict")
                    else {"error": {"type": type(result).__name__, "message": str(result)}}
                )
                print(json.dumps(line, ensure_ascii=False))
            return 0
        counts = ", ".join(f"{k} {v}" for k, v in batch.state.counts.items())
        print(
            f"{batch.id}: {batch.state.status}"
            + (" (ended)" if batch.state.ended else "")
            + (f"; {counts}" if counts else "")
        )
        return 0

    return run_sync(go(), "batch")


def _cmd_cassette(args: argparse.Namespace) -> int:
    from .cassettes import Cassette, import_vcr
    from .cassettes._show import summarize

    if args.cassette_command == "show":
        for line in summarize(Cassette.load(args.file), cache=args.cache):
            print(line)
        return 0
    if args.cassette_command == "recheck":
        return _cassette_recheck(args)
    if args.cassette_command == "transpose":
        return _cassette_transpose(args)
    cassette = import_vcr(args.file, args.output)
    cassette.save()
    print(f"wrote {cassette.path} ({len(cassette.interactions)} interaction(s))")
    return 0


def _cassette_recheck(args: argparse.Namespace) -> int:
    """Each recorded request sent again; the drift printed; 0, 1 or 2 by the worst."""
    from .agent import UsageLimits
    from .cassettes import recheck

    limits = None
    if args.max_tokens is not None or args.max_cost is not None:
        limits = UsageLimits(total_tokens=args.max_tokens, cost=args.max_cost)
    report = recheck(
        args.paths,
        base_url=args.base_url,
        allow_hosts=args.allow_host or (),
        config=args.config,
        max_calls=args.max_calls,
        limits=limits,
        timeout=args.timeout,
        update=args.update,
    )
    if args.json:
        print(json.dumps(report.to_dict(), indent=1, default=str))
    else:
        for line in report.lines():
            print(line)
        for path in report.updated:
            print(f"updated {path}")
    if report.refused:
        print(
            (
                f"modelwire: {len(report.refused)} request(s) not sent: no preset, profile or --base-url of yours "
                "names their host (REFUSED above); --allow-host HOST names one you trust"
            ),
            file=sys.stderr,
        )
    unanswered = [d for d in report.drifts if d.what.startswith("no answer")]
    if unanswered and len(unanswered) == report.calls:
        print(
            (
                f"modelwire: could not connect: {len(unanswered)} request(s) had no answer "
                f"({unanswered[0].what.removeprefix('no answer: ')})"
            ),
            file=sys.stderr,
        )
    elif report.exit_status:
        worse = sum(d.severity != "info" for d in report.drifts)
        print(
            f"{worse} finding(s) above info"
            + (f"; {len(report.refused)} request(s) refused" if report.refused else "")
            + (f"; stopped: {report.stopped}" if report.stopped else ""),
            file=sys.stderr,
        )
    return report.exit_status


def _cassette_transpose(args: argparse.Namespace) -> int:
    """The recorded conversations sent to another model; the side-by-side report."""
    from pathlib import Path

    from .cassettes import transpose

    if args.live and not args.gate:
        raise UsageError("--live goes with --gate (without --gate, transpose always sends)")
    report = transpose(args.path, args.model, out=args.output, base_url=args.base_url, gate=args.gate, live=args.live)
    text = json.dumps(report.to_dict(), indent=1) if args.json else "\n".join(report.lines())
    print(text)
    if args.report:
        Path(args.report).write_text(
            (json.dumps(report.to_dict(), indent=1) if args.report.endswith(".json") else "\n".join(report.lines()))
            + "\n",
            encoding="utf-8",
        )
    if args.gate:
        failed = [f for f in report.gate or () if f.kind != "note"]
        if failed:
            print(f"{len(failed)} finding(s) fail the gate for {args.model}", file=sys.stderr)
        return 1 if failed else 0
    return 1 if any(row.target.error for row in report.rows) else 0


def _view_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--events", action="store_true", help="print the raw event stream, one event per line")
    group.add_argument("--json", action="store_true", help="print the events as JSON lines, for piping")


def _serve_app(args: argparse.Namespace) -> tuple[Any, str]:
    """The app ``modelwire serve`` runs, and a line saying what it serves.

    Without a model, or without the model's key, it serves the demo replay, and says why
    on stderr and in a banner on the page."""
    from .agent import Agent
    from .errors import MissingKeyError
    from .models import load_model
    from .serve import EventStreamApp

    model_name = args.model or os.environ.get("MODELWIRE_MODEL")
    if model_name is None:
        return _demo_app(args, "no model was chosen")
    try:
        # One model for every request (its connection pool is shared); an unknown model
        # or a missing key shows here, at start.
        options = {**_chat_options(args), "max_connections": args.max_connections}
        model = _shown_thinking(load_model(model_name, **options), args)
    except MissingKeyError as exc:
        return _demo_app(args, f"{exc.variable or 'the API key'} is not set for {model_name}")

    tools = _tools(args)
    for tool in tools:
        tool.requires_confirmation = args.confirm_tools

    def make_agent() -> Any:
        return Agent("assistant", model, args.system, tools=tools, max_iters=args.max_iters)

    return EventStreamApp(
        make_agent, page_config={"model": model_name}, source_policy=_source_policy(args), **_protections(args)
    ), model_name


def _source_policy(args: argparse.Namespace) -> Any:
    """What the media clients name may be read from (``--media``, ``--media-host``)."""
    from .sources import SourcePolicy

    return SourcePolicy(urls=args.media, hosts=tuple(args.media_host or ()), max_bytes=args.media_max_bytes)


def _protections(args: argparse.Namespace) -> dict[str, Any]:
    """What guards the served app: the host names it answers to, the other origins whose
    pages may call it, a bearer token."""
    from .serve import LOOPBACK

    hosts = [*LOOPBACK, *(args.allow_host or ())]
    if args.host not in ("0.0.0.0", "::", ""):
        hosts.append(args.host)
    from .serve import store_for

    return {
        "allowed_hosts": hosts,
        "allowed_origins": args.allow_origin or (),
        "auth_token": args.token,
        "store": store_for(args.store),
    }


def _demo_app(args: argparse.Namespace, why: str) -> tuple[Any, str]:
    from .cassettes import use_cassette
    from .demo import DEMO_QUESTION, demo_agent, demo_cassette
    from .serve import EventStreamApp

    def make_demo() -> Any:
        agent = demo_agent()  # its own Tool objects: setting them affects this agent only
        for tool in agent.tools.values():
            tool.requires_confirmation = args.confirm_tools
        return agent

    banner = (
        f"Demo replay: {why}, so the model's side comes from a recording "
        "(whatever you ask, the recorded answer plays; the calculator really runs). "
        "Start modelwire serve --model PROVIDER:MODEL with the provider's key set to talk to a real model."
    )
    # The recording's conversation is fixed: any question (asked alone, without the page's
    # history) replays it; a confirmed or denied call resumes into its second exchange.
    wrap = lambda: use_cassette(demo_cassette(), "none", ignore_fields=("messages.*.content",), allow_unused=True)  # noqa: E731
    config = {"model": "demo replay", "banner": banner, "prompt": DEMO_QUESTION}
    return EventStreamApp(
        make_demo,
        wrap_reply=wrap,
        history=False,
        page_config=config,
        source_policy=_source_policy(args),
        **_protections(args),
    ), f"the demo replay ({why})"


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        raise UsageError("modelwire serve needs an ASGI server: pip install 'modelwire[serve]' (uvicorn)") from None
    _check_port(args.host, args.port)
    args.token, token_from = _serve_token(args)
    app, what = _serve_app(args)
    page = f"http://{args.host}:{args.port}/"
    sys.stderr.write(f"modelwire serve: {what} on {page}  (POST /reply; Ctrl-C stops)\n")
    if args.token:  # never printed, whole or in part: a terminal's scrollback and CI logs are read by others
        sys.stderr.write(
            f"modelwire serve: /reply wants the bearer token from {token_from} ({len(args.token)} characters); "
            f"open the page as {page}#token=<that token>\n"
        )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        guards = [
            f"host names {', '.join(sorted(app.allowed_hosts))} (add the names clients use with --allow-host)",
            "pages of this origin only"
            + (
                f" and {', '.join(sorted(app.allowed_origins))}"
                if app.allowed_origins
                else " (--allow-origin for a front end elsewhere)"
            ),
            f"a bearer token ({token_from})"
            if args.token
            else (
                "NO token: anyone who reaches this port can run the agent on your key "
                f"(set {SERVE_TOKEN_VARIABLE}, or --token-file FILE)"
            ),
        ]
        sys.stderr.write(
            f"modelwire serve: warning: {args.host} is not a loopback address; what guards it: "
            + "; ".join(guards)
            + "\n"
        )
    sys.stderr.flush()
    import logging

    logging.getLogger("modelwire.serve").setLevel(logging.INFO)
    if not logging.getLogger().handlers:
        logging.basicConfig(format="modelwire serve: %(message)s", stream=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


SERVE_TOKEN_VARIABLE = "MODELWIRE_SERVE_TOKEN"


def _serve_token(args: argparse.Namespace) -> tuple[str | None, str]:
    """The bearer token ``serve`` wants on /reply, and where it came from: ``--token-file``,
    ``--token`` (seen by anyone who lists the processes: said so), else
    ``MODELWIRE_SERVE_TOKEN``; none when none is given."""
    if args.token_file and args.token:
        raise UsageError("give the token once: --token-file FILE or --token, not both")
    if args.token_file:
        try:
            from pathlib import Path

            token = Path(args.token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--token-file {args.token_file}: cannot read it ({exc.__class__.__name__})") from None
        where = f"--token-file {args.token_file}"
    elif args.token:
        token, where = args.token, "--token"
        sys.stderr.write(
            f"modelwire serve: note: a token given as --token is visible to anyone who lists this machine's "
            f"processes; {SERVE_TOKEN_VARIABLE} or --token-file FILE keep it out of sight\n"
        )
    else:
        token, where = os.environ.get(SERVE_TOKEN_VARIABLE) or None, SERVE_TOKEN_VARIABLE
    if token is not None and (not token or any(not (" " < c < "\x7f") for c in token)):
        raise UsageError(
            f"the token from {where} is empty or holds a space, a line break or a character outside ASCII; "
            "a bearer token is printable ASCII"
        )
    return token, where


def _tools(args: argparse.Namespace) -> list[Any]:
    """The tools ``--tool MODULE:FUNCTION`` names (none by default), as Tool objects."""
    import importlib

    from .agent import Tool

    tools = []
    if args.tool and os.getcwd() not in sys.path and "" not in sys.path:
        # A module of the user's own folder (--tool mytools:search), as `python -m` finds it.
        sys.path.insert(0, os.getcwd())
    for spec in args.tool or ():
        module, _, name = spec.partition(":")
        if not module or not name:
            raise UsageError(f"--tool takes MODULE:FUNCTION (for example modelwire.demo:calculate), not {spec!r}")
        try:
            func = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise UsageError(f"--tool {spec}: {exc}") from None
        tools.append(func if isinstance(func, Tool) else Tool(func))
    for spec in getattr(args, "mcp", None) or ():
        tools.append(_mcp_server(spec))
    return tools


def _mcp_server(spec: str) -> Any:
    """``--mcp URL`` (streamable HTTP) or ``--mcp "COMMAND ARGS..."`` (a process over stdio)."""
    import shlex

    from .agent import MCPServer

    if spec.startswith(("http://", "https://")):
        return MCPServer.http(spec)
    words = shlex.split(spec)
    if not words:
        raise UsageError('--mcp takes a URL or a command line, such as --mcp "uvx mcp-server-time"')
    return MCPServer.stdio(words[0], words[1:])


def _check_port(host: str, port: int) -> None:
    """A port that cannot be listened on is said before anything claims to serve on it."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UsageError(
                f"cannot listen on {host}:{port}: {exc.strerror} (another server there? choose another with --port)"
            ) from None


def _agent_flags(parser: argparse.ArgumentParser) -> None:
    """The model and agent options chat and serve share."""
    from .protocols._caps import EFFORT_LEVELS

    parser.add_argument("--base-url", help="send requests to this base URL instead of the provider's")
    parser.add_argument("--system", default=None, help="the system prompt (default: none)")
    parser.add_argument(
        "--tool",
        action="append",
        metavar="MODULE:FUNCTION",
        help="a Python function the agent may call, such as modelwire.demo:calculate; repeatable (default: no tools)",
    )
    parser.add_argument(
        "--mcp",
        action="append",
        metavar="SERVER",
        help=(
            "an MCP server whose tools the agent may call: a URL (streamable HTTP) or a command line "
            '("uvx mcp-server-time"); repeatable (needs the mcp extra)'
        ),
    )
    parser.add_argument("--max-tokens", type=int, help="the most tokens one model call may write")
    parser.add_argument("--temperature", type=float, help="sampling temperature")
    parser.add_argument(
        "--thinking",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="turn the model's thinking on (shown, summarized where the model would omit it) or off",
    )
    parser.add_argument(
        "--effort",
        choices=EFFORT_LEVELS,
        metavar="LEVEL",
        help=f"how hard the model works: {', '.join(EFFORT_LEVELS)} (the levels your model has)",
    )
    parser.add_argument(
        "--compaction",
        type=_positive_int,
        metavar="TOKENS",
        help="let the provider compact the conversation once its input passes TOKENS (Anthropic, OpenAI Responses)",
    )
    parser.add_argument("--max-iters", type=int, default=8, help="the most model calls in one reply (tool rounds)")


# A server streams one reply per provider connection: its pool is sized for the replies a
# worker serves at once, not for a script's few calls (load_model's default is 20; past it a
# reply waits for a connection, and fails after the pool timeout).
SERVE_CONNECTIONS = 1000


def _media_flags(serve: argparse.ArgumentParser) -> None:
    """The flags of ``modelwire serve`` that say what media clients may name (``_source_policy``)."""
    serve.add_argument(
        "--media",
        choices=("public", "hosts", "none", "any"),
        default="public",
        help=(
            "which URLs clients may name for media: public (https on public addresses, and --media-host; "
            "the default), hosts (only --media-host), none (data: only), any (also this server's network); "
            "a client's file: URL is never read"
        ),
    )
    serve.add_argument(
        "--media-host",
        action="append",
        metavar="NAME",
        help="a host (or *.domain) clients may name media on, whatever it resolves to (your own); repeatable",
    )
    serve.add_argument(
        "--media-max-bytes",
        type=int,
        default=20 * 1024 * 1024,
        metavar="N",
        help="the most one fetched media source may hold (default 20 MB)",
    )


def _serve_command(serve: argparse.ArgumentParser) -> None:
    """The flags of ``modelwire serve``."""
    serve.epilog = ENVIRONMENT
    serve.add_argument(
        "-m",
        "--model",
        help="PROVIDER:MODEL; default: MODELWIRE_MODEL; without a model or without its key, the demo replay",
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    serve.add_argument("--port", type=_port, default=8000, help="the port to listen on")
    _agent_flags(serve)
    serve.add_argument(
        "--confirm-tools", action="store_true", help="ask the user before each tool call (the page shows Allow / Deny)"
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="a host name clients reach this server by (besides localhost); repeatable; '*' for any",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="an origin (https://app.example) whose pages may call /reply; repeatable",
    )
    _media_flags(serve)
    serve.add_argument(
        "--token-file",
        metavar="FILE",
        help=(
            "require the bearer token FILE holds on /reply (kept out of ps, unlike --token; or set "
            f"{SERVE_TOKEN_VARIABLE})"
        ),
    )
    serve.add_argument(
        "--store",
        metavar="URL",
        help=(
            "where parked replies wait: memory (this process, the default) or redis://HOST:PORT/DB, "
            "shared by workers and kept across restarts"
        ),
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=SERVE_CONNECTIONS,
        metavar="N",
        help=(
            f"connections to the provider at once, one per streaming reply (default {SERVE_CONNECTIONS}); "
            "replies past it wait for one"
        ),
    )
    serve.add_argument(
        "--token",
        metavar="SECRET",
        help="require 'authorization: Bearer SECRET' on /reply (the page takes it from #token=SECRET)",
    )
    serve.set_defaults(func=_cmd_serve)


def _check_command(check: argparse.ArgumentParser) -> None:
    """The arguments of ``modelwire check``."""
    check.add_argument(
        "file", help="the conversation: a JSON list of messages (or an Agent.save file), or - for standard input"
    )
    check.add_argument(
        "-m", "--model", required=True, help="PROVIDER:MODEL (or a profile) the conversation goes to next"
    )
    check.add_argument("--tools", help="a JSON file with a list of tool definitions")
    check.add_argument("--tool-choice", help="auto, none, required, or a tool name")
    check.add_argument(
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="a model option (thinking=true, reasoning_effort=high ...); repeatable",
    )
    check.add_argument("--json", action="store_true", help="the findings as JSON (rule, index, message, fix)")
    check.add_argument("--fix", metavar="OUT.json", help="write the conversation with the fixes modelwire applies")
    check.add_argument(
        "--count",
        action="store_true",
        help=(
            "count the request's input tokens with the provider (needs its key and the network; an "
            "estimate where it cannot count) against the context window"
        ),
    )
    check.epilog = "exit status: 0 clean, 1 findings, 2 bad input. Rules: " + "; ".join(
        f"{k}: {v}" for k, v in _rules().items()
    )
    check.set_defaults(func=_cmd_check)


def _cassette_command(cas: argparse.ArgumentParser) -> None:
    """The actions of ``modelwire cassette``: show, recheck, transpose and import."""
    cas_sub = cas.add_subparsers(dest="cassette_command", metavar="ACTION", required=True, parser_class=_Parser)
    show = cas_sub.add_parser(
        "show",
        help="summarize a cassette: requests, models, events, usage, cost",
        description="summarize a cassette: requests, models, events, usage, cost",
        formatter_class=_Formatter,
    )
    show.add_argument("file", help="a modelwire cassette (JSON)")
    show.add_argument(
        "--cache",
        action="store_true",
        help="per call: prompt-cache reads and writes, and what broke the cached prefix since the call before",
    )
    _recheck_action(cas_sub)
    _transpose_action(cas_sub)
    imp = cas_sub.add_parser(
        "import",
        help="convert a VCR.py / pytest-recording YAML cassette into a modelwire one",
        description="convert a VCR.py / pytest-recording YAML cassette into a modelwire one",
        formatter_class=_Formatter,
    )
    imp.add_argument("file", help="the YAML cassette")
    imp.add_argument("-o", "--output", help="where to write (default: FILE with .json; never FILE itself)")
    cas.set_defaults(func=_cmd_cassette)


def _recheck_action(cas_sub: Any) -> None:
    """``modelwire cassette recheck``."""
    re_ = cas_sub.add_parser(
        "recheck",
        help=(
            "send each recorded request again and report where the live answers drifted (exit 0, 1 warnings, 2 errors)"
        ),
        description=(
            "send each recorded request again (credentials from the environment), decode the live answer with "
            "the same adapter and compare its structure with the recorded one: info (a new field, a new model "
            "snapshot), warning (a changed stop reason, usage fields, block order), error (an HTTP error, a missing "
            "block kind, a stream the grammar refuses). Exit status 0, 1 (warnings) or 2 (errors). No tool is run. "
            "Credentials go only to an endpoint a preset, a profile or --base-url names (or a host named with "
            "--allow-host), never over plain http off this machine: a cassette naming another host is refused, "
            "nothing sent."
        ),
        formatter_class=_Formatter,
    )
    re_.add_argument("paths", nargs="+", metavar="PATH", help="modelwire cassettes (JSON)")
    re_.add_argument("--base-url", help="send to this origin instead of the recorded one (the recorded path kept)")
    re_.add_argument(
        "--allow-host",
        action="append",
        metavar="HOST",
        help="also send (with the key) to this host, HOST or HOST:PORT, where the cassettes name it (repeatable)",
    )
    re_.add_argument(
        "--config",
        metavar="FILE",
        help="a modelwire.toml whose profiles' endpoints may have the keys (one found in the working directory is "
        "not trusted: it may come with the cassettes)",
    )
    re_.add_argument("--json", action="store_true", help="print the report as JSON, for machines")
    re_.add_argument("--max-calls", type=_positive_int, help="send at most this many requests")
    re_.add_argument(
        "--max-tokens", type=_positive_int, help="stop before a request once the live answers used this many tokens"
    )
    re_.add_argument("--max-cost", type=float, help="stop before a request once the live answers cost this much")
    re_.add_argument("--timeout", type=float, default=60.0, help="seconds per call")
    re_.add_argument(
        "--update", action="store_true", help="rewrite each live cassette from the answers it got (never a derived one)"
    )


def _transpose_action(cas_sub: Any) -> None:
    """``modelwire cassette transpose``."""
    tr = cas_sub.add_parser(
        "transpose",
        help="send each recorded conversation to another model and report both side by side",
        description=(
            "for each recorded model call, format the same history (tool results as recorded) for the target "
            "model, made valid for it as check --fix makes it, send it, record the answers into OUT, and print per "
            "call the tool calls each model chose, text length, tokens, cost and time to first token. No tool is run."
        ),
        formatter_class=_Formatter,
    )
    tr.add_argument(
        "path", metavar="PATH", help="a cassette recorded through modelwire (it keeps each call's conversation)"
    )
    tr.add_argument("-m", "--model", required=True, metavar="TARGET", help="the model to send to, provider:model")
    tr.add_argument("-o", "--output", metavar="OUT", help="the cassette to record into (default: PATH.<target>.json)")
    tr.add_argument("--report", metavar="FILE", help="also write the report to FILE (JSON when it ends in .json)")
    tr.add_argument("--base-url", help="the target's base URL (a gateway, a local server)")
    tr.add_argument("--json", action="store_true", help="print the report as JSON")
    tr.add_argument(
        "--gate",
        action="store_true",
        help=(
            "a model-upgrade gate: check each recorded call against the target's rules offline (nothing sent) and "
            "exit 1 on a refusal, a dropped block kind or a changed tool choice"
        ),
    )
    tr.add_argument(
        "--live",
        action="store_true",
        help="with --gate: also send each call to the target and compare its answers with the recorded ones",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="modelwire",
        description="Plug real LLM providers into agents.",
        epilog=ENVIRONMENT,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"modelwire {__version__}")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks instead of one-line errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, text: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=text, description=text, formatter_class=_Formatter)
        # Global flags work after the subcommand too (modelwire chat ... --debug).
        cmd.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show Python tracebacks instead of one-line errors",
        )
        return cmd

    for name, text, build in _COMMANDS:
        build(command(name, text))
    return parser


def _demo_command(demo: argparse.ArgumentParser) -> None:
    _view_flags(demo)
    demo.set_defaults(func=_cmd_demo)


def _chat_command(chat: argparse.ArgumentParser) -> None:
    chat.epilog = ENVIRONMENT
    chat.add_argument(
        "prompt", nargs="*", help="the prompt; without one (and nothing piped in), an interactive session starts"
    )
    chat.add_argument(
        "-m",
        "--model",
        help=(
            "PROVIDER:MODEL (anthropic:claude-sonnet-4-5, openai:gpt-4.1 ...) or a profile name; "
            "default: MODELWIRE_MODEL, then modelwire.toml"
        ),
    )
    _agent_flags(chat)
    chat.add_argument(
        "--show-thinking",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show thinking (dimmed) or collapse it to one line",
    )
    _view_flags(chat)
    chat.set_defaults(func=_cmd_chat)


def _models_command(models: argparse.ArgumentParser) -> None:
    models.epilog = ENVIRONMENT
    models.add_argument(
        "--capabilities",
        metavar="MODEL",
        help="show what one model accepts (PROVIDER:MODEL or a profile) and where each fact came from",
    )
    models.add_argument(
        "--live",
        action="store_true",
        help=(
            "with --capabilities: ask the provider now and print where the shipped table differs (exit 1 when it does)"
        ),
    )
    models.add_argument(
        "--verify",
        metavar="PROVIDER",
        help="list the provider's models through its Models API and print where the table differs (exit 1 if so)",
    )
    models.add_argument(
        "--crosscheck",
        action="store_true",
        help="the table beside the model catalogs of the libraries installed (LiteLLM, AgentScope, genai-prices)",
    )
    models.add_argument("--catalog", metavar="PATH", help="with --crosscheck: LiteLLM's model JSON, where it is")
    models.add_argument("--write-patch", metavar="FILE", help="with --verify or --crosscheck: the differences as TOML")
    models.add_argument(
        "--forget",
        metavar="MODEL",
        help="forget the rules the provider's refusals taught for this model (every endpoint)",
    )
    models.set_defaults(func=_cmd_models)


def _decode_command(decode: argparse.ArgumentParser) -> None:
    from .protocols import protocol_names

    protocols = protocol_names()
    decode.add_argument(
        "--protocol", required=True, choices=protocols, help=f"the wire protocol of the body: {', '.join(protocols)}"
    )
    decode.add_argument(
        "--preset",
        help=(
            "the provider whose endpoint framed the body, where it frames the protocol's events its "
            "own way (bedrock-anthropic); found from the body when not given"
        ),
    )
    decode.add_argument("--events", action="store_true", help="print the events as JSON lines instead of the message")
    decode.add_argument("--name", default="assistant", help="the name to give the rebuilt message")
    decode.add_argument("file", help="the body, or - for standard input")
    decode.set_defaults(func=_cmd_decode)


def _format_command(fmt: argparse.ArgumentParser) -> None:
    from .protocols import protocol_names

    protocols = protocol_names()
    fmt.add_argument(
        "--protocol", required=True, choices=protocols, help=f"the wire protocol of the payload: {', '.join(protocols)}"
    )
    fmt.add_argument("--tools", help="a JSON file with a list of tool definitions")
    fmt.add_argument("--tool-choice", help="auto, none, required, or a tool name")
    fmt.add_argument("file", help="a JSON list of messages (Msg.to_dict() form), or - for standard input")
    fmt.set_defaults(func=_cmd_format)


def _conform_command(conform: argparse.ArgumentParser) -> None:
    conform.add_argument("--base-url", help="the server's base URL (http://127.0.0.1:8080/v1)")
    conform.add_argument("-m", "--model", help="the model to ask for, as the server names it")
    conform.add_argument(
        "--profile",
        metavar="NAME",
        help="probe again through a profile (its server, model and key; what it handles is ok), then through modelwire",
    )
    conform.add_argument(
        "--protocol", help="the protocol the server says it speaks (default: the first conform can probe)"
    )
    conform.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable holding the server's key (none is sent without it)",
    )
    conform.add_argument("--max-requests", type=_positive_int, default=40, help="the most requests the probe sends")
    conform.add_argument("--timeout", type=float, default=300.0, help="seconds for the whole probe")
    conform.add_argument(
        "--json", action="store_true", help="print the report (and the profile it makes) as JSON, for CI"
    )
    conform.add_argument(
        "--write-profile", metavar="NAME", help="write a profile NAME that sends what this server takes"
    )
    conform.add_argument("--file", default="modelwire.toml", help="with --write-profile: the file to add it to")
    conform.set_defaults(func=_cmd_conform)


def _cmd_conform(args: argparse.Namespace) -> int:
    """The probe's rows; the profile written where asked."""
    from pathlib import Path

    from .conform import probe, profile_toml

    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise UsageError(f"--api-key-env {args.api_key_env}: that variable is not set")
    if args.write_profile is not None:
        from .models.config import check_profile_name

        check_profile_name(args.write_profile)  # before any request: it goes into modelwire.toml as written
    if args.profile:
        if args.base_url or args.model or args.protocol or args.write_profile:
            raise UsageError(
                (
                    "--profile takes the server, model and protocol from the profile: leave out --base-url, "
                    "-m, --protocol and --write-profile"
                )
            )
        from .conform import probe_profile

        report = probe_profile(args.profile, max_requests=args.max_requests, total=args.timeout)
    elif not (args.base_url and args.model):
        raise UsageError("conform needs --base-url and -m MODEL (or --profile NAME, to probe again through a profile)")
    else:
        report = probe(
            args.base_url,
            args.model,
            protocol=args.protocol,
            api_key_env=args.api_key_env,
            max_requests=args.max_requests,
            total=args.timeout,
        )
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        for line in report.lines():
            print(line)
    if args.write_profile:
        path = Path(args.file)
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if f"[profiles.{args.write_profile}]" in text:
            raise UsageError(f"{path} already has a profile {args.write_profile!r}: name another, or remove it first")
        profile = report.profile()
        path.write_text(
            text + ("\n" if text and not text.endswith("\n\n") else "") + profile_toml(args.write_profile, profile),
            encoding="utf-8",
        )
        key_hint = f" (its key read from ${args.api_key_env}, as here)" if args.api_key_env else ""
        print(
            f"wrote the profile {args.write_profile!r} to {path}: load_model({args.write_profile!r}){key_hint}",
            file=sys.stderr,
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    debug = args.debug or os.environ.get("MODELWIRE_DEBUG", "") not in ("", "0")
    try:
        return func(args)
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, as command-line tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        if debug:
            raise
        return 130
    except Exception as exc:  # noqa: BLE001 - one line for the person, the traceback with --debug
        if debug:
            raise
        from .errors import ModelwireError, ProviderError

        if isinstance(exc, ProviderError):
            sys.stderr.write(f"modelwire: {_provider_line(exc, args)}\n")
            return 1
        if isinstance(exc, (UsageError, ModelwireError, OSError)):
            sys.stderr.write(f"modelwire: {exc}\n")
            return 2
        sys.stderr.write(
            (
                f"modelwire: unexpected {type(exc).__name__}: {exc} (run again with --debug for the "
                "traceback; it may be a bug in modelwire)\n"
            )
        )
        return 1


def _provider_line(err: Any, args: argparse.Namespace) -> str:
    line = f"error ({err.error_type}): {err}"
    if err.error_type == "authentication":
        line += "; check the provider's key variable (`modelwire models` lists them)"
    return line


# modelwire's commands, in the order --help lists them: name, what it does, and what adds its flags.
_COMMANDS: tuple[tuple[str, str, Callable[[argparse.ArgumentParser], None]], ...] = (
    (
        "demo",
        "a small agent with a real tool, replaying a recorded conversation (no API key, no network)",
        _demo_command,
    ),
    (
        "chat",
        "talk to a model through the agent: one prompt (as arguments or piped in), or interactive without one",
        _chat_command,
    ),
    (
        "serve",
        "serve an agent to browsers: a chat page at /, its events at POST /reply (modelwire "
        "events, AG-UI or the Vercel UI message stream)",
        _serve_command,
    ),
    (
        "models",
        "list the providers: protocol, key variable and whether it is set, an example model string, base URL",
        _models_command,
    ),
    (
        "decode",
        "decode a raw response body (SSE, or AWS event stream) into the assistant message it carries",
        _decode_command,
    ),
    (
        "check",
        "find, offline, every reason the next request of a conversation to a model would be "
        "refused or would lose something",
        _check_command,
    ),
    ("format", "turn a JSON list of messages into a provider's request payload", _format_command),
    ("count", "count the input tokens a request would send, with the provider's own endpoint", _count_command),
    (
        "batch",
        "submit many requests at the provider's batch price, see where they stand, read their results",
        _batch_command,
    ),
    (
        "cassette",
        "inspect recorded provider traffic, recheck it against the provider, transpose it onto "
        "another model, or import VCR.py cassettes",
        _cassette_command,
    ),
    (
        "conform",
        "probe a server that says it speaks a provider's protocol (at most 40 small requests) "
        "and say what works, in which form",
        _conform_command,
    ),
)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
