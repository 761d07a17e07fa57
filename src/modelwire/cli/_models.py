"""``modelwire models``: the providers, one model's capabilities, and the table beside the
providers' own lists."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ._common import ENVIRONMENT, UsageError

# How long `models --capabilities` waits for what the provider publishes: the answer is what the
# user asked for, so it waits as an HTTP read does, not the half second a call gives it.
ASKED_SECONDS = 30.0


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


def _cmd_models(args: argparse.Namespace) -> int:
    from ..protocols import all_presets

    if args.capabilities or args.live or args.forget:
        return _one_model(args)
    if args.verify or args.crosscheck or args.write_patch or args.catalog:
        return _verify_table(args)

    rows: list[tuple[str, ...]] = [("provider", "protocol", "key variable", "set?", "example model string", "base URL")]
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
        from ..models._learned import learned_rules
        from ..models.config import REPLAY_KEY, resolve

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

    from ..models import load_model
    from ..models._lookup import CapabilityCache
    from ..models.capabilities import from_table

    model = load_model(name)  # the key is needed: the provider is asked
    # afresh, not the cached answer, and waited for as a command's answer is (not a call's half second)
    published = asyncio.run(model.provider_capabilities(cache=CapabilityCache(None), budget=ASKED_SECONDS))
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

    from ..models import _crosscheck, _verify

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
    import asyncio
    from dataclasses import fields

    from ..errors import MissingKeyError
    from ..models import _offline_model, load_model
    from ..models.config import REPLAY_KEY, resolve
    from ..protocols import ModelCapabilities

    spec = resolve(name, api_key=REPLAY_KEY)
    try:  # with the key at hand, what the provider publishes joins the table
        keyed = load_model(name) if spec.preset.key_env and spec.preset.key_required else None
    except MissingKeyError:
        keyed = None
    if keyed is not None:
        model = keyed
        caps = asyncio.run(keyed.lookup_capabilities(budget=ASKED_SECONDS))
    else:  # no key needed to read the table
        model = _offline_model(name)
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
        shown = "not known" if value is None else _shown(value)
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
