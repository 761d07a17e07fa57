"""``modelwire count``: the input tokens of a request, counted by the provider."""

from __future__ import annotations

import argparse
import sys

from ._common import _load_messages, _load_tools


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
    from .._sync import run_sync
    from ..models import load_model

    messages = _load_messages(args.file)
    tools = _load_tools(args.tools)
    model = load_model(args.model)
    counted = run_sync(model.count_tokens(messages, tools=tools, estimate=args.estimate), "count")
    print(f"{counted.input_tokens} input tokens" + (" (an estimate)" if counted.estimated else ""))
    print(counted.source, file=sys.stderr)
    return 0
