"""``modelwire conform``: probe a server that says it speaks a provider's protocol."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ._common import UsageError, _positive_int


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

    from ..conform import probe, profile_toml

    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise UsageError(f"--api-key-env {args.api_key_env}: that variable is not set")
    if args.write_profile is not None:
        from ..models.config import check_profile_name

        check_profile_name(args.write_profile)  # before any request: it goes into modelwire.toml as written
    if args.profile:
        if args.base_url or args.model or args.protocol or args.write_profile:
            raise UsageError(
                (
                    "--profile takes the server, model and protocol from the profile: leave out --base-url, "
                    "-m, --protocol and --write-profile"
                )
            )
        from ..conform import probe_profile

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
