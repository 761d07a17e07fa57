"""The HTTP stack's log lines, with the credentials of the request being sent masked.

httpcore2 (and httpcore) log at DEBUG every response's headers as they came
(``receive_response_headers.complete return_value=(b'HTTP/1.1', 401, b'Unauthorized',
[(b'x-echo', b'sk-...')])``), and httpx2 (and httpx) log at INFO every request's URL, a
``key=`` query parameter included: a server or gateway that echoes a key would put it in
whatever log the application keeps. A filter on each of those loggers masks, in every
record, the credentials of the request this task is sending (see :mod:`modelwire._secrets`;
a long enough piece of one too). The transport names the request in :data:`SENDING` before
it sends; nothing else runs unless a record is logged.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any, Mapping

__all__ = ["SENDING", "CredentialFilter", "LOGGERS", "install"]

# The request this task is sending or reading the answer of: (url, headers).
SENDING: contextvars.ContextVar[tuple[str, Mapping[str, str]] | None] = contextvars.ContextVar(
    "modelwire_sending", default=None
)

# Each logger must carry the filter itself: a logger's filters see only the records logged
# through it, not those its children pass up. The names are the ones httpcore2 2.17 /
# httpx2 2.17 (and httpcore 1.0 / httpx 0.28, for a client passed in) create; hpack's log
# the headers it encodes and decodes where h2 is installed. A test walks the loggers the
# installed packages created and fails on one without the filter.
LOGGERS = (
    "httpx2",
    "httpx",
    *(
        f"{core}.{part}"
        for core in ("httpcore2", "httpcore")
        for part in ("connection", "http11", "http2", "proxy", "socks")
    ),
    "hpack.hpack",
    "hpack.table",
    "modelwire.models",
)


class CredentialFilter(logging.Filter):
    """Masks the credentials of :data:`SENDING`'s request in each record's message."""

    def filter(self, record: logging.LogRecord) -> bool:
        sending = SENDING.get()
        if sending is None:
            return True
        from .._secrets import masked, sent_secrets
        from ..protocols import signed_schemes

        url, headers = sending
        secrets = sent_secrets(url, headers.items(), signed_schemes)
        if not secrets:
            return True
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is logging's to report
            return True
        clean = masked(text, secrets)
        if clean != text:
            record.msg, record.args = clean, None
        return True


_FILTER = CredentialFilter()
_installed: list[bool] = []


def install(names: Any = LOGGERS) -> None:
    """The filter on each of ``names`` (once per logger; the default names once per process)."""
    if names is LOGGERS:
        if _installed:
            return
        _installed.append(True)
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
