"""Prompt caches that are resources: created through the provider's API before the call
(Gemini's ``cachedContent``), then named in each request that can use them.

One resource per distinct content (the system instruction and tools it holds), kept
until shortly before it expires, then created again. A creation the provider refuses (a
prefix under its minimum size, say) is logged as a warning once, the call goes on
without it, and it is not asked again for that content until the lifetime has passed:
caching is a saving, never a reason for a call to fail.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from typing import Any, Awaitable, Callable

log = logging.getLogger("modelwire.models")

_MARGIN = 30.0  # seconds before expiry a resource is no longer handed out


class CacheResources:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._known: dict[str, tuple[str | None, float]] = {}  # content key -> (name or None: refused, until)
        self._lock: asyncio.Lock | None = None

    async def name_for(
        self, url: str, create: dict[str, Any], send: Callable[[str, bytes], Awaitable[tuple[int, bytes]]]
    ) -> str | None:
        """The name of a live resource holding ``create``'s content, created if needed
        (``send(url, body)`` POSTs and answers ``(status, body)``); None: none to use."""
        content = {k: v for k, v in create.items() if k != "ttl"}
        key = hashlib.sha256((url + json.dumps(content, sort_keys=True, ensure_ascii=False)).encode()).hexdigest()
        now = self._clock()
        known = self._known.get(key)
        if known is not None and known[1] - _MARGIN > now:
            return known[0]
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one creation at a time: concurrent calls share it
            known = self._known.get(key)
            if known is not None and known[1] - _MARGIN > self._clock():
                return known[0]
            lifetime = float(str(create.get("ttl", "300s")).rstrip("s"))
            try:
                status, raw = await send(url, json.dumps(create, ensure_ascii=False).encode())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a cache is a saving: the call goes on without it
                log.warning(
                    "prompt cache not created at %s (%s: %s); the call goes on without it",
                    url.split("?")[0],
                    type(exc).__name__,
                    exc,
                )
                self._known[key] = (None, self._clock() + lifetime)
                return None
            name = None
            if status == 200:
                try:
                    name = json.loads(raw).get("name")
                except (ValueError, AttributeError):
                    name = None
            if not isinstance(name, str) or not name:
                reason = raw[:300].decode("utf-8", "replace").strip()
                log.warning(
                    "prompt cache not created at %s (HTTP %s: %s); the call goes on without it",
                    url.split("?")[0],
                    status,
                    reason,
                )
                self._known[key] = (None, self._clock() + lifetime)
                return None
            self._known[key] = (name, self._clock() + lifetime)
            return name
