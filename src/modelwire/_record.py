"""Records: the plain, slotted classes messages, blocks and events are made of.

A record declares its fields as annotations, the way a dataclass does, and gets a
keyword-only constructor that validates what it is given (types, nested records, tagged
unions), ``to_dict`` / ``from_dict`` for its JSON form, equality, ``repr``, copying and
pickling. Nothing here knows a message or an event; the classes in ``message`` and
``event`` are written on it.

Why not a validation library: these classes are built once per streamed chunk. A record
costs a keyword call, one ``type(x) is T`` test per field and slot stores; it imports in
a few milliseconds. The work that is heavier than a type test (turning a dict into a
nested record, finding a union's member by its ``type`` tag) happens only when the value
is not already what the field holds.

Rules a record class follows:

- fields are annotations; a default is a plain value or ``field(default_factory=...)``;
- a ``type`` field declared as a one-value ``Literal`` with that value as its default
  (``type: Literal["text"] = "text"``) is the record's tag: a constant of the class,
  accepted by the constructor when equal, always written by ``to_dict`` (any other
  ``type`` field, such as an error's kind, is a field like the rest);
- ``class X(Record, extra=True)`` keeps unknown keyword arguments as extra attributes
  (in the instance ``__dict__``), written after the fields; without it the constructor
  refuses them (a ``TypeError``, as for any function) and ``from_dict`` drops them, as
  JSON from a newer writer must load;
- ``__post_init__(self)`` runs after the fields are set, to normalise or cross-check;
  a ``ValueError`` it raises becomes :class:`~modelwire.errors.ValidationError`;
- annotations are read when a class is first used (constructed, or given a positional
  constructor with :func:`maker`), not at import.
"""

from __future__ import annotations

import sys
import types
import typing
from enum import Enum, StrEnum
from typing import Any, Callable, ClassVar, Literal, Self, Union, dataclass_transform, get_args, get_origin

from .errors import ModelwireError, ValidationError

__all__ = ["Record", "PlainStrEnum", "field", "extras_of", "fields_of", "maker", "dump", "MISSING"]


class PlainStrEnum(StrEnum):
    """A ``StrEnum`` whose members read as their strings everywhere, ``repr`` included: equal
    to, hashed as and written as the string, with ``.value`` and ``.name`` besides. The
    types, states and reasons of messages and events are these, so code that treats them as
    strings and code that treats them as enums both work."""

    __repr__ = str.__repr__


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class _FieldSpec:
    __slots__ = ("default", "factory", "convert", "lazy")

    def __init__(
        self, default: Any, factory: Callable[[], Any] | None, convert: Callable[[Any], Any] | None, lazy: bool = False
    ) -> None:
        self.default = default
        self.factory = factory
        self.convert = convert
        self.lazy = lazy


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | None = None,
    convert: Callable[[Any], Any] | None = None,
    lazy: bool = False,
) -> Any:
    """A field with a default factory, or with its own converter (which replaces the one
    derived from the annotation; it takes the given value and returns the one to keep).

    ``lazy=True`` (with a ``default_factory``): a record built without the field calls the
    factory when the field is first read (by an attribute, ``to_dict``, equality, a copy),
    and keeps what it gave. For a value most records never need, such as the id of an
    event that is folded and dropped."""
    if lazy and default_factory is None:
        raise TypeError("a lazy field needs a default_factory")
    return _FieldSpec(default, default_factory, convert, lazy)


class _LazySlot:
    """The attribute of a lazy field: its slot, filled from the factory on the first read
    of a record that was built without it."""

    __slots__ = ("slot", "factory")

    def __init__(self, slot: Any, factory: Callable[[], Any]) -> None:
        self.slot = slot
        self.factory = factory

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        try:
            return self.slot.__get__(obj, cls)
        except AttributeError:
            value = self.factory()
            self.slot.__set__(obj, value)
            return value

    def __set__(self, obj: Any, value: Any) -> None:
        self.slot.__set__(obj, value)

    def __delete__(self, obj: Any) -> None:
        self.slot.__delete__(obj)


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return get_origin(annotation) is ClassVar


def _is_tag(annotation: Any, default: Any) -> bool:
    """A ``type`` field is the record's tag when it is a one-value ``Literal`` with that
    value as its default (``type: Literal["text"] = "text"``)."""
    if not isinstance(default, str):
        return False
    if isinstance(annotation, str):
        return annotation.replace(" ", "") in (f"Literal[{default!r}]", f'Literal["{default}"]')
    return get_origin(annotation) is Literal and get_args(annotation) == (default,)


