"""Mutated response bodies for the conformance suite's fuzzing: a body a protocol's own
``fake_stream`` made, changed the ways a provider's real streams go wrong (a field missing or
of another type, an event lost, repeated or out of place, bytes flipped, cut or added). Each
mutation is seeded, so a failure names the seed and the mutation that makes it again."""

from __future__ import annotations

import json
import random
from typing import Any, Iterator

# What a field may hold instead of what the provider documents.
ODD_VALUES: tuple[Any, ...] = (None, 0, -1, 1.5, True, "", "x", [], [1], {}, {"x": 1})


def mutations(pieces: list[bytes], rnd: random.Random, count: int, structured: bool) -> Iterator[tuple[str, bytes]]:
    """``count`` mutated bodies of the body whose events are ``pieces`` (one event, line or
    frame each), each with a label saying what was changed. ``structured``: the events are
    text holding one JSON object each, whose fields may be changed."""
    for _ in range(count):
        roll = rnd.random()
        if structured and roll < 0.6:
            found = _field_changed(pieces, rnd)
            if found is not None:
                yield found
                continue
        if roll < 0.8 and len(pieces) > 1:
            yield _events_moved(pieces, rnd)
        else:
            yield _bytes_changed(b"".join(pieces), rnd)


def _json_span(piece: bytes) -> tuple[int, int, Any] | None:
    start, end = piece.find(b"{"), piece.rfind(b"}")
    if start < 0 or end < start:
        return None
    try:
        return start, end + 1, json.loads(piece[start : end + 1])
    except ValueError:
        return None


def _paths(value: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if here:
        yield here
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, here + (key,))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, here + (i,))


def _field_changed(pieces: list[bytes], rnd: random.Random) -> tuple[str, bytes] | None:
    """One field of one event deleted, or given a value of another type."""
    spans = [(i, span) for i, piece in enumerate(pieces) if (span := _json_span(piece)) is not None]
    if not spans:
        return None
    index, (start, end, data) = rnd.choice(spans)
    paths = list(_paths(data))
    if not paths:
        return None
    path = rnd.choice(paths)
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    where = "." + ".".join(str(step) for step in path)
    if rnd.random() < 0.4:
        del parent[path[-1]]
        label = f"event {index}: {where} deleted"
    else:
        parent[path[-1]] = rnd.choice(ODD_VALUES)
        label = f"event {index}: {where} set to {json.dumps(parent[path[-1]])}"
    piece = pieces[index]
    changed = piece[:start] + json.dumps(data, separators=(",", ":")).encode() + piece[end:]
    return label, b"".join(pieces[:index] + [changed] + pieces[index + 1 :])


def _events_moved(pieces: list[bytes], rnd: random.Random) -> tuple[str, bytes]:
    """One event dropped, repeated, or swapped with another."""
    out = list(pieces)
    i, j = rnd.randrange(len(out)), rnd.randrange(len(out))
    kind = rnd.randrange(3)
    if kind == 0:
        del out[i]
        return f"event {i} dropped", b"".join(out)
    if kind == 1:
        out.insert(i, out[i])
        return f"event {i} repeated", b"".join(out)
    out[i], out[j] = out[j], out[i]
    return f"events {i} and {j} swapped", b"".join(out)


def _bytes_changed(raw: bytes, rnd: random.Random) -> tuple[str, bytes]:
    """Bytes flipped, the body cut, a slice dropped, or garbage added at the end."""
    data = bytearray(raw)
    kind = rnd.randrange(4) if data else 3
    if kind == 0:
        for _ in range(rnd.randint(1, 4)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        return "bytes flipped", bytes(data)
    if kind == 1:
        at = rnd.randrange(len(data))
        return f"cut at byte {at}", bytes(data[:at])
    if kind == 2:
        at = rnd.randrange(len(data))
        del data[at : at + rnd.randint(1, 40)]
        return f"bytes dropped at {at}", bytes(data)
    data += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 30)))
    return "garbage appended", bytes(data)


def split_at_random(raw: bytes, rnd: random.Random) -> list[bytes]:
    """``raw`` in the pieces a network might deliver it in."""
    cuts = sorted(rnd.sample(range(1, len(raw)), min(len(raw) - 1, rnd.randint(0, 6)))) if len(raw) > 1 else []
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)])]
