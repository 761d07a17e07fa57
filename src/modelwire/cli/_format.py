"""``modelwire format``: a JSON list of messages turned into one protocol's request payload."""

from __future__ import annotations

import argparse
import json
import sys

from ._common import _load_messages, _load_tools


def _format_command(fmt: argparse.ArgumentParser) -> None:
    from ..protocols import protocol_names

    protocols = protocol_names()
    fmt.add_argument(
        "--protocol", required=True, choices=protocols, help=f"the wire protocol of the payload: {', '.join(protocols)}"
    )
    fmt.add_argument("--tools", help="a JSON file with a list of tool definitions")
    fmt.add_argument("--tool-choice", help="auto, none, required, or a tool name")
    fmt.add_argument("file", help="a JSON list of messages (Msg.to_dict() form), or - for standard input")
    fmt.set_defaults(func=_cmd_format)


def _cmd_format(args: argparse.Namespace) -> int:
    """A JSON list of messages -> the request payload of one protocol."""
    from ..protocols import get_formatter

    messages = _load_messages(args.file)
    tools = _load_tools(args.tools)
    payload = get_formatter(args.protocol)().format(messages, tools, args.tool_choice)
    json.dump(payload, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0
