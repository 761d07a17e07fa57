"""A function call's arguments as Vertex AI streams them (``streamFunctionCallArguments``):
``partialArgs`` entries, each a ``jsonPath`` and a typed value (``stringValue``,
``numberValue``, ``boolValue``, ``nullValue``), strings continued while ``willContinue``,
put together into the arguments object. The Gemini adapter's; pure, no events."""

from __future__ import annotations

from typing import Any

from ...errors import StreamProtocolError

__all__ = ["StreamedCall", "set_path"]


class StreamedCall:
    """A function call whose arguments arrive as ``partialArgs`` (Vertex)."""

    __slots__ = ("key", "args", "open_string", "pieces", "slot")

    def __init__(self, key: Any) -> None:
        self.key = key
        self.args: dict[str, Any] = {}
        self.open_string: str | None = None  # the jsonPath of a string still being continued
        self.pieces: list[str] = []  # its pieces so far, joined once (a long string is linear)
        self.slot: tuple[Any, str | int] | None = None  # where the joined string goes

    def flush(self) -> None:
        """Write the string still being continued into the arguments."""
        if self.slot is not None:
            container, last = self.slot
            _put(container, last, "".join(self.pieces))
        self.open_string, self.pieces, self.slot = None, [], None


_VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue")


_VALUE_TYPES: dict[str, Any] = {"stringValue": str, "numberValue": (int, float), "boolValue": bool, "nullValue": object}


def set_path(streamed: StreamedCall, arg: Any) -> None:
    """Put one ``partialArgs`` entry into the arguments being built."""
    if not isinstance(arg, dict) or not isinstance(arg.get("jsonPath"), str):
        raise StreamProtocolError("a partialArgs entry without a jsonPath", body={"partialArgs": arg})
    path = arg["jsonPath"]
    steps = _steps(path)
    present = [k for k in _VALUE_KEYS if k in arg]
    if not present:
        if arg.get("willContinue"):
            return
        raise StreamProtocolError(f"partialArgs entry for {path} has no value", body={"partialArgs": arg})
    kind = present[0]
    value = _typed_value(arg, kind, path)
    more = bool(arg.get("willContinue"))
    if kind == "stringValue" and isinstance(value, str) and streamed.open_string == path:
        streamed.pieces.append(value)  # a string continued across pieces
        if not more:
            streamed.flush()
        return
    streamed.flush()
    target: Any = streamed.args
    for step, following in zip(steps, steps[1:]):
        target = _child(target, step, {} if isinstance(following, str) else [])
    last = steps[-1]
    _put(target, last, value)
    if kind == "stringValue" and isinstance(value, str) and more:
        streamed.open_string, streamed.pieces, streamed.slot = path, [value], (target, last)


_PATHS: dict[str, tuple[str | int, ...]] = {}  # jsonPaths read so far (a call repeats its few paths)


def _steps(path: str) -> tuple[str | int, ...]:
    """A jsonPath's steps (keys and indexes), read once per path."""
    steps = _PATHS.get(path)
    if steps is None:
        steps = tuple(_parse_path(path))
        if len(_PATHS) < 4096:
            _PATHS[path] = steps
    return steps


def _typed_value(arg: dict[str, Any], kind: str, path: str) -> Any:
    """An entry's value, of the type its key says (``stringValue`` a string ...)."""
    value = None if kind == "nullValue" else arg[kind]
    if not isinstance(value, _VALUE_TYPES[kind]) or (kind != "boolValue" and isinstance(value, bool)):
        raise StreamProtocolError(
            f"partialArgs entry for {path}: {kind} holds {type(value).__name__}", body={"partialArgs": arg}
        )
    return value


def _parse_path(path: str) -> list[str | int]:
    if not path.startswith("$"):
        raise StreamProtocolError(f"jsonPath {path!r} does not start at $")
    steps: list[str | int] = []
    i = 1
    while i < len(path):
        if path[i] == ".":
            j = i + 1
            while j < len(path) and path[j] not in ".[":
                j += 1
            steps.append(path[i + 1 : j])
            i = j
        elif path[i] == "[":
            j = path.find("]", i)
            if j < 0:
                raise StreamProtocolError(f"cannot read jsonPath {path!r}: a [ without its ]")
            inner = path[i + 1 : j]
            steps.append(int(inner) if inner.isdigit() else inner.strip("'\""))
            i = j + 1
        else:
            raise StreamProtocolError(f"cannot read jsonPath {path!r}")
    if not steps:
        raise StreamProtocolError(f"jsonPath {path!r} names no field")
    return steps


def _reach(container: Any, step: int) -> None:
    """Make ``container`` (a list) long enough to hold index ``step``."""
    if not isinstance(container, list):
        raise StreamProtocolError("a jsonPath index into something that is not a list")
    if step > len(container) + 1024:
        # Elements arrive in order: an index far past the end would only fill memory.
        raise StreamProtocolError(f"a jsonPath index {step} far past the {len(container)} elements so far")
    while len(container) <= step:
        container.append(None)


def _child(container: Any, step: str | int, empty: Any) -> Any:
    if isinstance(step, int):
        _reach(container, step)
        if container[step] is None:
            container[step] = empty
        return container[step]
    if not isinstance(container, dict):
        raise StreamProtocolError("a jsonPath field of something that is not an object")
    if container.get(step) is None:
        container[step] = empty
    return container[step]


def _put(container: Any, step: str | int, value: Any) -> None:
    if isinstance(step, int):
        _reach(container, step)
        container[step] = value
    else:
        if not isinstance(container, dict):
            raise StreamProtocolError("a jsonPath field of something that is not an object")
        container[step] = value
