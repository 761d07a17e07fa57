"""Fetching a media source under a :class:`~modelwire.sources.SourcePolicy`: each URL (the
first and every redirect's) checked, its host resolved once and every address judged, and the
connection made to the very address judged (the host name goes in the Host header and TLS
SNI), so a second DNS answer cannot turn a public name into a private address."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any, Callable, Sequence
from urllib.parse import urljoin, urlsplit

from .. import errors as E
from ..sources import SourcePolicy, not_public
from ._body import USER_AGENT

Refuse = Callable[[str, str], E.SourceRefusedError]
"""``refuse(rule, reason)``: the error for the source being resolved."""

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass
class Target:
    """A URL that passed the policy, and the address its connection goes to."""

    url: str
    scheme: str
    host: str
    address: str | None  # None: not resolved (a policy that takes any URL)


async def checked_target(url: str, policy: SourcePolicy, refuse: Refuse) -> Target:
    """``url`` if ``policy`` lets it be used, with the address to connect to; else the
    refusal, naming the rule. A host the operator named (``hosts``) is taken whatever it
    resolves to; under ``urls="public"`` any other must be https and resolve to public
    addresses only."""
    try:
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), (parts.hostname or "")
    except ValueError:
        raise refuse("host", "the URL cannot be read") from None
    if scheme not in ("http", "https"):
        raise refuse("scheme", f"only http(s) URLs are used under this policy, not {scheme}:")
    if not host:
        raise refuse("host", "the URL names no host")
    if policy.urls == "none":
        raise refuse("host", "this server fetches no URL; send the data inline (a data: URL)")
    trusted = policy.trusts(host)
    if policy.urls == "any":
        return Target(url, scheme, host, None)
    if not trusted and policy.urls == "hosts":
        raise refuse("host", f"{host} is not one of the hosts this server fetches from")
    if not trusted and scheme != "https":
        raise refuse("scheme", "only https URLs are used for input from outside the server")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise refuse("host", "the URL's port is not a port") from None
    addresses = await _resolve(host, port, policy)
    if not addresses:
        raise refuse("host", f"{host} does not resolve")
    if not trusted:
        for address in addresses:
            kind = not_public(address)
            if kind is not None:
                raise refuse("address", f"{host} resolves to {kind}; only public addresses are used")
    return Target(url, scheme, host, addresses[0])


async def _resolve(host: str, port: int, policy: SourcePolicy) -> Sequence[str]:
    try:
        ipaddress.ip_address(host)
        return [host]
    except ValueError:
        pass
    if policy.resolver is not None:
        return list(await policy.resolver(host, port))
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return []
    return [str(info[4][0]) for info in infos]


async def fetch_checked(url: str, policy: SourcePolicy, max_bytes: int, refuse: Refuse) -> bytes:
    """The bytes at ``url``, every hop checked by :func:`checked_target` and pinned to the
    address checked, within ``policy.timeout`` and ``max_bytes``. No proxy from the
    environment is used (it would resolve the name again, on its side)."""
    import httpx2

    try:
        async with asyncio.timeout(policy.timeout):
            async with httpx2.AsyncClient(trust_env=False, timeout=policy.timeout) as client:
                return await _follow(client, url, policy, max_bytes, refuse)
    except TimeoutError:
        raise refuse("timeout", f"the fetch took longer than {policy.timeout:g} s") from None
    except httpx2.InvalidURL:
        raise refuse("host", "the URL cannot be read") from None
    except httpx2.HTTPError as exc:
        # The exception's words may name the address connected to: the type is enough.
        raise E.InvalidRequestError(f"fetching {url} failed ({type(exc).__name__})") from None


async def _follow(client: Any, url: str, policy: SourcePolicy, max_bytes: int, refuse: Refuse) -> bytes:
    hop = url
    for _ in range(policy.max_redirects + 1):
        target = await checked_target(hop, policy, refuse)
        response = await client.send(_pinned(client, target), stream=True)
        try:
            location = response.headers.get("location")
            if response.status_code in _REDIRECTS and location:
                hop = urljoin(hop, location)
                continue
            if response.status_code >= 400:
                raise E.InvalidRequestError(
                    f"fetching {url} gave HTTP {response.status_code}", status_code=response.status_code
                )
            return await _capped(response, max_bytes, refuse)
        finally:
            await response.aclose()
    raise refuse("redirects", f"more than {policy.max_redirects} redirects")


def _pinned(client: Any, target: Target) -> Any:
    """The GET for ``target``, sent to its checked address: the URL's host becomes the
    address; the Host header and (over TLS) SNI and the certificate check keep the name."""
    import httpx2

    url = httpx2.URL(target.url)
    headers = {"host": url.netloc.decode("ascii"), "user-agent": USER_AGENT}
    extensions: dict[str, Any] = {}
    if target.address is not None:
        if target.scheme == "https":
            extensions["sni_hostname"] = url.raw_host.decode("ascii")  # the ASCII form a certificate names
        url = url.copy_with(host=target.address)
    return client.build_request("GET", url, headers=headers, extensions=extensions)


async def _capped(response: Any, max_bytes: int, refuse: Refuse) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise refuse("size", f"it is {int(declared)} bytes; the limit is {max_bytes}")
    parts, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise refuse("size", f"it is over the limit of {max_bytes} bytes")
        parts.append(chunk)
    return b"".join(parts)