def _inherited(bases: tuple[type, ...]) -> tuple[list[str], dict[str, _FieldSpec], set[str], bool]:
    """What a record class takes from its bases: their fields in order, the fields' specs,
    the slots already there, and whether any keeps extras."""
    fields: list[str] = []
    specs: dict[str, _FieldSpec] = {}
    base_slots: set[str] = set()
    base_extra = False
    for base in reversed(bases):
        for f in getattr(base, "__record_fields__", ()):
            if f not in fields:
                fields.append(f)
        specs.update(getattr(base, "__record_specs__", {}))
        base_extra = base_extra or getattr(base, "__record_extra__", False)
        for klass in base.__mro__:
            base_slots.update(klass.__dict__.get("__slots__", ()))
    return fields, specs, base_slots, base_extra


def _own_fields(
    own: list[str], ns: dict[str, Any], tag: Any, fields: list[str], specs: dict[str, _FieldSpec], base_slots: set[str]
) -> list[str]:
    """A record class's own fields added to ``fields`` and ``specs`` (their defaults taken out
    of the namespace), and the slots the class needs for them."""
    slots = list(ns.get("__slots__", ()))
    for n in own:
        is_tag = n == "type" and tag is not None
        value = ns["type"] if is_tag else ns.pop(n, MISSING)
        specs[n] = value if isinstance(value, _FieldSpec) else _FieldSpec(value, None, None)
        if n not in fields:
            fields.append(n)
        if not is_tag and n not in base_slots and n not in slots:
            slots.append(n)
    return slots


@dataclass_transform(kw_only_default=True, field_specifiers=(field,))
class _RecordMeta(type):
    __record_fields__: tuple[str, ...]
    __record_specs__: dict[str, _FieldSpec]
    __record_extra__: bool
    __record_tag__: str | None
    __record_stored__: tuple[str, ...]
    __record_keys__: frozenset[str]

    def __new__(
        mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any], extra: bool | None = None, **kw: Any
    ) -> Any:
        fields, specs, base_slots, base_extra = _inherited(bases)
        annotations = ns.get("__annotations__", {})
        own = [n for n, a in annotations.items() if not _is_classvar(a)]
        tag = ns.get("type") if _is_tag(annotations.get("type"), ns.get("type")) else None
        slots = _own_fields(own, ns, tag, fields, specs, base_slots)
        is_extra = base_extra if extra is None else extra
        if is_extra and "__dict__" not in base_slots and "__dict__" not in slots:
            slots.append("__dict__")
        ns["__slots__"] = tuple(slots)
        ns.setdefault("__init__", _lazy_init)
        ns.setdefault("to_dict", _lazy_to_dict)
        cls = super().__new__(mcls, name, bases, ns, **kw)
        for n in slots:
            spec = specs.get(n)
            if spec is not None and spec.lazy:
                type.__setattr__(cls, n, _LazySlot(cls.__dict__[n], spec.factory))  # type: ignore[arg-type]
        cls.__record_fields__ = tuple(fields)
        cls.__record_specs__ = specs
        cls.__record_extra__ = is_extra
        if tag is not None:
            cls.__record_tag__ = tag
        has_tag = getattr(cls, "__record_tag__", None) is not None
        cls.__record_stored__ = tuple(f for f in fields if not (has_tag and f == "type"))
        cls.__record_keys__ = frozenset(fields)
        return cls


def _lazy_init(self: Any, **kwargs: Any) -> None:
    cls = type(self)
    _compile(cls)
    cls.__init__(self, **kwargs)


def _lazy_to_dict(self: Any) -> dict[str, Any]:
    cls = type(self)
    _compile(cls)
    return cls.to_dict(self)


