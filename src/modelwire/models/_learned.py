"""Rules a provider stated in its refusals, remembered per endpoint and model.

A provider answers 400 to an option its model does not take, and most say which and why in
words a program can read (``"thinking.type.disabled" is not supported for this model``).
Each protocol lists the words it knows (``WireProtocol.refusals``). When a call is refused
so, the models layer keeps what the words state, as capability fields (``thinking_off =
false``), for that endpoint and model: the call fails once, with an
:class:`~modelwire.errors.RefusedOptionError` quoting the provider, and the next such call
is refused before it is sent, in this process and in the next (one file per endpoint and
model beside the capability cache, dated, expiring after ``ttl``). ``modelwire models
--capabilities MODEL`` shows each learned field with its date and the provider's words;
``modelwire models --forget MODEL`` forgets them. What was asked is never changed: the
rule refuses, it does not rewrite.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..protocols import ModelCapabilities
from ..protocols._caps import UNION_FIELDS
from ._lookup import cache_folder, write_json

__all__ = ["LearnedRules", "learned_rules", "refusal_in"]

TTL_SECONDS = 30 * 24 * 3600  # providers change their rules; a month-old lesson is asked again


class LearnedRules:
    """Learned capability fields by ``(endpoint, model)``, in memory and under ``folder``."""

    def __init__(self, folder: Path | None, ttl: float = TTL_SECONDS, clock: Any = time.time) -> None:
        self.folder = folder
        self.ttl = ttl
        self.clock = clock
        self._memory: dict[str, dict[str, Any]] = {}

    @staticmethod
    def key(endpoint: str, model: str) -> str:
        return hashlib.sha256(f"{endpoint}\n{model}".encode()).hexdigest()[:32]

    def _read(self, key: str) -> dict[str, Any]:
        found = self._memory.get(key)
        if found is None and self.folder is not None:
            try:
                found = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
                if not isinstance(found, dict) or not isinstance(found.get("fields"), dict):
                    found = None
            except (OSError, ValueError):
                found = None
        return found or {}

    def get(self, endpoint: str, model: str) -> ModelCapabilities | None:
        """What was learned for this model at this endpoint and has not expired (None: nothing)."""
        record = self._read(self.key(endpoint, model))
        now = self.clock()
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for name, field in record.get("fields", {}).items():
            try:
                if now - float(field["learned_at"]) > self.ttl:
                    continue
                values[name] = field["value"]
                day = time.strftime("%Y-%m-%d", time.gmtime(float(field["learned_at"])))
                sources[name] = f"learned from the provider's refusal on {day}: {field['said']!r}"
            except (KeyError, TypeError, ValueError):
                continue  # a field written by something else: not known
        if not values:
            return None
        try:
            caps = ModelCapabilities.from_mapping(values, "learned")
        except Exception:  # noqa: BLE001 - a file edited by hand: what it holds is not trusted
            return None
        return replace(caps, sources=sources)

    def add(self, endpoint: str, model: str, learned: ModelCapabilities, said: str) -> None:
        """Keep what a refusal stated (``learned``'s known fields), with the provider's words."""
        key = self.key(endpoint, model)
        record = self._read(key) or {"endpoint": endpoint, "model": model, "fields": {}}
        now = self.clock()
        for name, value in learned.known().items():
            kept = record["fields"].get(name)
            if name in UNION_FIELDS and isinstance(kept, dict) and isinstance(kept.get("value"), list):
                value = tuple(dict.fromkeys([*kept["value"], *value]))  # each refusal names one more
            record["fields"][name] = {
                "value": list(value) if isinstance(value, tuple) else value,
                "learned_at": now,
                "said": said[:300],
            }
        self._memory[key] = record
        if self.folder is not None:
            write_json(self.folder, key, record)

    def forget(self, model: str) -> int:
        """Forget what was learned for ``model`` at every endpoint; how many records went."""
        gone = 0
        for key in [k for k, r in self._memory.items() if r.get("model") == model]:
            del self._memory[key]
            gone += 1
        if self.folder is not None and self.folder.is_dir():
            for path in self.folder.glob("*.json"):
                try:
                    if json.loads(path.read_text(encoding="utf-8")).get("model") == model:
                        path.unlink()
                        gone += 1
                except (OSError, ValueError, AttributeError):
                    continue
        return gone


_default: LearnedRules | None = None


def learned_rules() -> LearnedRules:
    """The rules kept beside the capability cache (``cache_folder("learned")``)."""
    global _default
    folder = cache_folder("learned")
    if _default is None or _default.folder != folder:
        _default = LearnedRules(folder)
    return _default


def refusal_in(protocol: str, message: str) -> tuple[str, ModelCapabilities] | None:
    """The option a refusal's words in ``message`` refuse (``protocol``'s own words first,
    then every protocol's: a gateway answers in the words of the provider behind it), and
    the capabilities they state."""
    from ..protocols import reading_order

    for wire in reading_order(protocol):
        for refusal in wire.refusals:
            found = refusal.learned(message)
            if found is not None:
                return found
    return None
