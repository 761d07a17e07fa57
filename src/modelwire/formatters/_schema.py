"""JSON schemas in the subset a provider's strict mode accepts.

A provider that enforces a schema on its output (OpenAI's ``strict: true``, Anthropic's
``output_config.format``) takes only part of JSON Schema: every object closed
(``additionalProperties: false``), on some every property required, a list of keywords
and string formats. :func:`strict_schema` rewrites a schema to that subset under the
:class:`SchemaRules` a protocol declares: a keyword outside the subset is moved into the
node's description (so the model still reads the constraint, as the official SDKs do),
and what cannot be expressed at all (an object with open extra properties) raises
:class:`NotStrict`, so the caller can send the schema unenforced instead and say so.

Every property being required does not change what a valid answer is: an answer that
gives an optional property is valid against the original schema, and the user's own
model validates it as before. A field that may be null already says so in its schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SchemaRules", "NotStrict", "strict_schema"]

# Keywords that carry the structure; each is handled below, never moved.
_STRUCTURE = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
        "enum",
        "const",
        "description",
        "title",
    }
)


class NotStrict(ValueError):
    """The schema cannot be written in the strict subset (the reason is the message)."""


@dataclass(frozen=True)
class SchemaRules:
    """What one provider's strict mode accepts.

    Attributes:
        keywords: keywords kept as they are, beyond the structural ones.
        formats: string formats kept (others go into the description).
        all_required: every property must be listed in ``required``.
        any_of_for_one_of: ``oneOf`` is written as ``anyOf``.
        inline_ref_siblings: a ``$ref`` with other keys beside it is replaced by what it
            points to (else the other keys are dropped, the ``$ref`` kept).
        min_items: the ``minItems`` values kept (None: any).
        drop_null_default: a ``default: null`` is left out.
        literal_without_type: a node with ``enum`` or ``const`` loses its ``type``.
        format_on_strings_only: ``format`` is kept only on ``type: string`` nodes.
    """

    keywords: frozenset[str]
    formats: frozenset[str]
    all_required: bool = True
    any_of_for_one_of: bool = True
    inline_ref_siblings: bool = True
    min_items: frozenset[int] | None = None
    drop_null_default: bool = True
    literal_without_type: bool = False
    format_on_strings_only: bool = False


def strict_schema(schema: dict[str, Any], rules: SchemaRules) -> tuple[dict[str, Any], list[str]]:
    """``schema`` in the strict subset (a new dict; the input is not changed), and a note
    for each change that moved or dropped something. Raises :class:`NotStrict`."""
    notes: list[str] = []
    return _node(schema, rules, schema, "#", notes, ()), notes


def _node(
    node: Any, rules: SchemaRules, root: dict[str, Any], path: str, notes: list[str], seen: tuple[str, ...]
) -> Any:
    if not isinstance(node, dict):
        if node is True:
            raise NotStrict(f"{path} allows any value; give it a type")
        return node
    node = dict(node)
    out = _definitions(node, rules, root, path, notes, seen)
    ref = node.pop("$ref", None)
    if ref is not None:
        return _with_ref(ref, node, out, rules, root, path, notes, seen)
    _combinators(node, out, rules, root, path, notes, seen)
    for key in ("type", "enum", "const", "title", "description"):
        if key in node:
            out[key] = node.pop(key)
    if rules.literal_without_type and ("enum" in out or "const" in out):
        out.pop("type", None)
    kind = out.get("type")
    if kind == "object" or "properties" in node:
        _object(node, out, rules, root, path, notes, seen)
    if "items" in node:
        items = node.pop("items")
        if not isinstance(items, dict):
            raise NotStrict(f"{path}/items gives the elements no type")
        out["items"] = _node(items, rules, root, f"{path}/items", notes, seen)
    elif kind == "array" and "prefixItems" not in node:
        raise NotStrict(f"{path} is an array with no item type")
    node.pop("required", None)
    if rules.drop_null_default and "default" in node and node["default"] is None:
        node.pop("default")
    _keep_or_describe(node, out, kind, rules, path, notes)
    return out


def _definitions(
    node: dict[str, Any], rules: SchemaRules, root: dict[str, Any], path: str, notes: list[str], seen: tuple[str, ...]
) -> dict[str, Any]:
    """The node's ``$defs`` / ``definitions``, each strict, taken out of ``node``."""
    out: dict[str, Any] = {}
    for defs_key in ("$defs", "definitions"):
        defs = node.pop(defs_key, None)
        if isinstance(defs, dict):
            out[defs_key] = {
                name: _node(sub, rules, root, f"{path}/{defs_key}/{name}", notes, seen) for name, sub in defs.items()
            }
    return out


