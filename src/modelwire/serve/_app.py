"""The ASGI application: routing, request bodies, parked replies, and the stream pump."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import unquote, urlsplit

from ..agent import Agent, ResumeEvent
from ..event import UserInterruptEvent
from ..message import Msg
from ..sources import SourcePolicy, use_source_policy
from ._asgi import Receive, Scope, Send, _answer, _json, _lifespan, _path, _preflight, _relay
from ._live import Gone, LiveReply
from ._request import DIALECTS, _dialect, _json_body, _read, _reply_of, _resume_event, _until_runner_gone
from ._store import Conflict, MemoryStore, Parked, ReplyStore, StoreUnavailable, key_of
from ._turn import BadRequest, Encoder, Turn

HERE = Path(__file__).parent
STATIC = {
    "/": (HERE / "page.html", "text/html; charset=utf-8"),
    "/fold.mjs": (HERE.parent / "js" / "fold.mjs", "text/javascript; charset=utf-8"),
}
MAX_BODY = 16 * 1024 * 1024


_log = logging.getLogger("modelwire.serve")


def _hashes(html: str, tag: str) -> str:
    """CSP source expressions for the page's own inline ``<tag>`` elements."""
    found = re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", html, flags=re.S)
    return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()}'" for text in found)


LOOPBACK = ("localhost", "127.0.0.1", "::1")