class Record(metaclass=_RecordMeta):
    """The base of every record class (see the module docstring)."""

    __slots__ = ()
    __record_fields__: ClassVar[tuple[str, ...]] = ()
    __record_specs__: ClassVar[dict[str, _FieldSpec]] = {}
    __record_extra__: ClassVar[bool] = False
    __record_tag__: ClassVar[str | None] = None
    __record_stored__: ClassVar[tuple[str, ...]] = ()
    __record_keys__: ClassVar[frozenset[str]] = frozenset()
    # Fields modelwire adds to AgentScope's class of the same name: model_dump() leaves them
    # out while they hold their default, so it gives what AgentScope's gives.
    __record_added__: ClassVar[frozenset[str]] = frozenset()

    def to_dict(self) -> dict[str, Any]:  # replaced per class on first use
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: Any) -> Any:
        """Build the record from its JSON form (a dict); raises ``ValidationError``."""
        if not isinstance(data, dict):
            raise ValidationError(
                cls.__name__,
                [{"loc": (), "msg": f"expected an object, got {type(data).__name__}", "type": "model_type"}],
            )
        if not cls.__record_extra__:
            known = cls.__record_keys__
            if not known.issuperset(data):
                data = {k: v for k, v in data.items() if k in known}  # JSON from a newer writer
        try:
            return cls(**data)
        except TypeError as exc:  # a key that is not a string
            raise ValidationError(cls.__name__, [{"loc": (), "msg": str(exc), "type": "model_type"}]) from None

    def to_json(self) -> str:
        """The JSON text of :meth:`to_dict`: compact, UTF-8 characters as they are."""
        return _dumps(self.to_dict())

    def replace(self, **changes: Any) -> Self:
        """A new record with ``changes`` applied, validated like a construction; fields not
        changed are shared with this one, not copied."""
        values = {n: getattr(self, n) for n in self.__record_stored__}
        extra = getattr(self, "__dict__", None)
        if extra:
            values.update(extra)
        values.update(changes)
        return type(self)(**values)

    # -- the pydantic names code written for AgentScope calls (its records are pydantic models);
    # each is one of the methods above, with AgentScope's meaning.

    def model_dump(self, *, mode: str = "python", exclude_none: bool = False, **unsupported: Any) -> dict[str, Any]:
        """:meth:`to_dict` (``mode`` "python" and "json" give the same: every value is JSON
        already); ``exclude_none`` leaves out None values at every level."""
        _only_known("model_dump", unsupported)
        data = _agentscope_form(self)
        return _without_none(data) if exclude_none else data

    def model_dump_json(self, *, exclude_none: bool = False, indent: int | None = None, **unsupported: Any) -> str:
        """:meth:`to_json` (with ``indent``, indented)."""
        _only_known("model_dump_json", unsupported)
        data = self.model_dump(exclude_none=exclude_none)
        if indent is None:
            return _dumps(data)
        import json

        return json.dumps(data, ensure_ascii=False, indent=indent)

    @classmethod
    def model_validate(cls, obj: Any, **unsupported: Any) -> Self:
        """:meth:`from_dict` (a record of this class is returned as it is)."""
        _only_known("model_validate", unsupported)
        return obj if isinstance(obj, cls) else cls.from_dict(obj)

    @classmethod
    def model_validate_json(cls, data: str | bytes, **unsupported: Any) -> Self:
        """:meth:`from_dict` of JSON text."""
        import json

        _only_known("model_validate_json", unsupported)
        try:
            parsed = json.loads(data)
        except ValueError as exc:
            raise ValidationError(
                cls.__name__, [{"loc": (), "msg": f"invalid JSON: {exc}", "type": "json_invalid"}]
            ) from None
        return cls.from_dict(parsed)

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy (``deep``: its values copied too), with ``update`` applied and validated
        (pydantic does not validate an update; modelwire refuses a bad one here)."""
        import copy

        new = copy.deepcopy(self) if deep else copy.copy(self)
        return new.replace(**update) if update else new

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for n in self.__record_stored__:
            if getattr(self, n) != getattr(other, n):
                return False
        return getattr(self, "__dict__", None) == getattr(other, "__dict__", None)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"{n}={getattr(self, n, MISSING)!r}" for n in self.__record_fields__]
        extra = getattr(self, "__dict__", None)
        if extra:
            parts.extend(f"{k}={v!r}" for k, v in extra.items())
        return f"{type(self).__name__}({', '.join(parts)})"

    def __copy__(self) -> Any:
        new = object.__new__(type(self))
        for n in self.__record_stored__:
            object.__setattr__(new, n, getattr(self, n))
        extra = getattr(self, "__dict__", None)
        if extra:
            vars(new).update(extra)
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        import copy

        new = object.__new__(type(self))
        memo[id(self)] = new
        for n in self.__record_stored__:
            object.__setattr__(new, n, copy.deepcopy(getattr(self, n), memo))
        extra = getattr(self, "__dict__", None)
        if extra:
            vars(new).update(copy.deepcopy(extra, memo))
        return new

    def __getstate__(self) -> Any:
        state = {n: getattr(self, n) for n in self.__record_stored__}
        return state, dict(getattr(self, "__dict__", None) or {})

    def __setstate__(self, state: Any) -> None:
        values, extra = state
        for n, v in values.items():
            object.__setattr__(self, n, v)
        if extra:
            vars(self).update(extra)


def _only_known(method: str, unsupported: dict[str, Any]) -> None:
    """A pydantic argument modelwire's records do not take is refused, never ignored."""
    if unsupported:
        raise TypeError(
            (
                f"{method}() of a modelwire record takes no {', '.join(sorted(unsupported))} (it takes "
                "what AgentScope's code passes: see its docstring)"
            )
        )


