"""Which endpoint a model reaches and which account it calls under: what provenance records
on what a model mints (signed thinking, ids), so that it goes back only where it is accepted."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from .. import errors as E
from .config import REPLAY_KEY, ModelSpec, Preset

__all__ = ["account_fingerprint", "endpoint_and_account", "endpoint_family"]


def endpoint_and_account(spec: ModelSpec, options: dict[str, Any]) -> tuple[str, str | None]:
    """The endpoint family (``endpoint_family``, or the preset's and base URL's) and the
    account (``account``, a name the user gives, or the key's fingerprint) of a model,
    their options taken out of ``options``."""
    family = options.pop("endpoint_family", None)
    if family is not None and (not isinstance(family, str) or not family):
        raise E.ConfigError(f"endpoint_family={family!r} must be a name")
    endpoint = family or endpoint_family(spec.preset, spec.base_url)
    account = options.pop("account", None)
    if account is not None and (not isinstance(account, str) or not account):
        raise E.ConfigError(f"account={account!r} must be a name (a profile's, say)")
    return endpoint, f"name:{account}" if account else account_fingerprint(spec.api_key, endpoint)


def account_fingerprint(api_key: str | None, endpoint: str) -> str | None:
    """The account a key stands for, as provenance records it: a short hash of the key and
    its endpoint family (``key:`` and 16 hex digits), never the key itself; None without a
    plain key (cloud credentials: the account is not known) and with the placeholder key of
    a cassette's replay and of the offline checks (``check``, ``transpose``): no account is
    known there, and thinking made under the user's own must not look foreign."""
    if not api_key or api_key == REPLAY_KEY:
        return None
    import hashlib

    digest = hashlib.sha256(b"modelwire account\0" + endpoint.encode() + b"\0" + api_key.encode()).hexdigest()
    return "key:" + digest[:16]


def endpoint_family(preset: Preset, base_url: str | None) -> str:
    """Which endpoints accept what this one mints: the provider's own family at its own
    base URL, else the host and port of the base URL (a proxy, a gateway, a compatible
    server: two gateways on one host are two servers), the scheme's default port left out,
    the path ignored."""
    own = (preset.base_url or "").rstrip("/")
    if not base_url or base_url.rstrip("/") == own:
        return preset.endpoint_family or preset.name
    parts = urlparse(base_url)
    host = parts.hostname
    if not host:
        return base_url
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: the text as given tells it apart
        return parts.netloc.rsplit("@", 1)[-1].lower()
    if port is None or port == _DEFAULT_PORTS.get(parts.scheme.lower()):
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


_DEFAULT_PORTS = {"http": 80, "https": 443}
