"""Identifiers and timestamps for messages, blocks and events.

Ids are 32 lowercase hex digits, like AgentScope's ``uuid4().hex``. Making one per
streamed event must be cheap, so an id is a random per-process prefix plus a counter
(the prefix is drawn again in a forked child); ids stay unique across processes
without paying for ``os.urandom`` on every event. Timestamps are local ISO 8601.
"""

from __future__ import annotations

import itertools
import os
import time
import uuid
from datetime import datetime

_now = datetime.now
_fromtimestamp = datetime.fromtimestamp
_time = time.time
_last = [0.0, ""]
_state: list = []


def _reseed() -> None:
    _state[:] = [uuid.uuid4().hex[:20], itertools.count(1).__next__]


_reseed()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed)


def new_id() -> str:
    """A fresh unique id (32 lowercase hex digits)."""
    prefix, nxt = _state
    return f"{prefix}{nxt():012x}"


def now_iso() -> str:
    """The current local time as an ISO 8601 string."""
    return _now().isoformat()


def coarse_now_iso() -> str:
    """Like :func:`now_iso`, but taken at most once per millisecond.

    For code that stamps many events in a burst (an adapter stamps every event it
    makes): reading and formatting the clock costs more than the rest of handling a
    small event.
    """
    t = _time()
    last = _last
    if t - last[0] < 0.001 and t >= last[0]:
        return last[1]
    stamp = _fromtimestamp(t).isoformat()
    last[0] = t
    last[1] = stamp
    return stamp
