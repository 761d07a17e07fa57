"""What the error bodies of OpenAI's APIs (and of the gateways that answer in its shape) say
beyond their type: the wait a rate limit names in its words, and the upstream reason a
gateway keeps beside its own words. Shared by the Chat Completions and Responses protocols.

- OpenAI's 429 says its wait in the message: "Rate limit reached for o4-mini in organization
  org-... on tokens per min (TPM): Limit 200000, Used 162960, Requested 42288. Please try
  again in 1.574s." (openai/codex#88, 2025-04-16), "... Please try again in 6ms."
  (daveshap/Medical_Intake#9, 2023-09-30); read when no ``retry-after`` header says it.
- OpenRouter answers an upstream provider's failure as ``{"error": {"message": "Provider
  returned error", "code": 429, "metadata": {"raw": "<the upstream's words or body>",
  "provider_name": "BaseTen"}}}`` (open-webui/computer#293, 2026-09-20; a JSON ``raw``:
  diegosouzapw/OmniRoute#3044, 2026-06-01): the upstream's reason (and its error type, where
  it gave one) goes into the error, so it says what failed.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from ..errors import ProviderError, error_from_body

__all__ = ["OpenAIErrors", "wait_in", "with_upstream_reason"]

_WAIT = re.compile(r"try again in (?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)(ms|s)\b)?", re.I)
_REASON_LIMIT = 1000


def wait_in(message: str) -> float | None:
    """Seconds of "try again in 1.574s" (also ``6ms``, ``1m30s``, ``2h``) in ``message``, else None."""
    found = _WAIT.search(message)
    if found is None or not any(found.groups()):
        return None
    hours, minutes, amount, unit = found.groups()
    seconds = float(hours or 0) * 3600 + float(minutes or 0) * 60
    if amount:
        seconds += float(amount) / 1000 if unit.lower() == "ms" else float(amount)
    return seconds


def _upstream(raw: str) -> tuple[str, str | None]:
    """The upstream's reason and error type, from ``metadata.raw`` (its words, or its body as JSON)."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw.strip(), None
    err = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(err, str):
        return err, None
    source = err if isinstance(err, dict) else parsed if isinstance(parsed, dict) else {}
    reason = source.get("message") or source.get("detail") or raw
    kind = source.get("status") if isinstance(source.get("status"), str) else source.get("type")
    return str(reason).strip(), kind if isinstance(kind, str) and kind else None


def with_upstream_reason(body: Any) -> Any:
    """``body`` with the upstream reason a gateway keeps in ``error.metadata.raw`` in its
    message (and the upstream's error type, where the gateway's error has none); any other
    body as it is."""
    err = body.get("error") if isinstance(body, Mapping) else None
    metadata = err.get("metadata") if isinstance(err, Mapping) else None
    raw = metadata.get("raw") if isinstance(metadata, Mapping) else None
    if not isinstance(raw, str) or not raw.strip():
        return body
    assert isinstance(err, Mapping) and isinstance(metadata, Mapping)
    reason, kind = _upstream(raw)
    provider = metadata.get("provider_name")
    said = str(err.get("message") or "the upstream provider failed")
    where = f" ({provider})" if isinstance(provider, str) and provider else ""
    rewritten = {**err, "message": f"{said}{where}: {reason[:_REASON_LIMIT]}"}
    if kind and not isinstance(err.get("type"), str):
        rewritten["type"] = kind
    return {**body, "error": rewritten}


class OpenAIErrors:
    """The error reading of a protocol served by OpenAI's API (a mixin before ``WireProtocol``)."""

    name: str

    def error(self, body: Any, status: int | None = None, request_id: str | None = None) -> ProviderError:
        err = error_from_body(with_upstream_reason(body), self.name, status=status, request_id=request_id)
        err.body = body  # the body as the server sent it
        return err

    def retry_after_in(self, body: Mapping[str, Any]) -> float | None:
        err = body.get("error") if isinstance(body, Mapping) else None
        message = err.get("message") if isinstance(err, Mapping) else None
        return wait_in(message) if isinstance(message, str) else None
