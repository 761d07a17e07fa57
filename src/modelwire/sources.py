"""Where the media of a request may come from, and on whose behalf: :class:`SourcePolicy`.

A data block may name its bytes by URL. Before a request is sent, modelwire reads a
``file:`` URL, and downloads an http(s) URL the provider cannot fetch itself, to send the
bytes inline. For a script calling a model that is what it asked for, and with no policy in
effect nothing changes. Input from outside the process (a browser posting to ``serve``, any
endpoint built on the agent) is another matter: the same reading would let a stranger have
the server send its own files (``.env``, ``~/.aws/credentials``) to the model, or fetch from
its private network and cloud metadata service (SSRF). Such input runs under a policy::

    from modelwire.sources import SourcePolicy, use_source_policy

    with use_source_policy(SourcePolicy()):  # the strict default, what serve uses
        await agent.reply(messages_from_a_client)

The default policy takes ``data:`` URLs, and ``https`` URLs whose host resolves only to
public addresses (checked after DNS resolution; the fetch connects to the very address
checked, so a second answer cannot rebind it; every redirect is checked again), up to a
size and a time limit. It never reads ``file:``. A refused source is a
:class:`~modelwire.errors.SourceRefusedError` naming the block and the rule.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterator, Literal, Sequence

__all__ = ["SourcePolicy", "TRUSTED", "use_source_policy", "current_source_policy", "not_public"]

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""``resolve(host, port)``: the addresses ``host`` stands for (the system's DNS by default)."""

URLRule = Literal["public", "hosts", "any", "none"]


@dataclass(frozen=True)
class SourcePolicy:
    """What a request's media may be read from, on behalf of input from outside the process.

    Attributes:
        files: read ``file:`` URLs (and an uploaded file's local copy). Off: a client
            could name any file the server can read.
        urls: which http(s) URLs are used, fetched or sent for the provider to fetch:
            ``"public"`` (https, every address the host resolves to public, plus
            ``hosts``), ``"hosts"`` (only ``hosts``), ``"any"`` (anything, as a script
            does), ``"none"`` (only ``data:``).
        hosts: host names the operator trusts (``media.internal``, or ``*.example.com``
            for its subdomains): used over http or https whatever they resolve to.
        references: ``"check"``: a URL the provider fetches itself passes the same rules
            (resolved here, not fetched), and a scheme other than http(s) (``gs://``,
            ``s3://``, read with the server's own cloud credentials) is refused;
            ``"pass"``: such URLs go as given.
        provider_files: send blocks naming a file held at the provider (``file_id``,
            uploaded under the server's key). Off: a client could name the server's files.
        max_bytes: the most one fetched source may hold.
        timeout: seconds one fetch may take, redirects included.
        max_redirects: redirects followed (each one checked like the first URL).
        resolver: ``resolve(host, port) -> addresses``; None: the system's resolver.
    """

    files: bool = False
    urls: URLRule = "public"
    hosts: tuple[str, ...] = ()
    references: Literal["check", "pass"] = "check"
    provider_files: bool = False
    max_bytes: int = 20 * 1024 * 1024
    timeout: float = 30.0
    max_redirects: int = 5
    resolver: Resolver | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        from .errors import ConfigError

        if self.urls not in ("public", "hosts", "any", "none"):
            raise ConfigError(f"SourcePolicy(urls={self.urls!r}) must be 'public', 'hosts', 'any' or 'none'")
        if self.references not in ("check", "pass"):
            raise ConfigError(f"SourcePolicy(references={self.references!r}) must be 'check' or 'pass'")
        if isinstance(self.hosts, str):
            raise ConfigError("SourcePolicy(hosts=...) takes a sequence of host names, not one string")
        object.__setattr__(self, "hosts", tuple(h.lower().strip().rstrip(".") for h in self.hosts))
        if self.max_bytes < 1 or self.timeout <= 0 or self.max_redirects < 0:
            raise ConfigError("SourcePolicy: max_bytes and timeout must be positive, max_redirects at least 0")

    def trusts(self, host: str) -> bool:
        """Whether ``host`` is one the operator named (``hosts``)."""
        host = host.lower().rstrip(".")
        return any(host == h or (h.startswith("*.") and host.endswith(h[1:])) for h in self.hosts)


TRUSTED = SourcePolicy(files=True, urls="any", references="pass", provider_files=True)
"""What an in-process caller gets with no policy in effect: files read, any URL fetched."""

_POLICY: contextvars.ContextVar[SourcePolicy | None] = contextvars.ContextVar("modelwire_source_policy", default=None)


def current_source_policy() -> SourcePolicy | None:
    """The policy the current task's model calls run under; None: the caller's own input."""
    return _POLICY.get()


@contextlib.contextmanager
def use_source_policy(policy: SourcePolicy | None) -> Iterator[SourcePolicy | None]:
    """Run the model calls of this block (and of the tasks it starts) under ``policy``."""
    token = _POLICY.set(policy)
    try:
        yield policy
    finally:
        _POLICY.reset(token)


@functools.cache
def _networks() -> tuple[tuple[Any, str], tuple[Any, str], Any]:
    """Networks ``ipaddress`` counts as global (or does not place) that no stranger may reach:
    Oracle Cloud's metadata service (192.0.0.192, in 192.0.0.0/24), shared CGNAT space
    (Alibaba Cloud's metadata service, 100.100.100.200), NAT64 (judged by what it carries)."""
    import ipaddress

    return (
        (ipaddress.ip_network("192.0.0.0/24"), "a reserved address"),
        (ipaddress.ip_network("100.64.0.0/10"), "a shared (CGNAT) address"),
        ipaddress.ip_network("64:ff9b::/96"),
    )


def _v6_reserved(ip: Any) -> bool:
    """IPv4-compatible (``::/96``) and IPv4-translated (``::ffff:0:0:0/96``) forms, local-use
    NAT64 (``64:ff9b:1::/48``, RFC 8215), site-local: a translator may take them to any IPv4
    address."""
    import ipaddress

    nets = ("::/96", "::ffff:0:0:0/96", "64:ff9b:1::/48")
    return bool(ip.is_site_local) or any(ip in ipaddress.ip_network(n) for n in nets)


def not_public(address: str) -> str | None:
    """What kind of address ``address`` is when it is not a public one (``"a loopback
    address"``, private, link-local, shared (CGNAT), multicast, unspecified, reserved, an
    IPv4-mapped IPv6 address); None for a public one. An IPv6 address that carries an IPv4 one (6to4,
    NAT64, Teredo) is judged by the address it carries."""
    import ipaddress

    oracle, shared, nat64 = _networks()
    ip: Any = ipaddress.ip_address(address.split("%", 1)[0])
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return "an IPv4-mapped IPv6 address"
        carried = ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if carried is None and ip in nat64:
            carried = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if carried is not None:
            inner = not_public(str(carried))
            return f"an IPv6 address carrying {inner}" if inner else None
    for kind, said in (("loopback", "a loopback"), ("link_local", "a link-local"), ("multicast", "a multicast")):
        if getattr(ip, f"is_{kind}"):
            return f"{said} address"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.version == 6 and _v6_reserved(ip):
        return "a reserved address"
    for network, kind in (oracle, shared):
        if ip.version == 4 and ip in network:
            return kind
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "a reserved address"
    return None
