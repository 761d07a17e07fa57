"""How a record class declares its fields: ``field()`` and what it makes, the ``MISSING``
sentinel of a value not given, and the slot of a lazy field."""

from __future__ import annotations

from typing import Any, Callable


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
