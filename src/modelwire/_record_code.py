"""The lines of code a record class's ``__init__`` is written from, field by field (its
default, its check and conversion, its assignment), and what that code calls: the record
module compiles them on the class's first use."""

from __future__ import annotations

import sys
import types
import typing
from enum import Enum
from typing import Any, Callable, Literal, Union, get_args, get_origin

from ._record_fields import MISSING, _FieldSpec
from ._record_convert import _converter, _identity
from .errors import ValidationError


_LITERALS: dict[Any, str] = {dict: "{}", list: "[]"}  # faster than calling the factory


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
        made = _LITERALS.get(spec.factory, f"_f_{name}()")
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
    init: Callable[..., None] = env["__init__"]
    return init


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
