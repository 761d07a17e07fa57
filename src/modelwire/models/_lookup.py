"""Asking the provider what a model accepts, once, and remembering the answer.

Where a provider publishes per-model facts (Anthropic's Models API, Gemini's
``models.get``, OpenRouter's model list; the protocol says where and how to read them),
:func:`published_capabilities` fetches them on the first call whose options depend on
them. It is bounded by a short time budget, so a slow or absent endpoint delays that call
by a fraction of a second at most, and it never fails: any problem means "not known"
(the shipped table and the protocol's defaults then decide). Answers are kept in memory
and on disk (one file per endpoint and model, written atomically, so processes sharing
the cache never read half a file), and expire.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from ..protocols import ModelCapabilities, WireProtocol

__all__ = ["CapabilityCache", "published_capabilities", "default_cache"]

log = logging.getLogger("modelwire.models")

LOOKUP_SECONDS = 0.5
TTL_SECONDS = 24 * 3600


class CapabilityCache:
    """Providers' raw answers by ``(url, model)``, in memory and under ``folder``."""

    def __init__(self, folder: Path | None, ttl: float = TTL_SECONDS, clock: Any = time.time) -> None:
        self.folder = folder
        self.ttl = ttl
        self.clock = clock
        self._memory: dict[str, tuple[float, Any]] = {}

    @staticmethod
    def key(url: str, model: str) -> str:
        return hashlib.sha256(f"{url}\n{model}".encode()).hexdigest()[:32]

    def get(self, url: str, model: str) -> Any:
        key = self.key(url, model)
        hit = self._memory.get(key)
        if hit is None and self.folder is not None:
            try:
                stored = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
                hit = (float(stored["fetched_at"]), stored["data"])
            except (OSError, ValueError, KeyError, TypeError):
                hit = None  # absent, or written by something else: fetched again
        if hit is None or self.clock() - hit[0] > self.ttl:
            return None
        self._memory[key] = hit
        return hit[1]

    def put(self, url: str, model: str, data: Any) -> None:
        key = self.key(url, model)
        now = self.clock()
        self._memory[key] = (now, data)
        if self.folder is not None:
            write_json(self.folder, key, {"fetched_at": now, "url": url, "model": model, "data": data})


def write_json(folder: Path, key: str, data: Any) -> None:
    """``data`` as ``folder/<key>.json``, written atomically (processes sharing the folder read
    the old file or the new, never half of one); a folder that cannot be written keeps nothing."""
    import tempfile  # here: its import (with shutil and random) is a first call's 4 ms otherwise

    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(tmp, folder / f"{key}.json")
    except OSError as exc:
        log.debug("%s not written: %s", folder, exc)


def cache_folder(kind: str = "capabilities") -> Path | None:
    """Where modelwire keeps ``kind`` (its capability answers, or ``learned`` rules):
    ``MODELWIRE_CACHE_DIR/kind``, else the user's cache folder; ``MODELWIRE_CACHE_DIR=""``
    keeps them in memory only."""
    chosen = os.environ.get("MODELWIRE_CACHE_DIR")
    if chosen is not None:
        return Path(chosen) / kind if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "modelwire" / kind


_default: CapabilityCache | None = None


def default_cache() -> CapabilityCache:
    global _default
    if _default is None or _default.folder != cache_folder():
        _default = CapabilityCache(cache_folder())
    return _default


async def published_capabilities(
    wire: WireProtocol,
    url: str,
    model: str,
    headers: dict[str, str],
    transport: Any,
    *,
    cache: CapabilityCache | None = None,
    budget: float = LOOKUP_SECONDS,
    body: bytes | None = None,
) -> ModelCapabilities | None:
    """What the provider publishes about ``model`` at ``url``, or None (never raises)."""
    cache = cache or default_cache()
    data = cache.get(url, model)
    if data is None:
        try:
            async with asyncio.timeout(budget):
                method = "GET" if body is None else "POST"
                sent = {
                    **headers,
                    "accept": "application/json",
                    **({"content-type": "application/json"} if body is not None else {}),
                }
                response = await transport.open(method, url, sent, body or b"", budget)
                try:
                    raw = await response.aread()
                finally:
                    await response.aclose()
            if response.status_code != 200:
                log.debug("capability lookup %s: HTTP %s", url, response.status_code)
                return None
            data = json.loads(raw)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # slow, refused, malformed: not known, and the call goes on
            log.debug("capability lookup %s failed: %s", url, exc or type(exc).__name__)
            return None
        try:
            record = wire.capabilities_from_info(data, model)
        except Exception as exc:
            log.debug("capability lookup %s: an answer modelwire cannot read: %s", url, exc)
            return None
        if record is None:
            return None
        cache.put(url, model, data)
        return record
    try:
        return wire.capabilities_from_info(data, model)
    except Exception:
        return None
