"""The adapters' one short path, read from the table each protocol declares.

Most events of a stream are one piece of text, thinking or arguments for a block that is
already open. An adapter declares what such an event looks like as a few :class:`Delta`
rows (the provider event, the path of its piece, the block it feeds, the fields that must
be absent), and this module turns the rows into:

- one msgspec type per object the rows walk through, naming only the fields the rows read
  (the rest of an event is skipped while decoding, not built), each object absent or
  ``null`` read as empty, each one-element list typed as exactly one element;
- one function that reads those fields: the first row whose piece is there decides; an
  event any row does not describe exactly (a field of another type, a list of two, a block
  not open or of another kind, an ``error`` event) returns None and goes the full way,
  ``BaseAdapter.feed`` -> ``handle``, with nothing changed. So does an exception in it (a
  bug), raised instead with ``MODELWIRE_DEBUG=1``.

The function is generated from the rows (as ``dataclasses`` generates ``__init__``), so a
delta costs what a hand-written reader costs; :func:`fast_path_source` shows it. A row
describes; the adapter's ``handle`` still holds the one meaning of every event, and
``tests/test_fast_paths.py`` decodes every recorded and generated body both ways.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Optional, Union

import msgspec
from msgspec import UNSET, UnsetType

if TYPE_CHECKING:
    from ._adapter import BaseAdapter

__all__ = ["Delta", "Const", "compile_fast_path", "fast_path_source"]

_STREAMED = ("text", "thinking", "tool_call")


class Const(NamedTuple):
    """A fixed part of a composite block key: ``key=(Const("call"), "item_id")``."""

    value: Any


@dataclass(frozen=True)
class Delta:
    """One kind of provider event that is only a piece of one open block.

    Paths are dotted field names; ``name[0]`` steps into a list that must hold exactly one
    element. ``text`` is the path of the piece (a non-empty string, or the row does not
    apply). The block it feeds is ``adapter.blocks[key]``: ``key`` a path, or a tuple of
    paths and :class:`Const` parts, or ``fixed`` a key of its own; ``find`` names an
    adapter method that maps the key (None without one) to the target instead. The rest
    say when the row applies and what it keeps:

    - ``event``: the SSE or event-stream event name it must come with;
    - ``when``: fields that must hold these values (``True``/``False``/``None`` by identity);
    - ``empty``: fields that must be missing, ``null`` or empty (falsy);
    - ``absent``: fields that must be missing altogether (``"error": null`` is an error);
    - ``only``: objects that may hold no field beside the ones the rows name;
    - ``kinds``: the block kinds it may feed (None: ``find``'s target is no block);
    - ``read`` / ``raw``: fields the ``check`` method reads (decoded, or as raw JSON);
    - ``check``: an adapter method given the decoded event, False to leave it to the full
      path; it may keep what it read once it says True;
    - ``keep``: fields copied to adapter attributes (when present and not null);
    - ``add``: an adapter method ``(target, text) -> events`` in place of ``short_delta``.
    """

    text: str
    key: str | tuple[str | Const, ...] | None = None
    fixed: Any = None
    find: str | None = None
    kinds: tuple[str, ...] | None = _STREAMED
    event: str | None = None
    when: Mapping[str, Any] = field(default_factory=dict)
    empty: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    only: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    raw: tuple[str, ...] = ()
    check: str | None = None
    keep: Mapping[str, str] = field(default_factory=dict)
    add: str | None = None


_STEP = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\[0\])?$")


def _steps(path: str) -> list[tuple[str, bool]]:
    steps = []
    for part in path.split("."):
        found = _STEP.match(part)
        if found is None or keyword.iskeyword(found.group(1)):
            raise ValueError(f"a fast-path field path must be dotted names, name[0] for a list: {path!r}")
        steps.append((found.group(1), found.group(2) is not None))
    return steps


class _Node:
    """One object the rows walk through: its fields (a child object or a leaf kind)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fields: dict[str, _Node | str] = {}
        self.lists: set[str] = set()
        self.strict = False
        self.type: Any = None
        self.empty_name = ""  # the name of its empty instance in the generated code

    def add(self, path: str, leaf: str) -> None:
        node = self
        steps = _steps(path)
        for i, (name, is_list) in enumerate(steps):
            last = i == len(steps) - 1
            child = node.fields.get(name)
            if last and not is_list:
                if child is None or (isinstance(child, str) and _RANK[leaf] > _RANK[child]):
                    node.fields[name] = leaf
                return
            if not isinstance(child, _Node):
                child = node.fields[name] = _Node(f"{node.path}.{name}" if node.path else name)
            if is_list:
                node.lists.add(name)
            node = child
        raise ValueError(f"a fast-path path cannot end in a list element: {path!r}")

    def find(self, path: str) -> "_Node":
        node = self
        for name, _ in _steps(path):
            child = node.fields.get(name)
            if not isinstance(child, _Node):
                raise ValueError(f"{path!r} is no object the rows read")
            node = child
        return node

    def build(self, prefix: str, names: dict[str, Any]) -> Any:
        fields = []
        for name, child in self.fields.items():
            if isinstance(child, _Node):
                child.build(prefix, names)
                if name in self.lists:
                    one = (names[child.empty_name],)
                    names[child.empty_name + "_list"] = one
                    fields.append((name, Optional[tuple[child.type]], one))  # type: ignore[name-defined]
                else:
                    fields.append((name, Optional[child.type], names[child.empty_name]))
            else:
                fields.append((name, *_LEAVES[child]))
        label = self.path.replace(".", "_") or "event"
        while f"E_{label}" in names:  # "a.b_c" and "a_b.c" are two objects
            label += "_"
        self.type = msgspec.defstruct(
            f"{prefix}_{label}", fields, frozen=True, gc=False, forbid_unknown_fields=self.strict, module=__name__
        )
        self.empty_name = f"E_{label}"
        names[self.empty_name] = self.type()
        return self.type


_RANK = {"any": 0, "absent": 0, "raw": 1, "key": 2}
_LEAVES: dict[str, tuple[Any, Any]] = {
    "any": (Any, UNSET),
    "absent": (Any, UNSET),
    "raw": (msgspec.Raw, msgspec.Raw()),
    "key": (Union[int, str, None, UnsetType], UNSET),
}


class _Row:
    """The generated lines of one row, each object it reads named once (a local each)."""

    def __init__(self, tree: _Node, row: Delta, n: int, top: dict[Any, str]) -> None:
        self.tree, self.row, self.n = tree, row, n
        self.lines: list[str] = []
        self.depth = 0
        self.top = top  # objects named outside any test by the rows before: read once
        self.locals: dict[Any, str] = dict(top)

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def _object(self, steps: list[tuple[str, bool]]) -> str:
        """A local holding the object at ``steps`` (its empty one when absent or null)."""
        key = tuple(steps)
        if key not in self.locals:
            parent = self._object(steps[:-1]) if len(steps) > 1 else "p"
            name, is_list = steps[-1]
            child = self._holder(steps).fields[name]
            assert isinstance(child, _Node)
            local = self.locals[key] = f"o{len(self.locals)}_{self.n}"
            if self.depth == 0:
                self.top[key] = local
            read = f"{parent}.{name}"
            empty = child.empty_name
            self.emit(f"{local} = ({read} or {empty}_list)[0]" if is_list else f"{local} = {read} or {empty}")
        return self.locals[key]

    def _holder(self, steps: list[tuple[str, bool]]) -> _Node:
        node = self.tree
        for name, _ in steps[:-1]:
            child = node.fields[name]
            assert isinstance(child, _Node)
            node = child
        return node

    def read(self, path: str) -> tuple[str, str]:
        """Python reading ``path`` as decoded, and the name of what it holds when absent."""
        steps = _steps(path)
        parent = self._object(steps[:-1]) if len(steps) > 1 else "p"
        name, _ = steps[-1]
        holder = self._holder(steps)
        child = holder.fields[name]
        if isinstance(child, _Node):
            absent = child.empty_name + ("_list" if name in holder.lists else "")
        else:
            absent = "NO_RAW" if child == "raw" else "UNSET"
        return f"{parent}.{name}", absent

    def decline_if(self, test: str) -> None:
        self.emit(f"if {test}:")
        self.emit("    return None")

    def key(self) -> str:
        row = self.row
        if row.fixed is not None:
            return _literal(row.fixed)
        if row.key is None:
            return "None"
        if isinstance(row.key, str):
            return self.read(row.key)[0]
        parts = [_literal(k.value) if isinstance(k, Const) else self.read(k)[0] for k in row.key]
        return "(" + ", ".join(parts) + ",)"

    def write(self) -> list[str]:
        """The row applies when its event, its values and its piece are there; then every
        other condition declines the whole event (None), or the row makes its events."""
        row = self.row
        tests = [f"event == {_literal(row.event)}"] if row.event is not None else []
        for path, value in row.when.items():
            same = "is" if value is None or isinstance(value, bool) else "=="
            tests.append(f"{self.read(path)[0]} {same} {_literal(value)}")
        if tests:
            self.emit(f"if {' and '.join(tests)}:")
            self.depth += 1
        self.emit(f"text = {self.read(row.text)[0]}")
        self.emit("if type(text) is str and text:")
        self.depth += 1
        for path in row.empty:
            value, absent = self.read(path)
            self.decline_if(value if absent == "UNSET" else f"({value} is not None and {value} is not {absent})")
        for path in row.absent:
            self.decline_if("{} is not {}".format(*self.read(path)))
        self.emit(f"target = self.{row.find}({self.key()})" if row.find else f"target = self.blocks.get({self.key()})")
        if row.kinds is None:
            self.decline_if("target is None")
        else:
            kind = f"!= {_literal(row.kinds[0])}" if len(row.kinds) == 1 else f"not in {_literal(tuple(row.kinds))}"
            # (a block closed is out of ``blocks``; one found otherwise may be closed)
            closed = " or target.closed" if row.find else ""
            self.decline_if(f"target is None{closed} or target.kind {kind}")
        if row.check:
            self.decline_if(f"not self.{row.check}(p)")
        for path, attr in row.keep.items():
            self.emit(f"kept = {self.read(path)[0]}")
            self.emit("if kept is not None and kept is not UNSET:")
            self.emit(f"    self.{attr} = kept")
        self.emit(f"return self.{row.add or 'short_delta'}(target, text)")
        return self.lines


def _literal(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + "".join(_literal(v) + ", " for v in value) + ")"
    if not isinstance(value, (str, int, float, bool, type(None))):
        raise ValueError(f"a fast-path value must be a plain literal, not {value!r}")
    return repr(value)


class FastPath(NamedTuple):
    """A compiled table: the function (``feed_raw(adapter, raw, event)``), the type it
    decodes into, and the source it was generated as."""

    feed_raw: Callable[..., Any]
    type: Any
    source: str


def compile_fast_path(rows: tuple[Delta, ...], name: str = "fast", streaming: Any = None) -> FastPath:
    """Turn ``rows`` into the decoding type and the reading function (see the module)."""
    tree = _Node("")
    for row in rows:
        tree.add(row.text, "any")
        for path in (*row.when, *row.empty, *row.read, *row.keep):
            tree.add(path, "any")
        for path in row.absent:
            tree.add(path, "absent")
        for path in row.raw:
            tree.add(path, "raw")
        keys = (row.key,) if isinstance(row.key, str) else row.key or ()
        for part in keys:
            if not isinstance(part, Const):
                tree.add(part, "key")
    for row in rows:
        for path in row.only:
            (tree.find(path) if path else tree).strict = True
    from ..errors import debug_enabled

    names: dict[str, Any] = {
        "UNSET": UNSET,
        "NO_RAW": _LEAVES["raw"][1],
        "STREAMING": streaming,
        "debug": debug_enabled,
    }
    event_type = tree.build(name, names)
    names["decode"] = msgspec.json.Decoder(event_type).decode
    # The names the function reads are its closure's (a cell each, not a global lookup).
    lines = [
        f"def make({', '.join(names)}):",
        "    def feed_raw(self, raw, event=None):",
        "        if self.state is not STREAMING or event == 'error':",
        "            return None",
        "        try:",
        "            p = decode(raw)",
        "        except (ValueError, RecursionError):",
        "            return None",
        "        try:",
    ]
    top: dict[Any, str] = {}
    for n, row in enumerate(rows):
        lines += ["            " + line for line in _Row(tree, row, n, top).write()]
    # A bug here (a row the kit read wrong) leaves the event to the full path, which says
    # what is wrong with it; with MODELWIRE_DEBUG=1 it is raised, so tests see it.
    lines += ["        except Exception:", "            if debug():", "                raise", "        return None"]
    lines += ["    return feed_raw"]
    source = "\n".join(lines) + "\n"
    scope: dict[str, Any] = {}
    exec(compile(source, f"<fast path of {name}>", "exec"), scope)  # noqa: S102 - our own generated code
    return FastPath(scope["make"](**names), event_type, source)


def fast_path_source(adapter_class: type[BaseAdapter]) -> str:
    """The function an adapter's :class:`Delta` rows compile to, to read."""
    fast = adapter_class.fast_path()
    if fast is None:
        raise ValueError(f"{adapter_class.__name__} declares no deltas: every event takes its full path")
    return fast.source