def _agentscope_form(record: Record) -> dict[str, Any]:
    """:meth:`Record.to_dict`, with the fields modelwire adds left out where they hold their
    default, in this record and the records it holds."""
    data = record.to_dict()
    added, specs = type(record).__record_added__, type(record).__record_specs__
    for name in list(data):
        value = getattr(record, name, None)
        if name in added and name in specs and value == specs[name].default:
            del data[name]
        elif isinstance(value, Record):
            data[name] = _agentscope_form(value)
        elif type(value) is list and any(isinstance(v, Record) for v in value):
            data[name] = [_agentscope_form(v) if isinstance(v, Record) else d for v, d in zip(value, data[name])]
    return data


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def fields_of(cls: type) -> tuple[str, ...]:
    """The declared fields of a record class, in order."""
    return cls.__record_fields__  # type: ignore[attr-defined, no-any-return]


_NO_EXTRAS: Any = types.MappingProxyType({})


def extras_of(record: Any) -> dict[str, Any]:
    """The extra attributes a record holds beyond its fields (provider data on a block):
    the live dict for a record that takes extras, an empty read-only mapping otherwise."""
    try:
        return record.__dict__  # type: ignore[no-any-return]
    except AttributeError:
        return _NO_EXTRAS


# -- JSON ------------------------------------------------------------------------------------


