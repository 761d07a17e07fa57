"""Identifiers and timestamps for messages, blocks and events.

Ids are 32 lowercase hex digits, like AgentScope's ``uuid4().hex``. Making one per
streamed event must be cheap, so ids are drawn 64 at a time: 128 random bits each from one
``os.urandom`` call per batch, as unique as a uuid4, with one system call per 64 ids and no
counter in them that would let one id tell another (a forked child drops the batch its
parent drew). Ids are not secrets: what must be unguessable (a served reply's resume token)
comes from :mod:`secrets`. Timestamps are local ISO 8601, as ``datetime.now().isoformat()``
writes them; the date and time of day are formatted once per second (without importing
:mod:`datetime`, which a message or an event would otherwise be the only reason to load).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Container

_time = time.time
_time_ns = time.time_ns
_localtime = time.localtime
_strftime = time.strftime
_second: tuple[int, str] = (-1, "")  # the last second formatted, and its "YYYY-MM-DDTHH:MM:SS"
_stamp, _since, _until = "", 0.0, 0.0  # coarse_now_iso's stamp, and the times it holds for
_urandom = os.urandom

_pool: list[str] = []  # ids drawn ahead, 64 at a time: one draw and one format per batch
_BATCH = 64

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.clear)  # a forked child must not hand out the ids its parent drew


def _refill() -> str:
    # 64 ids of 16 random bytes each, as hex, split in C
    _pool[:] = _urandom(16 * _BATCH).hex(" ", 16).split(" ")
    return _pool.pop()


def new_id() -> str:
    """A fresh unique id (32 lowercase hex digits)."""
    try:
        return _pool.pop()
    except IndexError:
        return _refill()


def now_iso() -> str:
    """The current local time as an ISO 8601 string."""
    return _iso(_time_ns() // 1000)


def _iso(microseconds: int) -> str:
    # what datetime.fromtimestamp(t).isoformat() writes: no fraction when it is zero
    global _second
    second, fraction = divmod(microseconds, 1_000_000)
    known = _second  # one read: another thread may replace it, never half-way
    if known[0] != second:
        known = _second = (second, _strftime("%Y-%m-%dT%H:%M:%S", _localtime(second)))
    return f"{known[1]}.{fraction:06d}" if fraction else known[1]


def coarse_now_iso() -> str:
    """Like :func:`now_iso`, but taken at most once per millisecond.

    For code that stamps many events in a burst (an adapter stamps every event it
    makes): reading and formatting the clock costs more than the rest of handling a
    small event. The stamp is kept with the millisecond it holds for (module globals, read
    in one comparison; a thread that reads them while another writes gets a stamp of that
    millisecond or the one before, as coarse as it says).
    """
    global _stamp, _since, _until
    t = _time()
    if _since <= t < _until:
        return _stamp
    _stamp = stamp = _iso(int(t * 1_000_000))
    _since, _until = t, t + 0.001
    return stamp


def id_again(given: str, taken: Container[str]) -> str:
    """An id of its own for something whose id ``given`` is ``taken`` already (a tool call a
    provider numbered per response): ``given_2``, ``given_3`` ..., the first not in ``taken``."""
    n = 2
    while f"{given}_{n}" in taken:
        n += 1
    return f"{given}_{n}"
