"""Test helpers for agents built on modelwire, none needing a network:

- :class:`FakeModel`: an in-process model with scripted replies, written in a real
  protocol's stream format and decoded by its real adapter (no socket);
- :class:`ProviderServer`: a real HTTP server on 127.0.0.1 that answers like a provider,
  for tests of what goes over the wire (retries, timeouts, a dropped connection);
- :func:`sse_reply`, :func:`error_reply`, :func:`stream_reply` and :mod:`.sse`'s ``body``:
  the answers it gives.

Used by modelwire's own tests and by the script that records its cassettes.
"""

from .fake import FakeModel
from .server import ProviderServer, Reply, error_reply, sse_reply
from .sse import stream_reply

__all__ = ["FakeModel", "ProviderServer", "Reply", "error_reply", "sse_reply", "stream_reply"]