def _combinators(
    node: dict[str, Any],
    out: dict[str, Any],
    rules: SchemaRules,
    root: dict[str, Any],
    path: str,
    notes: list[str],
    seen: tuple[str, ...],
) -> None:
    """``anyOf`` / ``oneOf`` / ``allOf``, each member strict (``oneOf`` as ``anyOf`` where
    the target takes only that)."""
    if "oneOf" in node and rules.any_of_for_one_of:
        node["anyOf"] = node.pop("oneOf")
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(node.get(key), list):
            out[key] = [_node(v, rules, root, f"{path}/{key}/{i}", notes, seen) for i, v in enumerate(node.pop(key))]


def _with_ref(
    ref: Any,
    node: dict[str, Any],
    out: dict[str, Any],
    rules: SchemaRules,
    root: dict[str, Any],
    path: str,
    notes: list[str],
    seen: tuple[str, ...],
) -> dict[str, Any]:
    """A node with a ``$ref``: alone, with what is beside it dropped (noted), or with the
    target inlined under what is beside it."""
    rest = {k: v for k, v in node.items() if not (k == "default" and v is None and rules.drop_null_default)}
    if not rest:
        out["$ref"] = ref
        return out
    if not rules.inline_ref_siblings:
        notes.append(f"{path}: dropped {', '.join(sorted(rest))} beside $ref")
        out["$ref"] = ref
        return out
    if ref in seen:
        raise NotStrict(f"{path}: a recursive $ref with keys beside it")
    target = _resolve(root, ref, path)
    return {**out, **_node({**target, **rest}, rules, root, path, notes, (*seen, ref))}


def _object(
    node: dict[str, Any],
    out: dict[str, Any],
    rules: SchemaRules,
    root: dict[str, Any],
    path: str,
    notes: list[str],
    seen: tuple[str, ...],
) -> None:
    """An object's properties, each strict, no extra properties, and the required list."""
    props = node.pop("properties", {}) or {}
    out["properties"] = {
        name: _node(sub, rules, root, f"{path}/properties/{name}", notes, seen) for name, sub in props.items()
    }
    extra = node.pop("additionalProperties", False)
    if extra not in (False, None):
        raise NotStrict(f"{path} allows extra properties (a mapping); strict mode needs every property named")
    out["additionalProperties"] = False
    required = node.pop("required", None)
    if rules.all_required:
        # Every property, in the schema's own order where it already lists them all.
        covers = (
            isinstance(required, list)
            and set(required) == set(out["properties"])
            and len(required) == len(out["properties"])
        )
        out["required"] = list(required) if covers else list(out["properties"])
    elif required is not None:
        out["required"] = list(required)


def _keep_or_describe(
    node: dict[str, Any], out: dict[str, Any], kind: Any, rules: SchemaRules, path: str, notes: list[str]
) -> None:
    """The keywords left: kept where the strict subset takes them, else moved into the
    description (noted)."""
    moved = {
        k: v
        for k, v in node.items()
        if not _kept(k, v, rules) or (k == "format" and rules.format_on_strings_only and kind != "string")
    }
    out.update((k, v) for k, v in node.items() if k not in moved)
    if moved:
        note = "{" + ", ".join(f"{k}: {v}" for k, v in moved.items()) + "}"
        out["description"] = f"{out['description']}\n\n{note}" if out.get("description") else note
        notes.append(f"{path}: {', '.join(moved)} moved into the description")


def _kept(key: str, value: Any, rules: SchemaRules) -> bool:
    if key in _STRUCTURE or key not in rules.keywords:
        return False
    if key == "format":
        return value in rules.formats
    if key == "minItems":
        return rules.min_items is None or value in rules.min_items
    return True


def _resolve(root: dict[str, Any], ref: str, path: str) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise NotStrict(f"{path}: $ref {ref!r} points outside the schema")
    target: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(target, dict) or part not in target:
            raise NotStrict(f"{path}: $ref {ref!r} points at nothing")
        target = target[part]
    if not isinstance(target, dict):
        raise NotStrict(f"{path}: $ref {ref!r} is not a schema")
    return target
