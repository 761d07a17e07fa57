"""What the commands share: the parser's error lines and help layout, the argument types,
the flags chat and serve both take, and reading the files a command is given."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from typing import Any, NoReturn

ENVIRONMENT = """environment:
  MODELWIRE_MODEL       the model when none is given (PROVIDER:MODEL or a profile name)
  <PROVIDER>_API_KEY    each provider's key (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY ...;
                        `modelwire models` lists them all and whether they are set)
  <PROVIDER>_BASE_URL   another endpoint for a provider (ANTHROPIC_BASE_URL, OPENAI_BASE_URL ...)
  MODELWIRE_DEBUG=1     tracebacks instead of one-line errors (as --debug)

start with `modelwire demo`: a small agent with a real tool, replaying a recorded conversation."""


class UsageError(Exception):
    """A mistake on the command line: one line, exit status 2."""

    __module__ = "modelwire.cli"  # its public home


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
    out: list[str] = []
    for action in parser._actions:
        out += action.option_strings
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _all_options(sub)
    return out


def _view(args: argparse.Namespace) -> str:
    return "events" if args.events else ("json" if args.json else "pretty")


def _view_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--events", action="store_true", help="print the raw event stream, one event per line")
    group.add_argument("--json", action="store_true", help="print the events as JSON lines, for piping")


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


def _load_messages(path: str) -> list[Any]:
    """A conversation from a JSON file: a list of messages (``Msg.to_dict()`` form), or an
    object holding one as ``messages`` (or ``context``, as ``Agent.save`` writes)."""
    from ..errors import ValidationError
    from ..message import Msg

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


def _tools(args: argparse.Namespace) -> list[Any]:
    """The tools ``--tool MODULE:FUNCTION`` names (none by default), as Tool objects."""
    import importlib

    from ..agent import Tool

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

    from ..agent import MCPServer

    if spec.startswith(("http://", "https://")):
        return MCPServer.http(spec)
    words = shlex.split(spec)
    if not words:
        raise UsageError('--mcp takes a URL or a command line, such as --mcp "uvx mcp-server-time"')
    return MCPServer.stdio(words[0], words[1:])


def _agent_flags(parser: argparse.ArgumentParser) -> None:
    """The model and agent options chat and serve share."""
    from ..protocols._caps import EFFORT_LEVELS

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
