"""``modelwire cassette``: show, recheck, transpose and import recorded provider traffic."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._common import UsageError, _Formatter, _Parser, _positive_int


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


def _cmd_cassette(args: argparse.Namespace) -> int:
    from ..cassettes import Cassette, import_vcr
    from ..cassettes._show import summarize

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
    from ..agent import UsageLimits
    from ..cassettes import recheck

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

    from ..cassettes import transpose

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
