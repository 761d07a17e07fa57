"""A record field's converters, one per annotation: each takes a value and returns the one
the field keeps, or raises ``ValidationError`` with the location inside the value ("loc" is
relative to the field). A value already of the field's exact type never reaches one."""

from __future__ import annotations

import types
import typing
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeGuard, Union, get_args, get_origin

from .errors import ValidationError

if TYPE_CHECKING:
    from ._record import Record


def _fail(msg: str, kind: str, loc: tuple[Any, ...] = ()) -> ValidationError:
    return ValidationError(None, [{"loc": loc, "msg": msg, "type": kind}])


def _describe(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _conv_str(v: Any) -> Any:
    if isinstance(v, str):
        return str(v) if not isinstance(v, Enum) else v.value
    raise _fail(f"expected a string, got {type(v).__name__}", "string_type")


def _conv_int(v: Any) -> Any:
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    raise _fail(f"expected an integer, got {type(v).__name__} {v!r:.40}", "int_type")


def _conv_float(v: Any) -> Any:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise _fail(f"expected a number, got {type(v).__name__}", "float_type")


def _conv_bool(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if v in (0, 1) and type(v) is int:
        return bool(v)
    raise _fail(f"expected a boolean, got {type(v).__name__}", "bool_type")


def _conv_dict(v: Any) -> Any:
    if isinstance(v, dict):
        return v
    raise _fail(f"expected an object, got {type(v).__name__}", "dict_type")


def _identity(v: Any) -> Any:
    return v


_SIMPLE: dict[Any, tuple[type | None, Callable[[Any], Any]]] = {
    str: (str, _conv_str),
    int: (int, _conv_int),
    float: (float, _conv_float),
    bool: (bool, _conv_bool),
    dict: (dict, _conv_dict),
    Any: (None, _identity),
    object: (None, _identity),
}


def _is_record_class(tp: Any) -> TypeGuard[type[Record]]:
    """Whether ``tp`` is a record class (``Record`` or a subclass: the classes whose fields
    the record metaclass has collected)."""
    return isinstance(tp, type) and hasattr(tp, "__record_specs__")


def _record_conv(cls: type[Record]) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if isinstance(v, cls):
            return v
        if isinstance(v, dict):
            try:
                return cls.from_dict(v)
            except ValidationError as exc:
                raise exc.under() from None
        raise _fail(f"expected {cls.__name__} or its JSON object, got {type(v).__name__}", "model_type")

    return conv


def _tagged_conv(members: list[type[Record]]) -> Callable[[Any], Any]:
    by_tag = {m.__record_tag__: m for m in members}
    classes = tuple(members)
    tags = ", ".join(repr(t) for t in by_tag)

    def conv(v: Any) -> Any:
        if isinstance(v, classes):
            return v
        if isinstance(v, dict):
            tag = v.get("type")
            member = by_tag.get(tag)
            if member is None:
                if tag is None:
                    raise _fail(f"the object has no 'type' (one of {tags})", "union_tag_not_found")
                raise _fail(
                    f"'type' {tag!r} does not match any of the expected tags: {tags}", "union_tag_invalid", ("type",)
                )
            try:
                return member.from_dict(v)
            except ValidationError as exc:
                raise exc.under(tag) from None
        raise _fail(
            f"expected one of {', '.join(c.__name__ for c in classes)} (or its JSON object), got {type(v).__name__}",
            "model_type",
        )

    return conv


def _list_conv(item: Callable[[Any], Any], fast: type | None) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if not isinstance(v, (list, tuple)):
            raise _fail(f"expected a list, got {type(v).__name__}", "list_type")
        out = []
        for i, x in enumerate(v):
            if fast is not None and type(x) is fast:
                out.append(x)
                continue
            try:
                out.append(item(x))
            except ValidationError as exc:
                raise exc.under(i) from None
        return out

    return conv


def _literal_conv(values: tuple[Any, ...]) -> Callable[[Any], Any]:
    allowed = set(values)
    names = ", ".join(repr(v) for v in values)

    def conv(v: Any) -> Any:
        try:
            if v in allowed:
                return v.value if isinstance(v, Enum) else v
        except TypeError:
            pass
        raise _fail(f"expected one of {names}, got {v!r:.60}", "literal_error")

    return conv


def _enum_conv(enum: type[Enum]) -> Callable[[Any], Any]:
    names = ", ".join(repr(m.value) for m in enum)

    def conv(v: Any) -> Any:
        try:
            return enum(v)
        except (ValueError, TypeError):
            raise _fail(f"expected one of {names}, got {v!r:.60}", "enum") from None

    return conv


def _without_enum_literals(members: list[Any]) -> list[Any]:
    """``Enum | Literal[its values]`` (how a field says it takes the enum or its plain values,
    for a type checker) converts as the enum alone: the Literal is left out."""
    enums = [a for a in members if isinstance(a, type) and issubclass(a, Enum)]
    if not enums:
        return members
    values = [{m.value for m in e} for e in enums]
    return [a for a in members if not (get_origin(a) is Literal and any(set(get_args(a)) <= v for v in values))]


def _or_none(inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def optional_conv(v: Any) -> Any:
        return None if v is None else inner(v)

    return optional_conv


def _union_conv(args: tuple[Any, ...]) -> tuple[type | None, Callable[[Any], Any]]:
    optional = type(None) in args
    rest = _without_enum_literals([a for a in args if a is not type(None)])
    records = [a for a in rest if _is_record_class(a)]
    others = [a for a in rest if a not in records]
    record_conv: Callable[[Any], Any] | None = None
    if records:
        record_conv = _record_conv(records[0]) if len(records) == 1 else _tagged_conv(records)
    # Each other member takes values of one Python kind (a string, a list ...); a value of
    # that kind is converted by that member alone, so its error says what is wrong inside.
    kinds = [(_kind_of(a), _converter(a)[1]) for a in others]
    if len(rest) == 1:
        fast, inner = (records[0], record_conv) if record_conv is not None else _converter(rest[0])
        assert inner is not None
        return fast, (_or_none(inner) if optional else inner)
    record_kinds: tuple[type, ...] = (*records, dict) if records else ()
    expected = " or ".join(_describe(a) for a in rest) + (" or null" if optional else "")

    def union(v: Any) -> Any:
        if v is None and optional:
            return None
        if record_conv is not None and isinstance(v, record_kinds):
            return record_conv(v)
        for kind, conv in kinds:
            if kind is None:
                try:
                    return conv(v)
                except ValidationError:
                    continue
            if isinstance(v, kind):
                return conv(v)
        raise _fail(f"expected {expected}, got {type(v).__name__}", "union_type")

    return None, union


def _kind_of(tp: Any) -> type | tuple[type, ...] | None:
    """The Python type(s) a value must have to be taken by the converter of ``tp``."""
    origin = get_origin(tp)
    if origin in (list, tuple):
        return (list, tuple)
    if origin is dict:
        return dict
    if isinstance(tp, type):
        if issubclass(tp, Enum):
            return None
        if tp is float:
            return (int, float)
        return tp
    return None


def _converter(tp: Any) -> tuple[type | None, Callable[[Any], Any]]:
    """(the exact type that needs no conversion or None, the converter) for an annotation."""
    simple = _SIMPLE.get(tp)
    if simple is not None:
        return simple
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return _union_conv(get_args(tp))
    if origin is typing.Annotated:
        return _converter(get_args(tp)[0])
    if origin is Literal:
        return None, _literal_conv(get_args(tp))
    if origin in (list, tuple):
        args = get_args(tp)
        fast, item = _converter(args[0]) if args else (None, _identity)
        if item is _identity:

            def any_list(v: Any) -> Any:
                if isinstance(v, (list, tuple)):
                    return list(v)
                raise _fail(f"expected a list, got {type(v).__name__}", "list_type")

            return None, any_list
        return None, _list_conv(item, fast)
    if origin is dict:
        return dict, _conv_dict
    if isinstance(tp, type):
        if _is_record_class(tp):
            return tp, _record_conv(tp)
        if issubclass(tp, Enum):
            return None, _enum_conv(tp)
    raise TypeError(f"a record field cannot be of type {tp!r}")