def dump(value: Any) -> Any:
    """``value`` as JSON-ready data: records as dicts, enums as values, containers copied."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return value
    if t is dict:
        return {k: dump(v) for k, v in value.items()}
    if t is list or t is tuple:
        return [dump(v) for v in value]
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [dump(v) for v in value]
    model_dump = getattr(value, "model_dump", None)  # a validated model instance (a structured output)
    if model_dump is not None:
        return model_dump(mode="json")
    return value


_encoders: list[Callable[[Any], str]] = []  # the one JSON encoder, made on first use


def _dumps(data: Any) -> str:
    if not _encoders:
        import json

        _encoders.append(json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode)
    return _encoders[0](data)


# -- converters ------------------------------------------------------------------------------
# A converter takes a value and returns the one the field keeps, or raises ValidationError
# with the location inside the value ("loc" is relative to the field).


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


def _record_conv(cls: type) -> Callable[[Any], Any]:
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


def _tagged_conv(members: list[type]) -> Callable[[Any], Any]:
    by_tag = {m.__record_tag__: m for m in members}  # type: ignore[attr-defined]
    classes = tuple(members)
    tags = ", ".join(repr(t) for t in by_tag)

    def conv(v: Any) -> Any:
        if isinstance(v, classes):
            return v
        if isinstance(v, dict):
            tag = v.get("type")
            member = by_tag.get(tag)  # type: ignore[arg-type]
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
    names = ", ".join(repr(m.value) for m in enum)  # type: ignore[var-annotated]

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
    records = [a for a in rest if isinstance(a, type) and issubclass(a, Record)]
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
    record_kinds = (*records, dict) if records else ()
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
        if issubclass(tp, Record):
            return tp, _record_conv(tp)
        if issubclass(tp, Enum):
            return None, _enum_conv(tp)
    raise TypeError(f"a record field cannot be of type {tp!r}")


# -- code generation -------------------------------------------------------------------------


_LITERALS = {dict: "{}", list: "[]"}  # faster than calling the factory


# A class's own checks after its fields are set: a ValueError there is a ValidationError.
_POST_INIT = [
    "    try: self.__post_init__()",
    "    except ValidationError as exc: raise exc.named(cls.__name__) from None",
    "    except ModelwireError: raise",
    (
        "    except ValueError as exc: raise ValidationError(cls.__name__, [{'loc': (), 'msg': "
        "str(exc), 'type': 'value_error'}]) from None"
    ),
]


def _field_code(
    name: str, spec: _FieldSpec, hint: Any, env: dict[str, Any], body: list[str], required: list[str], setter: str
) -> tuple[type | None, Callable[[Any], Any]]:
    """The constructor's lines for one field (its default, its check and conversion, its
    assignment), added to ``body``; its fast type (None: always converted) and converter."""
    if spec.convert is not None:
        fast, conv = None, spec.convert
    else:
        fast, conv = _converter(hint)
    env[f"_c_{name}"] = conv
    if fast is not None:
        env[f"_t_{name}"] = fast
    if spec.lazy:  # left unset when not given: the first read makes it (see _LazySlot)
        return _lazy_field_code(name, fast, conv, body, setter)
    if spec.factory is not None:
        env[f"_f_{name}"] = spec.factory
        made = _LITERALS.get(spec.factory, f"_f_{name}()")  # type: ignore[arg-type]
        body.append(f"    if {name} is MISSING: {name} = {made}")
        check = "elif"
    elif spec.default is not MISSING:
        env[f"_d_{name}"] = spec.default
        body.append(f"    if {name} is MISSING: {name} = _d_{name}")
        check = "elif"
    else:
        required.append(name)
        check = "if"
    if conv is not _identity:
        body += _check_code(name, fast, check, "    ")
    body.append("    " + setter.format(name=name))
    return fast, conv


def _check_code(name: str, fast: type | None, keyword: str, pad: str) -> list[str]:
    """The lines that convert a given value of field ``name`` (through ``_c_<name>``) unless
    it is of the field's fast type (``_t_<name>``), naming the field in a failure."""
    cond = f"_type({name}) is not _t_{name}" if fast is not None else "True"
    return [
        f"{pad}{keyword} {cond}:",
        f"{pad}    try: {name} = _c_{name}({name})",
        f"{pad}    except ValidationError as exc: raise exc.under({name!r}).named(cls.__name__) from None",
    ]


def _lazy_field_code(
    name: str, fast: type | None, conv: Callable[[Any], Any], body: list[str], setter: str
) -> tuple[type | None, Callable[[Any], Any]]:
    """The constructor's lines for a lazy field: checked and set when given, else left unset."""
    body.append(f"    if {name} is not MISSING:")
    if conv is not _identity:
        body += _check_code(name, fast, "if", "        ")
    body.append("        " + setter.format(name=name))
    return fast, conv


_ANNOTATION_CODE: dict[str, Any] = {}  # an annotation's text, compiled (records repeat a few)


