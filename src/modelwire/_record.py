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

import types
from enum import Enum, StrEnum
from typing import Any, Callable, ClassVar, Literal, Self, dataclass_transform, get_args, get_origin

from ._record_code import _LITERALS, _TAG_CHECK, _check_code, _field_code, _hints, _init_from, _scalar
from ._record_convert import _identity
from ._record_fields import MISSING, _FieldSpec, _LazySlot, field
from .errors import ModelwireError, ValidationError

__all__ = ["Record", "PlainStrEnum", "field", "extras_of", "fields_of", "maker", "dump", "MISSING"]


class PlainStrEnum(StrEnum):
    """A ``StrEnum`` whose members read as their strings everywhere, ``repr`` included: equal
    to, hashed as and written as the string, with ``.value`` and ``.name`` besides. The
    types, states and reasons of messages and events are these, so code that treats them as
    strings and code that treats them as enums both work."""

    __repr__ = str.__repr__


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
        # Each class its own, never a base's (a subclass may hold more): see _no_reader.
        ns["__record_reader__"] = _NO_READER
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


def _no_reader(self: Any) -> Any:
    raise AttributeError("__record_reader__")


# A class's reader of its values: a property whose getter is C code (an attrgetter), put
# on the class by whoever reads records in bulk (``formatters._incremental`` keys messages
# by their content with it, in one C pass); until then reading it raises AttributeError.
_NO_READER = property(_no_reader)


def _lazy_init(self: Any, **kwargs: Any) -> None:
    cls = type(self)
    _compile(cls)
    cls.__init__(self, **kwargs)


def _lazy_to_dict(self: Any) -> dict[str, Any]:
    cls = type(self)
    _compile(cls)
    data: dict[str, Any] = cls.to_dict(self)
    return data


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
        record: Self = cls.from_dict(parsed)
        return record

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

    __hash__: ClassVar[None] = None  # type: ignore[assignment]

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
        empty: dict[str, Any] = _NO_EXTRAS  # read-only: a record without extras takes none
        return empty


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


# -- the code a record class runs, written on its first use ----------------------------------


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
            body.append("    " + setter.format(name=name, value=_LITERALS.get(spec.factory, f"_f_{name}()")))
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
