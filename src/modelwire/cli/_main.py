"""The parser of every command, and ``main``: one line on stderr for each mistake."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable

from .._version import __version__
from ._batch import _batch_command
from ._cassette import _cassette_command
from ._chat import _chat_command
from ._check import _check_command
from ._common import ENVIRONMENT, UsageError, _Formatter, _Parser
from ._conform import _conform_command
from ._count import _count_command
from ._decode import _decode_command
from ._demo import _demo_command
from ._format import _format_command
from ._models import _models_command
from ._serve import _serve_command


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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
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
        from ..errors import ModelwireError, ProviderError

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
        "decode a raw response body (SSE, NDJSON or binary event frames) into the assistant message it carries",
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