def _hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, with each annotation's text compiled once per process
    rather than once per class (about two fifths of what a record class's first use cost). Evaluated
    as get_type_hints evaluates them: the module's names first, then the class's. An
    annotation that leaves a name to resolve (a quoted name inside one) is left to
    get_type_hints."""
    hints: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        annotations = base.__dict__.get("__annotations__")
        if not annotations:
            continue
        module = sys.modules.get(base.__module__)
        names = dict(vars(base))
        for name, value in annotations.items():
            if isinstance(value, str):
                code = _ANNOTATION_CODE.get(value)
                if code is None:
                    code = _ANNOTATION_CODE[value] = compile(value, "<annotation>", "eval")
                value = eval(code, names, getattr(module, "__dict__", {}))  # noqa: S307 - the class's own annotation
            elif value is None:
                value = type(None)
            if not _plain(value):
                return typing.get_type_hints(cls)
            hints[name] = value
    return hints


def _plain(tp: Any) -> bool:
    """Whether an evaluated annotation holds nothing get_type_hints would change: no name
    left to resolve, no ``Annotated`` to strip."""
    if isinstance(tp, (str, typing.ForwardRef)):
        return False
    origin = get_origin(tp)
    if origin is Literal:
        return True
    if origin is typing.Annotated:
        return False
    return all(_plain(arg) for arg in get_args(tp))


# The check of a tagged class's ``type`` argument, in the ``__init__`` _compile writes.
_TAG_CHECK = [
    "    if type is not MISSING and type != _tag:",
    "        raise ValidationError(cls.__name__, [{'loc': ('type',), 'msg': f'expected {_tag!r}, "
    "got {type!r:.40}', 'type': 'literal_error'}])",
]


def _init_from(
    cls: type, args: list[str], body: list[str], required: list[str], extra: bool, env: dict[str, Any]
) -> Callable[..., None]:
    """The ``__init__`` written from its fields' lines: required fields checked first, extra
    keyword arguments kept last, then ``__post_init__``."""
    if required:
        env["_missing"] = _missing
        names = ", ".join(required)
        cond = " or ".join(f"{n} is MISSING" for n in required)
        body.insert(0, f"    if {cond}: raise _missing(cls, {tuple(required)!r}, ({names},))")
    if extra:
        env["_check_extra"] = _check_extra
        body.append("    if _extra: self.__dict__.update(_check_extra(_extra))")
    if getattr(cls, "__post_init__", None) is not None:
        body += _POST_INIT
    if not body:
        body.append("    pass")
    src = f"def __init__(self, *, {', '.join(args)}):\n" + "\n".join(body) + "\n"
    exec(src, env)  # noqa: S102 - the code is written here from the class's own field names
    return env["__init__"]


def _compile(cls: type, force: bool = False) -> None:
    """Write the class's ``__init__`` and ``to_dict`` from its fields (once)."""
    if (
        not force
        and cls.__dict__.get("__init__") is not _lazy_init
        and cls.__dict__.get("to_dict") is not _lazy_to_dict
    ):
        return
    hints = _hints(cls)
    fields: tuple[str, ...] = cls.__record_fields__  # type: ignore[attr-defined]
    specs: dict[str, _FieldSpec] = cls.__record_specs__  # type: ignore[attr-defined]
    extra: bool = cls.__record_extra__  # type: ignore[attr-defined]
    tag = cls.__dict__.get("__record_tag__", getattr(cls, "__record_tag__", None))
    env: dict[str, Any] = {
        "MISSING": MISSING,
        "ValidationError": ValidationError,
        "ModelwireError": ModelwireError,
        "_type": type,
        "cls": cls,
        "_dump": dump,
        "_oset": object.__setattr__,
    }
    args, body = [], []
    convs: dict[str, Callable[[Any], Any]] = {}
    fasts: dict[str, type | None] = {}
    required: list[str] = []
    setter = "_oset(self, {name!r}, {name})" if "__setattr__" in _own_attrs(cls) else "self.{name} = {name}"
    for name in fields:
        if name == "type" and tag is not None:
            env["_tag"] = tag
            args.append("type=MISSING")
            body += _TAG_CHECK
            continue
        fast, conv = _field_code(name, specs[name], hints[name], env, body, required, setter)
        convs[name] = conv
        fasts[name] = fast
        args.append(f"{name}=MISSING")
    if extra:
        args.append("**_extra")
    init = _init_from(cls, args, body, required, extra, env)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    type.__setattr__(cls, "__record_converters__", convs)
    type.__setattr__(cls, "__record_fast__", fasts)
    if cls.__dict__.get("__init__") is _lazy_init:
        type.__setattr__(cls, "__init__", init)
    if cls.__dict__.get("to_dict") is _lazy_to_dict:
        type.__setattr__(cls, "to_dict", _to_dict_for(cls, fields, hints, extra, tag))


def converters(cls: type) -> dict[str, Callable[[Any], Any]]:
    """The converter of each field of a record class (for classes that check assignments)."""
    convs = cls.__dict__.get("__record_converters__")
    if convs is None:
        _compile(cls, force=True)
        convs = cls.__dict__["__record_converters__"]
    return convs  # type: ignore[no-any-return]


def maker(cls: type, *names: str, trusted: tuple[str, ...] = ()) -> Callable[..., Any]:
    """A positional constructor of ``cls`` taking ``names`` in that order, for code that
    builds many records of one shape (an adapter's deltas): the same checks as the
    constructor, without matching keywords. Fields not named take their defaults.

    ``trusted`` names fields the caller vouches for (values of the field's exact type that
    it made itself, such as an adapter's reply id and clock): stored without their check."""
    convs = converters(cls)
    fasts: dict[str, type | None] = cls.__dict__["__record_fast__"]
    specs: dict[str, _FieldSpec] = cls.__record_specs__  # type: ignore[attr-defined]
    env: dict[str, Any] = {
        "cls": cls,
        "_new": object.__new__,
        "_type": type,
        "ValidationError": ValidationError,
        "_oset": object.__setattr__,
        "MISSING": MISSING,
    }
    body = ["    self = _new(cls)"]
    setter = "_oset(self, {name!r}, {value})" if "__setattr__" in _own_attrs(cls) else "self.{name} = {value}"
    for name in cls.__record_stored__:  # type: ignore[attr-defined]
        spec = specs[name]
        if name in names:
            # A lazy field given as MISSING is left to its first read (see _LazySlot).
            pad = "        " if spec.lazy else "    "
            if spec.lazy:
                body.append(f"    if {name} is not MISSING:")
            conv = convs[name]
            if conv is not _identity and name not in trusted:
                fast = fasts[name]
                env[f"_c_{name}"] = conv
                if fast is not None:
                    env[f"_t_{name}"] = fast
                body += _check_code(name, fast, "if", pad)
            body.append(pad + setter.format(name=name, value=name))
        elif spec.lazy:
            continue
        elif spec.factory is not None:
            env[f"_f_{name}"] = spec.factory
            body.append("    " + setter.format(name=name, value=_LITERALS.get(spec.factory, f"_f_{name}()")))  # type: ignore[arg-type]
        elif spec.default is not MISSING:
            env[f"_d_{name}"] = spec.default
            body.append("    " + setter.format(name=name, value=f"_d_{name}"))
        else:
            raise TypeError(f"{cls.__name__}.{name} has no default; name it")
    unknown = set(names) - set(cls.__record_stored__)  # type: ignore[attr-defined]
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    if not set(trusted) <= set(names):
        raise TypeError(f"trusted fields must be named: {sorted(set(trusted) - set(names))}")
    if getattr(cls, "__post_init__", None) is not None:
        body.append("    self.__post_init__()")
    body.append("    return self")
    exec(f"def make({', '.join(names)}):\n" + "\n".join(body) + "\n", env)  # noqa: S102
    return env["make"]  # type: ignore[no-any-return]


def _own_attrs(cls: type) -> set[str]:
    out: set[str] = set()
    for klass in cls.__mro__:
        if klass is Record or klass is object:
            break
        out.update(klass.__dict__)
    return out


def _scalar(tp: Any) -> bool:
    """Whether values of ``tp`` are JSON-ready as they are (no copy, no conversion)."""
    if tp in (str, int, float, bool, type(None)):
        return True
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return all(_scalar(a) for a in get_args(tp))
    if origin is Literal:
        return all(type(a) in (str, int, bool) for a in get_args(tp))
    if isinstance(tp, type) and issubclass(tp, Enum):
        return False
    return False


def _to_dict_for(
    cls: type, fields: tuple[str, ...], hints: dict[str, Any], extra: bool, tag: Any
) -> Callable[[Any], dict[str, Any]]:
    items = []
    for name in fields:
        if name == "type" and tag is not None:
            items.append(f"'type': {tag!r}")
        elif _scalar(hints[name]) and not cls.__record_specs__[name].convert:  # type: ignore[attr-defined]
            items.append(f"{name!r}: self.{name}")
        else:
            items.append(f"{name!r}: _dump(self.{name})")
    src = "def to_dict(self):\n"
    src += "    out = {" + ", ".join(items) + "}\n"
    if extra:
        src += "    d = self.__dict__\n    if d:\n        for k, v in d.items(): out[k] = _dump(v)\n"
    src += "    return out\n"
    env: dict[str, Any] = {"_dump": dump}
    exec(src, env)  # noqa: S102
    fn = env["to_dict"]
    fn.__doc__ = "The JSON-ready dict of this record."
    return fn  # type: ignore[no-any-return]


def _missing(cls: type, names: tuple[str, ...], values: tuple[Any, ...]) -> ValidationError:
    errors = [{"loc": (n,), "msg": "field required", "type": "missing"} for n, v in zip(names, values) if v is MISSING]
    return ValidationError(cls.__name__, errors)


def _check_extra(extra: dict[str, Any]) -> dict[str, Any]:
    for key in extra:
        if key.startswith("_"):
            raise ValidationError(
                None, [{"loc": (key,), "msg": "an extra field's name cannot start with '_'", "type": "extra_forbidden"}]
            )
    return extra
