"""The ``modelwire`` command line."""

from __future__ import annotations

import argparse
import sys

from . import __version__


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(out=sys.stdout)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="modelwire", description="Plug real LLM providers into agents.")
    parser.add_argument("--version", action="version", version=f"modelwire {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="replay a built-in reply stream and fold it into a message (no API key)")
    demo.set_defaults(func=_cmd_demo)
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
