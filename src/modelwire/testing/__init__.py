"""Test helpers: a local HTTP server that speaks like a provider, and SSE bodies for it.

Used by modelwire's own tests, by the script that records its cassettes, and available
to users who want to test their agents against something network-shaped with no network.
"""

from .server import ProviderServer, Reply, error_reply, sse_reply
from .sse import stream_reply

__all__ = ["ProviderServer", "Reply", "error_reply", "sse_reply", "stream_reply"]
