"""Where a live replay of a cassette may send credentials.

A cassette is a file anyone may edit (a pull request, a download), so the URL it recorded
is no reason to send a key there. A live replay (``recheck``) sends the environment's
credentials only to an endpoint the user's own configuration names:

- a preset's endpoint, as this environment resolves it (its base-URL variable, its region);
- the ``base_url`` of a profile in ``modelwire.toml``, with that profile's key;
- the ``base_url`` given to the replay (every request goes there, its path kept);
- a host the user names with ``allow_hosts`` (``HOST``, ``HOST:PORT`` or an origin).

Anything else is refused before a byte is sent, naming the host. Plain http carries a key
in clear text, so a non-loopback ``http://`` URL is refused whoever names it.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from ..errors import ConfigError, UntrustedHostError

__all__ = ["Endpoint", "Destinations", "is_loopback", "refuse_plain_http"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Endpoint:
    """Where credentials may go, and whose they are: ``preset`` (its protocol's headers, its
    key variables) and ``api_key`` when a profile holds one."""

    preset: Any
    api_key: str | None = None
    named_by: str = ""


def is_loopback(host: str) -> bool:
    """``localhost`` or an address of the loopback ranges (127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_plain_http(url: str) -> None:
    """:class:`~modelwire.errors.UntrustedHostError` for a URL that is not http(s), or plain
    http to a host that is not loopback (a key would cross the network in clear text)."""
    scheme, host, port = _origin(url)
    shown = f"{host}:{port}" if port != _DEFAULT_PORTS.get(scheme) else host
    if scheme not in _DEFAULT_PORTS or not host:
        raise UntrustedHostError(f"{url.split('?')[0]!r} is not an http(s) URL: nothing is sent", shown)
    if scheme == "http" and not is_loopback(host):
        raise UntrustedHostError(
            f"{shown}: plain http to a host that is not loopback would carry the key in clear text; "
            "nothing is sent (use https)",
            shown,
        )


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is not one: no endpoint of anyone's
        port = -1
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme, 0)


class Destinations:
    """The endpoints credentials may go to in this environment, and the check of each URL
    against them (see the module's text)."""

    def __init__(
        self,
        base_url: str | None = None,
        allow_hosts: Iterable[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        config_path: Path | None = None,
    ) -> None:
        self.base_url = base_url
        self.allow_hosts = {h.strip().lower().rstrip("/") for h in allow_hosts if h.strip()}
        self._env = os.environ if env is None else env
        self._config_path = config_path
        self._known: dict[tuple[str, str, int], dict[str, Endpoint]] | None = None
        self.sent: set[str] = set()  # the credentials sent so far: a rewritten cassette holds none

    def remember(self, url: str, headers: Mapping[str, str]) -> None:
        """The credentials a request to ``url`` with ``headers`` carries, kept in :attr:`sent`."""
        from .._secrets import sent_secrets
        from ..protocols import signed_schemes

        self.sent |= sent_secrets(url, headers.items(), signed_schemes)

    def target(self, url: str) -> str:
        """``url`` sent to ``base_url``'s origin when one was given (its path and query kept)."""
        if not self.base_url:
            return url
        to, parts = urlsplit(self.base_url), urlsplit(url)
        return urlunsplit(parts._replace(scheme=to.scheme, netloc=to.netloc))

    def endpoint(self, url: str, protocol: str) -> Endpoint:
        """Whose credentials go with a request of ``protocol`` to ``url`` (already moved by
        :meth:`target`); :class:`~modelwire.errors.UntrustedHostError` when none may."""
        refuse_plain_http(url)
        scheme, host, port = origin = _origin(url)
        shown = f"{host}:{port}" if port != _DEFAULT_PORTS.get(scheme) else host
        found = self._endpoints().get(origin, {}).get(protocol)
        if found is not None:
            return found
        if (self.base_url and origin == _origin(self.base_url)) or self._allowed(origin):
            first = next((p for p in _presets() if p.protocol == protocol), None)
            if first is not None:
                return Endpoint(first, named_by="the URL you named")
        raise UntrustedHostError(
            (
                f"{shown}: no preset, profile or --base-url of yours names this host, so no key goes there "
                f"and nothing is sent (if you trust it: --allow-host {shown})"
            ),
            shown,
        )

    def _allowed(self, origin: tuple[str, str, int]) -> bool:
        scheme, host, port = origin
        bare = f"[{host}]" if ":" in host else host
        return bool(self.allow_hosts & {host, bare, f"{bare}:{port}", f"{scheme}://{bare}:{port}"}) or (
            port == _DEFAULT_PORTS[scheme] and f"{scheme}://{bare}" in self.allow_hosts
        )

    def _endpoints(self) -> dict[tuple[str, str, int], dict[str, Endpoint]]:
        """Every endpoint a preset or a profile names here, by origin and protocol (a profile
        before a preset of the same origin: it holds the user's own key for it)."""
        if self._known is None:
            known: dict[tuple[str, str, int], dict[str, Endpoint]] = {}
            for url, endpoint in [*self._of_profiles(), *self._of_presets()]:
                known.setdefault(_origin(url), {}).setdefault(endpoint.preset.protocol, endpoint)
            self._known = known
        return self._known

    def _of_presets(self) -> list[tuple[str, Endpoint]]:
        from ..protocols import get_protocol

        out = []
        for preset in _presets():
            base = self._env.get(preset.base_url_variable) or preset.base_url
            url = _url_of(get_protocol(preset.protocol), base, preset, self._env)
            if url:
                out.append((url, Endpoint(preset, named_by=f"the {preset.name} preset")))
        return out

    def _of_profiles(self) -> list[tuple[str, Endpoint]]:
        from ..errors import MissingKeyError
        from ..models.config import load_config, resolve
        from ..protocols import get_protocol

        # Only a configuration the user named: one found in the working directory (or a
        # pyproject.toml's [tool.modelwire]) may come from the same pull request as the
        # cassettes, and would name a host of its choosing for the environment's keys.
        path = self._config_path
        try:
            profiles = load_config(path).get("profiles", {}) if path else {}
        except ConfigError:
            return []
        out = []
        for name in profiles:
            try:
                try:
                    spec = resolve(name, config_path=path, env=self._env)
                except MissingKeyError:  # the endpoint is still the user's; no key goes with it
                    spec = resolve(name, config_path=path, env=self._env, api_key="")
            except ConfigError:
                continue
            url = _url_of(get_protocol(spec.protocol), spec.base_url or "", spec.preset, self._env, spec.model)
            if url:
                out.append((url, Endpoint(spec.preset, spec.api_key, f"the profile {name!r}")))
        return out


def _presets() -> list[Any]:
    from ..protocols import all_presets

    return list(all_presets().values())


def _url_of(wire: Any, base: str, preset: Any, env: Mapping[str, str], model: str = "model") -> str | None:
    """The URL a request through ``preset`` goes to here (None when the environment does not
    say enough to build one: no base URL, no region, no project)."""
    if not base:
        return None
    try:
        return str(wire.url(base, model, preset, env))
    except (ConfigError, KeyError, ValueError):
        return None
