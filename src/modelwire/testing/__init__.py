"""Test helpers for agents built on modelwire, none needing a network:

- :class:`FakeModel`: an in-process model with scripted replies, written in a real
  protocol's stream format and decoded by its real adapter (no socket);
- :class:`ProviderServer`: a real HTTP server on 127.0.0.1 that answers like a provider,
  for tests of what goes over the wire (retries, timeouts, a dropped connection);
- :func:`sse_reply`, :func:`stream_reply`, :func:`answer_reply` (a whole answer),
  :func:`json_reply` (a file, a batch, a token count), :func:`error_reply` and
  :func:`body` (a streamed body in a protocol's format, from neutral blocks): the answers it
  gives, scripted with ``server.script(...)`` or made per request by ``server.respond``.

Used by modelwire's own tests and by the script that records its cassettes.
"""

from .fake import FakeModel
from .server import ProviderServer, Reply, answer_reply, error_reply, json_reply, sse_reply
from .sse import body, stream_reply

__all__ = [
    "FakeModel",
    "ProviderServer",
    "Reply",
    "answer_reply",
    "body",
    "error_reply",
    "json_reply",
    "sse_reply",
    "stream_reply",
]
