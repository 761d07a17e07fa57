"""Serving an agent's events to browsers: a plain ASGI application, no framework.

``EventStreamApp(make_agent)`` answers ``POST /reply`` with one agent reply streamed as
server-sent events, in the encoding the client speaks:

- modelwire / AgentScope event JSON (the default): the body is ``{"input": "text"}``,
  ``{"messages": [message JSON, ...]}`` or ``{"resume": event JSON}``;
- the AG-UI event protocol: the body is AG-UI's ``RunAgentInput`` (CopilotKit, the
  ``@ag-ui/client`` ``HttpAgent``);
- the Vercel AI SDK UI message stream: the body is what ``useChat`` posts.

The request's shape picks the encoding; ``?encoding=events|ag-ui|ui-message`` says it
outright. A reply that parks on a tool needing the user's confirmation or an external
result waits on the server; the client posts the decision in its own dialect and the
same reply resumes. When the client goes away the reply is cancelled, which closes the
provider's stream too. ``GET /`` serves a chat page (no build step), ``GET /fold.mjs`` the JavaScript
fold (``appendEvent``, ``EventStreamParser``) that rebuilds messages in the browser.
The media a client names by URL is read only as the app's ``source_policy`` allows
(:mod:`modelwire.sources`): by default ``data:`` and public https URLs, never a file or an
address of the server's own.

Mount it in any ASGI server or framework (uvicorn, Starlette, FastAPI's ``app.mount``,
Django's ASGI router)::

    model = load_model("anthropic:claude-sonnet-4-5")  # one model: its connections are shared
    app = EventStreamApp(lambda: Agent("bot", model))  # an agent per reply
"""

from ._app import LOOPBACK, EventStreamApp
from ._store import Conflict, MemoryStore, Parked, RedisStore, ReplyStore, store_for
from ._turn import BadRequest

__all__ = [
    "BadRequest",
    "Conflict",
    "EventStreamApp",
    "LOOPBACK",
    "MemoryStore",
    "Parked",
    "RedisStore",
    "ReplyStore",
    "store_for",
]
