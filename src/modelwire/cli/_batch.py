"""``modelwire batch``: requests submitted at the provider's batch price, and their results."""

from __future__ import annotations

import argparse
import json
import sys


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
    from .._sync import run_sync
    from ..models import load_model

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