class EventStreamApp:
    """An ASGI application streaming one agent reply per request (see the package doc).

    ``make_agent()`` gives a fresh agent for each new reply; ``wrap_reply`` (optional) is a
    context-manager factory entered around each reply, for example a cassette replay;
    ``history=False`` answers each input alone, without the conversation posted before it
    (a replay of one recorded exchange); ``page_config`` is what the chat page reads.

    ``source_policy`` is what the media a client sends may be read from (see
    :mod:`modelwire.sources`): by default ``data:`` and public https URLs only, never a file
    of the server's or an address of its network. A source it refuses ends the reply with a
    ``SourceRefusedError`` the client sees. None: the client's URLs are read as a script's
    are (only for a server that trusts every client as itself)."""

    def __init__(
        self,
        make_agent: Callable[[], Any],
        *,
        path: str = "/reply",
        max_body: int = MAX_BODY,
        store: ReplyStore | None = None,
        wrap_reply: Callable[[], Any] | None = None,
        history: bool = True,
        page_config: dict[str, Any] | None = None,
        allowed_hosts: Iterable[str] = LOOPBACK,
        allowed_origins: Iterable[str] = (),
        auth_token: str | None = None,
        image_origins: Iterable[str] = (),
        grace: float = 30.0,
        linger: float = 60.0,
        body_timeout: float = 30.0,
        source_policy: SourcePolicy | None = SourcePolicy(),
    ) -> None:
        if source_policy is not None and not isinstance(source_policy, SourcePolicy):
            from ..errors import ConfigError

            raise ConfigError(f"source_policy={source_policy!r} must be a modelwire.sources.SourcePolicy or None")
        self.make_agent = make_agent
        self.source_policy = source_policy
        self.path = path
        self.max_body = max_body
        # A request body must arrive whole within this many seconds: a client that trickles
        # it holds a connection (and a file descriptor) for nothing.
        self.body_timeout = body_timeout
        self.store: ReplyStore = store if store is not None else MemoryStore()
        self.wrap_reply = wrap_reply
        self.history = history
        self.page_config: dict[str, Any] = page_config or {}
        # Host names this app answers to ("*": any): a page on another name that resolves
        # here (DNS rebinding) is refused.
        self.allowed_hosts: set[str] = {h.lower().strip("[]") for h in allowed_hosts}
        # Origins other than the app's own whose pages may call it (CORS); "*": any.
        self.allowed_origins: set[str] = {o.rstrip("/").lower() for o in allowed_origins}
        self.auth_token = auth_token
        # A reply whose client left goes on for ``grace`` seconds, waiting to be taken up
        # again; a finished one stays ``linger`` seconds for a client that reconnects late.
        self.grace: float = grace
        self.linger: float = linger
        self.live: dict[str, LiveReply] = {}  # running replies of this worker, by token hash
        self.chats: dict[str, str] = {}  # useChat chat id -> the token hash of its latest reply
        self.image_origins: tuple[str, ...] = tuple(o.rstrip("/") for o in image_origins)
        page = STATIC["/"][0].read_text(encoding="utf-8")
        images = " ".join(("data:", *self.image_origins))
        self.csp: str = (
            f"default-src 'self'; script-src 'self' {_hashes(page, 'script')}; style-src 'self' "
            f"{_hashes(page, 'style')}; "
            f"img-src 'self' {images}; connect-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            return await _lifespan(receive, send)
        if scope["type"] != "http":
            return
        method, path = scope["method"], _path(scope)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        host = headers.get("host", "")
        if not self._host_allowed(host):
            return await _json(
                send,
                403,
                {
                    "error": (
                        f"this server does not answer to the host name {host.rsplit(':', 1)[0][:100]!r} (allowed_hosts)"
                    )
                },
            )
        origin = headers.get("origin")
        cors = self._cors(origin, host)
        if path == self.path and method == "OPTIONS":
            return await _preflight(send, origin, cors)
        chat_stream = path.startswith(self.path + "/") and path.endswith("/stream") and method == "GET"
        if path == self.path and method == "GET" or chat_stream:
            chat = unquote(path[len(self.path) + 1 : -len("/stream")]) if chat_stream else None
            return await self._take_up(headers, receive, send, origin, cors, chat)
        if path == self.path and method == "POST":
            if origin is not None and cors is None:
                # A page elsewhere (a no-cors fetch needs no preflight): it must not make the agent run.
                return await _json(send, 403, {"error": "this origin may not call this server (allowed_origins)"})
            return await self._post(scope, headers, receive, send, cors)
        return await self._page(path, method, send)

    async def _take_up(
        self,
        headers: dict[str, str],
        receive: Receive,
        send: Send,
        origin: str | None,
        cors: list[tuple[bytes, bytes]] | None,
        chat: str | None,
    ) -> None:
        """A client taking up a running reply's stream again after a lost connection (from an
        allowed origin, with the token)."""
        if origin is not None and cors is None:
            return await _json(send, 403, {"error": "this origin may not call this server (allowed_origins)"})
        if not self._authorized(headers):
            return await _json(
                send,
                401,
                {"error": "this server wants 'authorization: Bearer <token>'"},
                [*(cors or []), (b"www-authenticate", b"Bearer")],
            )
        return await self._reconnect(headers, receive, send, cors or [], chat)

    async def _post(
        self,
        scope: Scope,
        headers: dict[str, str],
        receive: Receive,
        send: Send,
        cors: list[tuple[bytes, bytes]] | None,
    ) -> None:
        """A turn POSTed from an allowed origin: checked, read in its dialect, and answered
        with the reply's stream."""
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return await _json(send, 415, {"error": "POST a JSON body with content-type: application/json"}, cors)
        if not self._authorized(headers):
            return await _json(
                send,
                401,
                {"error": "this server wants 'authorization: Bearer <token>'"},
                [*(cors or []), (b"www-authenticate", b"Bearer")],
            )
        try:
            data = _json_body(await self._body(receive))
            dialect = _dialect(data, scope.get("query_string", b"").decode("latin-1"))
            read, encoder_cls = DIALECTS[dialect]
            turn = _read(read, dialect, data)
            if self._stopped(turn):
                return await _answer(send, 204, "text/plain", b"", cors)
            agent, rid, event, token, first = await self._agent_for(turn)
        except BadRequest as exc:
            return await _json(send, 400, {"error": str(exc)}, cors)
        except Conflict as exc:
            return await _json(send, 409, {"error": str(exc)}, cors)
        except BodyTimeout as exc:
            return await _json(send, 408, {"error": str(exc)}, [*(cors or []), (b"connection", b"close")])
        except StoreUnavailable as exc:
            _log.warning("%s", exc)
            return await _json(send, 503, {"error": str(exc)}, [*(cors or []), (b"retry-after", b"1")])
        except Exception as exc:  # noqa: BLE001 - make_agent failed: say so, not a bare 500
            _log.error("the agent could not be made: %s: %s", type(exc).__name__, exc)
            return await _json(send, 500, {"error": f"the agent could not be made: {type(exc).__name__}: {exc}"}, cors)
        enc = encoder_cls(turn, getattr(agent, "session_id", ""))
        return await self._stream(agent, turn, rid, event, token, enc, receive, send, cors or [], dialect, first)

    async def _page(self, path: str, method: str, send: Send) -> None:
        """The chat page, its files and its configuration; anything else is 405 or 404."""
        if path == "/config.json" and method == "GET":
            # Relative to the page, so the page works wherever the app is mounted.
            config = {
                "path": self.path.lstrip("/"),
                "image_origins": list(self.image_origins),
                "auth": self.auth_token is not None,
                **self.page_config,
            }
            return await _json(send, 200, config)
        if path in STATIC and method in ("GET", "HEAD"):
            file, content_type = STATIC[path]
            body = file.read_bytes()
            page = (
                [(b"content-security-policy", self.csp.encode()), (b"x-frame-options", b"DENY")] if path == "/" else []
            )
            return await _answer(send, 200, content_type, body if method == "GET" else b"", page)
        if path in STATIC or path == self.path:
            return await _json(send, 405, {"error": f"{method} is not allowed on {path}"})
        await _json(send, 404, {"error": f"nothing at {path}"})

    def _authorized(self, headers: dict[str, str]) -> bool:
        return self.auth_token is None or hmac.compare_digest(
            headers.get("authorization", "").encode(), f"Bearer {self.auth_token}".encode()
        )

    def _stopped(self, turn: Turn) -> bool:
        """A user's Stop for a reply running here: interrupted at once (it ends with
        ``interrupted`` events, which its clients get); the answer has no body."""
        resume = turn.resume
        if resume is None or not resume.interrupt or not resume.token:
            return False
        live = self.live.get(key_of(resume.token))
        if live is None or live.done or (resume.reply_id is not None and resume.reply_id != live.reply_id):
            return False
        live.agent.interrupt()
        return True

    async def _reconnect(
        self,
        headers: dict[str, str],
        receive: Receive,
        send: Send,
        cors: list[tuple[bytes, bytes]],
        chat: str | None = None,
    ) -> None:
        """``Last-Event-ID`` and the reply's resume token (``x-modelwire-resume-token``): the
        rest of its stream, with no gap and no repeat. 204 when no reply of that token runs
        or lingers here (one answer for every miss). ``chat``: useChat's resume route, which
        names its chat and replays the reply's stream from its start (the token is still
        needed: a chat id is no credential)."""
        token = headers.get("x-modelwire-resume-token", "")
        key = key_of(token) if token else None
        if chat is not None and (key is None or not hmac.compare_digest(self.chats.get(chat, ""), key)):
            key = None
        live = self.live.get(key) if key else None
        try:
            after = int(headers.get("last-event-id") or 0)
        except ValueError:
            after = -1
        if live is None and token and after >= 0 and getattr(self.store, "shared", False):
            return await self._follow_elsewhere(token, after, receive, send, cors)
        if live is None or after < 0 or after >= live.next:
            return await _answer(send, 204, "text/plain", b"", cors)
        if after + 1 < live.first:
            return await _json(
                send, 409, {"error": "that part of the reply is no longer kept (the client fell too far behind)"}, cors
            )
        # A client that falls behind the buffer while it follows sees its stream end there.
        await self._follow(live, after, receive, send, cors, [])

    async def _follow_elsewhere(
        self, token: str, after: int, receive: Receive, send: Send, cors: list[tuple[bytes, bytes]]
    ) -> None:
        """A reply running on another worker: its stream as that worker writes it to the store."""
        try:
            frames = await self.store.follow(token, after)  # type: ignore[attr-defined]
        except Gone:
            return await _json(
                send, 409, {"error": "that part of the reply is no longer kept (the client fell too far behind)"}, cors
            )
        except StoreUnavailable as exc:
            return await _json(send, 503, {"error": str(exc)}, [*cors, (b"retry-after", b"1")])
        if frames is None:
            return await _answer(send, 204, "text/plain", b"", cors)
        await _relay(_until_runner_gone(frames), receive, send, cors)

    def _host_allowed(self, host: str) -> bool:
        if "*" in self.allowed_hosts or not host:
            return True  # no Host at all is no browser's request (browsers always send it)
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name.lower().strip("[]") in self.allowed_hosts

    def _cors(self, origin: str | None, host: str) -> list[tuple[bytes, bytes]] | None:
        """The CORS headers for a request from ``origin``, or None when that origin may not
        call the app. The app's own origin needs none; no Origin (curl, a server) neither."""
        if origin is None:
            return []
        netloc = urlsplit(origin).netloc.lower()
        if netloc and netloc == host.lower():
            return []  # same origin
        if origin.rstrip("/").lower() in self.allowed_origins or "*" in self.allowed_origins:
            return [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"vary", b"Origin"),
                (b"access-control-expose-headers", b"x-vercel-ai-ui-message-stream"),
            ]
        return None

    async def _body(self, receive: Receive) -> bytes:
        chunks, size = [], 0
        try:
            async with asyncio.timeout(self.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise BadRequest("the client went away before its request ended")
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.max_body:
                        raise BadRequest(f"the request body is over {self.max_body} bytes")
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            raise BodyTimeout(f"the request body did not arrive within {self.body_timeout:g} s") from None

    async def _agent_for(self, turn: Turn) -> tuple[Any, str | None, ResumeEvent | None, str, int]:
        """The agent to run, and for a resumed reply its id and the event resuming it;
        the reply's resume token (a new reply draws one, a resumed one keeps its own).

        A parked reply is data: the factory makes a fresh agent and the parked state
        (the conversation, the reply and the calls that wait) is loaded into it, so any
        worker can resume any reply."""
        if turn.resume is None:
            agent = self.make_agent()
            if turn.history and self.history:
                agent.context = list(turn.history)
            return agent, None, None, secrets.token_urlsafe(32), 1
        token = turn.resume.token
        parked = await self.store.take(token, turn.resume.reply_id)
        assert token is not None
        try:
            agent = self.make_agent()
            agent.load_state_dict(parked.agent_state())
            event = _resume_event(agent, parked.reply_id, turn.resume)
        except (BadRequest, Conflict):
            await self.store.put(token, parked)  # a bad answer leaves the reply waiting, no younger
            raise
        except Exception:
            await self.store.put(token, parked)  # the factory failed: the reply still waits
            raise
        return agent, parked.reply_id, event, token, parked.next_id

    async def _stream(
        self,
        agent: Any,
        turn: Turn,
        rid: str | None,
        event: ResumeEvent | None,
        token: str,
        enc: Encoder,
        receive: Receive,
        send: Send,
        cors: list[tuple[bytes, bytes]],
        dialect: str = "events",
        first: int = 1,
    ) -> None:
        """Start the reply in a task of the app's (a client that leaves does not end it at
        once) and follow its stream on this connection. A continuation (``first`` > 1)
        numbers its frames on from where the part before it stopped."""
        live = LiveReply(token, first=first)
        live.agent, live.reply_id = agent, rid
        key = key_of(token)
        self.live[key] = live
        if rid is not None:
            enc.msg = _reply_of(agent, rid)
        chat = turn.info.get("chat_id")
        if isinstance(chat, str):
            self.chats[chat] = key
        live.task = asyncio.create_task(self._run(live, agent, turn, event, enc))
        live.task.add_done_callback(
            lambda _: asyncio.get_running_loop().call_later(self.linger, self._forget, key, live, chat)
        )
        if getattr(self.store, "shared", False):
            # Other workers can take the stream up: it goes to the store as it is written.
            live.followed_elsewhere = lambda: self.store.seen(token)  # type: ignore[attr-defined]
            live.publisher = asyncio.create_task(self._publish(live, dialect))
        await self._follow(live, live.first - 1, receive, send, cors, enc.headers)

    async def _publish(self, live: LiveReply, dialect: str) -> None:
        """The reply's stream written to the shared store as it is made, with a beat every
        ``store.beat`` seconds while it runs: a client following it on another worker learns
        within seconds that this worker died."""
        store: Any = self.store
        beating = asyncio.create_task(self._beat(live))
        try:
            about = None
            async for batch in live.follow(live.first - 1):
                if about is None and live.reply_id is not None:
                    about = (dialect, live.reply_id)
                    await store.publish(live.token, batch, about=about)
                else:
                    await store.publish(live.token, batch)
            await store.publish(live.token, [], end=True)
        except Exception as exc:  # noqa: BLE001 - the local stream goes on; only other workers lose it
            _log.warning(
                "reply %s: its stream could not be written to the store (%s: %s)",
                live.reply_id,
                type(exc).__name__,
                exc,
            )
        finally:
            beating.cancel()

    async def _beat(self, live: LiveReply) -> None:
        store: Any = self.store
        while not live.done:
            try:
                await store.alive(live.token)
            except Exception as exc:  # noqa: BLE001 - a missed beat; the next one may get through
                _log.debug("reply %s: a beat was not written (%s)", live.reply_id, type(exc).__name__)
            await asyncio.sleep(store.beat)

    def _forget(self, key: str, live: LiveReply, chat: str | None) -> None:
        if self.live.get(key) is live:
            del self.live[key]
            if chat is not None and self.chats.get(chat) == key:
                del self.chats[chat]

    async def _run(self, live: LiveReply, agent: Any, turn: Turn, event: ResumeEvent | None, enc: Encoder) -> None:
        started = time.monotonic()
        outcome: dict[str, Any] = {"outcome": "cancelled"}
        try:
            with use_source_policy(self.source_policy):  # the client's media, read as the policy allows
                if self.wrap_reply is None:
                    await self._pump(live, agent, turn, event, enc, outcome)
                else:
                    with self.wrap_reply():
                        await self._pump(live, agent, turn, event, enc, outcome)
        except asyncio.CancelledError:
            self._outcome(agent, live.reply_id, enc.msg, outcome, None, started)
            live.finish()
            raise
        except Exception as err:  # noqa: BLE001 - seen in the stream rather than a silent cut
            # The agent ends a reply with REPLY_END(error) for provider errors; anything
            # else is a bug worth seeing in the stream.
            self._outcome(agent, live.reply_id, enc.msg, outcome, err, started)
            enc.reply_id = live.reply_id  # every frame names its reply
            live.add(enc.error(str(err) if isinstance(err, ParkError) else f"{type(err).__name__}: {err}") + enc.done())
            live.finish()
            return
        else:
            self._outcome(agent, live.reply_id, enc.msg, outcome, None, started)
            live.add(enc.done())
            live.finish()
        finally:
            # Let go of what a finished reply no longer needs while its frames linger for
            # clients that reconnect late: the agent (its whole conversation) and the
            # encoder's copy of the reply.
            live.agent = None
            enc.msg = None

    async def _pump(
        self, live: LiveReply, agent: Any, turn: Turn, event: ResumeEvent | None, enc: Encoder, outcome: dict[str, Any]
    ) -> None:
        """The reply's events into its stream; the reply's error travels in it (REPLY_END,
        RUN_ERROR, an error part). A reply that ends waiting for the client parks."""
        quiet: dict[str, Any] = {"raise_errors": False} if isinstance(agent, Agent) else {}
        stream = (
            agent.reply_stream(event=event, **quiet) if event is not None else agent.reply_stream(turn.inputs, **quiet)
        )
        held: list[bytes] = []  # the question to the user, sent once the reply could park
        async for ev in stream:
            if ev.type == "REPLY_START":
                live.reply_id = ev.reply_id
                enc.msg = _reply_of(agent, ev.reply_id)
                live.add(enc.event(ev) + enc.token(live.token))  # the client can reconnect from here on
            elif ev.type in _ASKING or held:
                held += enc.event(ev)
            else:
                live.add(enc.event(ev))
        rid = live.reply_id
        calls = agent.pending_calls(rid) if rid is not None and hasattr(agent, "pending_calls") else []
        if rid is not None and calls and enc.msg is not None and enc.msg.finished_reason is None:
            await self._park(live, agent, rid, enc, held + enc.parked(calls, live.token))
            outcome["outcome"] = "parked"
        else:
            live.add(held)
            if enc.msg is not None:
                outcome["outcome"] = enc.msg.finished_reason or "ended"

    async def _park(self, live: LiveReply, agent: Any, rid: str, enc: Encoder, asking: list[bytes]) -> None:
        """The reply stored to wait for its answer, then the question sent (``asking``: the
        frames that ask). A reply that cannot be stored asks nothing: no one could take the
        answer. It is stopped (its calls answered as interrupted) and ends with the error."""
        state = json.dumps(agent.state_dict(), ensure_ascii=False, separators=(",", ":"))
        try:
            await self.store.put(live.token, Parked(rid, state, time.time(), live.next + len(asking)))
        except Exception as exc:
            async for ev in agent.reply_stream(event=UserInterruptEvent(reply_id=rid)):
                live.add(enc.event(ev))
            raise ParkError(f"the reply could not wait for an answer ({exc})") from exc
        live.add(asking)

    async def _follow(
        self,
        live: LiveReply,
        after: int,
        receive: Receive,
        send: Send,
        cors: list[tuple[bytes, bytes]],
        extra: list[tuple[bytes, bytes]],
    ) -> None:
        """Send the reply's frames after id ``after`` on this connection until its stream
        ends or the client leaves (then the reply has its grace period)."""

        live.attach()
        try:
            await _relay(live.follow(after, joined=True), receive, send, [*cors, *extra])
        finally:
            live.detach(self.grace)

    def _outcome(
        self,
        agent: Any,
        rid: str | None,
        msg: Msg | None,
        outcome: dict[str, Any],
        err: BaseException | None,
        started: float,
    ) -> None:
        """One log line per reply (never content, never a secret): id, model, how it
        ended, the error's type, tokens, seconds."""
        what = outcome["outcome"]
        if err is not None:
            what = f"failed ({type(err).__name__})"
        error = msg.error.type if msg is not None and msg.error is not None else "-"
        usage = msg.usage if msg is not None else None
        tokens = f"{usage.input_tokens}/{usage.output_tokens}" if usage else "-"
        model = getattr(getattr(agent, "model", None), "name", None) or type(getattr(agent, "model", None)).__name__
        level = logging.WARNING if what.startswith(("failed", "error")) or error != "-" else logging.INFO
        _log.log(
            level,
            "reply %s model=%s outcome=%s error=%s tokens=%s seconds=%.2f",
            rid or "-",
            model,
            what,
            error,
            tokens,
            time.monotonic() - started,
        )


# The events that ask the client a question a parked reply waits for.
_ASKING = frozenset({"REQUIRE_USER_CONFIRM", "REQUIRE_EXTERNAL_EXECUTION"})


class ParkError(Exception):
    """A reply that had to wait for an answer could not be stored (the store is down, the
    reply too large for it)."""


class BodyTimeout(Exception):
    """A request body that did not arrive whole within the app's ``body_timeout``."""
