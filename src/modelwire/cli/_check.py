"""``modelwire check``: every reason the next request of a conversation would be refused or
would lose something, found offline."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._common import UsageError, _load_messages, _load_tools


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


def _rules() -> dict[str, str]:
    from ..models._preflight import RULES

    return RULES


def _cmd_check(args: argparse.Namespace) -> int:
    """A conversation -> every reason the next request to a model would be refused or
    would lose something (0: none, 1: findings, 2: bad input; with ``--fix``, of the fixed
    conversation)."""
    from ..models import _offline_model
    from ..models._preflight import repair

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
    model = _offline_model(args.model, **options)  # offline: no key is needed, none is sent
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


def _counted(args: argparse.Namespace, messages: list[Any], tools: Any, options: dict[str, Any]) -> list[Any]:
    """``check --count``: the context-window finding from the provider's own count."""
    from .._sync import run_sync
    from ..models import load_model
    from ..models._preflight import counted_finding

    model = load_model(args.model, **options)
    counted = run_sync(model.count_tokens(messages, tools=tools, tool_choice=args.tool_choice, estimate=True), "count")
    window = model.capabilities.context_window
    finding = counted_finding(counted, window, f"{model.provider}:{model.name}")
    return [finding] if finding else []
