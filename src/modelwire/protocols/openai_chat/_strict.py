"""OpenAI's strict mode (Structured Outputs) as a schema is sent in it: the keywords it keeps,
and the schema a server's strict mode takes. Chat Completions and the Responses API share it."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Mapping, Sequence

from .._protocol import ModelCapabilities, Preset

__all__ = ["STRICT_RULES", "strict_defaults", "strict_format"]

log = logging.getLogger("modelwire.protocols.openai")

# OpenAI's strict mode (Structured Outputs): every object closed and every property
# required; the keywords below kept, others moved into the description. The openai SDK's
# to_strict_json_schema writes pydantic schemas the same way.
STRICT_RULES: dict[str, Any] = dict(
    keywords=frozenset(
        {
            "default",
            "pattern",
            "format",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "minItems",
            "maxItems",
            "prefixItems",
        }
    ),
    formats=frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}),
)


def strict_defaults(caps: ModelCapabilities, preset: Preset) -> ModelCapabilities:
    """``caps`` with ``default`` among the keywords strict mode refuses, on a server whose
    strict mode refuses it (``dialect["strict_default"] = False``: Azure OpenAI), so a strict
    tool holding one is refused before it is sent rather than answered with a 400."""
    if preset.dialect.get("strict_default") is not False:
        return caps
    where = f"the {preset.name} preset (strict mode refuses a non-null default)"
    return replace(caps, strict_refused=("default",), sources={**caps.sources, "strict_refused": where})


def strict_format(
    schema: dict[str, Any], model: str, dialect: Mapping[str, Any] | None = None, refused: Sequence[str] | None = None
) -> tuple[dict[str, Any], bool]:
    """The schema to send and whether it can go with ``strict: true``: in the strict subset
    where it can be written so; else as given, unenforced (said in the debug log). A server
    whose strict mode refuses ``default`` (``dialect["strict_default"] = False``, or a
    keyword in ``refused``: what the model's refusals taught) gets it in the description
    instead."""
    from ...formatters._schema import NotStrict, SchemaRules, strict_schema

    rules = STRICT_RULES
    gone = set(refused or ())
    if dialect is not None and dialect.get("strict_default") is False:
        gone.add("default")
    if gone:
        rules = {**STRICT_RULES, "keywords": STRICT_RULES["keywords"] - gone}
    try:
        strict, notes = strict_schema(schema, SchemaRules(**rules))
    except NotStrict as exc:
        log.debug("json_schema for %s goes with strict: false: %s", model, exc)
        return schema, False
    for note in notes:
        log.debug("json_schema for %s: %s", model, note)
    return strict, True
