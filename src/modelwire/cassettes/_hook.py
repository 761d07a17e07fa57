"""The transport hook: while a cassette is in use, every ``httpx2`` (and ``httpx``) HTTP
transport answers from the cassette, or records what the network answered.

Patching the transport classes (not one client) is what lets a cassette cover modelwire's
own models and the official SDK clients alike, whichever client object made the call.
"""

from __future__ import annotations

import contextvars

import asyncio
import contextlib
import importlib
import threading
import time
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

from ._cassette import (
    RECORD_MODES,
    Cassette,
    CassetteError,
    CassetteMismatchError,
    UnusedInteractionsError,
    request_record,
    response_record,
)
from .._secrets import sent_secrets

__all__ = ["use_cassette", "CassetteSession"]

# The cassettes in use, per task: a context variable, so concurrent tasks (and tests run
# side by side) each see their own. The transports stay patched while any is in use.
_ACTIVE: contextvars.ContextVar[tuple["CassetteSession", ...]] = contextvars.ContextVar(
    "modelwire_cassettes", default=()
)
_USERS = 0
_PATCHING = threading.Lock()
_ORIGINALS: dict[tuple[str, str], Any] = {}


class CassetteSession:
    """One cassette in use: the mode, the cassette, and what happened."""

    def __init__(self, cassette: Cassette, mode: str, *, realtime: bool, existed: bool, timing: bool = False) -> None:
        self.cassette = cassette
        self.mode = mode
        self.realtime = realtime
        self.timing = timing  # record the pieces' boundaries and times (they differ on every recording)
        self.reported = False  # the test failed already and its report says why: nothing more to raise
        self.existed = existed
        self.errors: list[CassetteError] = []
        self.recorded = 0
        self.replayed = 0
        self.secrets: set[str] = set()  # every credential a request of this session carried

    @property
    def replaying(self) -> bool:
        return self.mode == "none" or (self.mode == "once" and self.existed) or self.mode == "new_episodes"

    @property
    def recording(self) -> bool:
        return self.mode == "all" or (self.mode == "once" and not self.existed) or self.mode == "new_episodes"


def _session() -> CassetteSession | None:
    active = _ACTIVE.get()
    return active[-1] if active else None


def _request_parts(request: Any) -> tuple[str, str, list[tuple[str, str]], bytes]:
    try:
        content = request.content
    except Exception:  # noqa: BLE001 - a streaming request body not read yet
        content = request.read()
    return request.method, str(request.url), list(request.headers.items()), content


def _match(session: CassetteSession, request: Any) -> Any:
    from ..protocols import signed_schemes

    method, url, headers, content = _request_parts(request)
    session.secrets |= sent_secrets(url, headers, signed_schemes)
    record = request_record(method, url, headers, content)
    from ..models.config import CONVERSATION

    conversation = CONVERSATION.get()
    if conversation is not None:
        record["conversation"] = conversation  # kept beside the request (not matched on)
    try:
        return session.cassette.find(record), record
    except CassetteMismatchError as exc:
        if session.recording:
            return None, record
        session.errors.append(exc)
        raise


class _Replay:
    """A recorded body, piece by piece (at its recorded pace when ``realtime``)."""

    def __init__(self, pieces: list[tuple[float, bytes]], realtime: bool) -> None:
        self.pieces = pieces
        self.realtime = realtime


class _ReplayAsync(_Replay):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        last = 0.0
        for at, piece in self.pieces:
            if self.realtime and at > last:
                await asyncio.sleep(at - last)
            last = at
            yield piece

    async def aclose(self) -> None:
        pass


class _ReplaySync(_Replay):
    def __iter__(self) -> Iterator[bytes]:
        last = 0.0
        for at, piece in self.pieces:
            if self.realtime and at > last:
                time.sleep(at - last)
            last = at
            yield piece

    def close(self) -> None:
        pass


class _Record:
    """A live body passed on piece by piece, each kept with its time; ``done`` gets them all
    when the body ends or is closed."""

    def __init__(self, inner: Any, done: Any) -> None:
        self.inner = inner
        self.done = done
        self.pieces: list[tuple[float, bytes]] = []
        self.t0: float | None = None

    def _keep(self, piece: bytes) -> None:
        now = time.monotonic()
        self.t0 = self.t0 if self.t0 is not None else now
        self.pieces.append((now - self.t0, piece))


class _RecordAsync(_Record):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self.inner:
            self._keep(piece)
            yield piece
        self.done(self.pieces)

    async def aclose(self) -> None:
        await self.inner.aclose()
        self.done(self.pieces)


class _RecordSync(_Record):
    def __iter__(self) -> Iterator[bytes]:
        for piece in self.inner:
            self._keep(piece)
            yield piece
        self.done(self.pieces)

    def close(self) -> None:
        self.inner.close()
        self.done(self.pieces)


def _recorder(session: CassetteSession, record: dict[str, Any], response: Any) -> Any:
    """What to do once a recorded body has ended: add the interaction to the cassette (once)."""
    saved: list[bool] = []

    def done(pieces: list[tuple[float, bytes]]) -> None:
        if saved:
            return
        saved.append(True)
        session.cassette.add(
            record, response_record(response.status_code, response.headers.items(), pieces, keep_chunks=session.timing)
        )
        session.recorded += 1

    return done


def _patch(module_name: str) -> None:
    """Route the HTTP client's transports (httpx or httpx2) through the cassette in use."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return

    async_cls = module.AsyncHTTPTransport
    sync_cls = module.HTTPTransport
    if getattr(async_cls.handle_async_request, "_cassette_hook", False):
        return  # patched already: wrapping again would record every interaction twice
    original_async = async_cls.handle_async_request
    original_sync = sync_cls.handle_request
    _ORIGINALS[(module_name, "async")] = original_async
    _ORIGINALS[(module_name, "sync")] = original_sync
    # The client reads a body only from its own stream classes.
    replay_async = type("ReplayAsync", (_ReplayAsync, module.AsyncByteStream), {})
    replay_sync = type("ReplaySync", (_ReplaySync, module.SyncByteStream), {})
    record_async = type("RecordAsync", (_RecordAsync, module.AsyncByteStream), {})
    record_sync = type("RecordSync", (_RecordSync, module.SyncByteStream), {})

    def replayed(interaction: Any, request: Any, stream_cls: Any, session: CassetteSession) -> Any:
        session.replayed += 1
        r = interaction.response
        return module.Response(
            r["status"],
            headers=r.get("headers", {}),
            stream=stream_cls(interaction.pieces(), session.realtime),
            request=request,
        )

    async def handle_async_request(self: Any, request: Any) -> Any:
        session = _session()
        if session is None:
            return await original_async(self, request)
        interaction, record = _match(session, request)
        if interaction is not None:
            return replayed(interaction, request, replay_async, session)
        response = await original_async(self, request)
        response.stream = record_async(response.stream, _recorder(session, record, response))
        return response

    def handle_request(self: Any, request: Any) -> Any:
        session = _session()
        if session is None:
            return original_sync(self, request)
        interaction, record = _match(session, request)
        if interaction is not None:
            return replayed(interaction, request, replay_sync, session)
        response = original_sync(self, request)
        response.stream = record_sync(response.stream, _recorder(session, record, response))
        return response

    handle_async_request._cassette_hook = handle_request._cassette_hook = True  # type: ignore[attr-defined]
    async_cls.handle_async_request = handle_async_request
    sync_cls.handle_request = handle_request


def _unpatch(module_name: str) -> None:
    if (module_name, "async") not in _ORIGINALS:
        return
    module = importlib.import_module(module_name)
    module.AsyncHTTPTransport.handle_async_request = _ORIGINALS.pop((module_name, "async"))
    module.HTTPTransport.handle_request = _ORIGINALS.pop((module_name, "sync"))


def _open(
    path: Path, existed: bool, record_mode: str, ignore_fields: tuple[str, ...] | list[str], notes: str
) -> Cassette:
    """The cassette a block uses: the file's, or a new one to record into."""
    if existed and record_mode != "all":
        cassette = Cassette.load(path, ignore_fields)
    elif record_mode == "none":
        raise CassetteError(
            f"no cassette at {path}; record it first (record_mode='once', or pytest --record-mode=once)"
        )
    else:
        cassette = Cassette(path, [], notes, tuple(ignore_fields))
        if existed:  # record_mode "all": replaces the file, unless another writer changed it meanwhile
            cassette._on_disk = path.read_text(encoding="utf-8", errors="replace")
    if notes:
        cassette.notes = notes
    return cassette


def _reset(var: Any, token: Any, fallback: Any) -> None:
    """A context variable back to what it was (to ``fallback`` when left in another context)."""
    if token is None:
        return
    try:
        var.reset(token)
    except ValueError:
        var.set(fallback)


def _hold() -> None:
    """One more cassette in use: the HTTP clients are patched while any is (cassettes
    opened from several threads at once count under one lock)."""
    global _USERS
    with _PATCHING:
        if not _USERS:
            _patch("httpx2")
            _patch("httpx")
        _USERS += 1


def _release() -> None:
    global _USERS
    with _PATCHING:
        _USERS -= 1
        if not _USERS:
            _unpatch("httpx2")
            _unpatch("httpx")


def _check_played(session: CassetteSession, allow_unused: bool) -> None:
    """A block that ended well still fails on a request that matched nothing, or on
    recorded interactions it never played (unless ``allow_unused``, or new episodes)."""
    if session.errors:
        raise session.errors[0]
    cassette = session.cassette
    unused = cassette.unused()
    if unused and not allow_unused and session.replaying and session.mode != "new_episodes":
        listed = "\n".join(f"  {i.request['method']} {i.request['url']}" for i in unused[:10])
        raise UnusedInteractionsError(
            f"{len(unused)} recorded interaction(s) in {cassette.path} were never played:\n{listed}"
        )


@contextlib.contextmanager
def use_cassette(
    path: str | Path,
    record_mode: str = "none",
    *,
    ignore_fields: tuple[str, ...] | list[str] = (),
    realtime: bool = False,
    allow_unused: bool = False,
    secrets: tuple[str, ...] | list[str] = (),
    notes: str = "",
    timing: bool = False,
) -> Iterator[CassetteSession]:
    """Replay (or record) the HTTP traffic inside the ``with`` block.

    ``record_mode``: ``none`` replays only (the default, and what CI uses); ``once`` records
    when the file does not exist yet and replays otherwise; ``new_episodes`` replays what
    matches and records the rest; ``all`` records everything anew.

    Requests match on method, URL (without secret query parameters) and canonical JSON
    body, minus ``ignore_fields`` (dotted paths, ``*`` for any key). A request that matches
    nothing fails with a diff against the nearest recorded one; interactions never played
    fail the block (unless ``allow_unused``). ``timing=True`` records the pieces of each
    body with their times, which ``realtime`` replays; without it a recording holds what
    was said only, so recording an unchanged conversation again leaves the file as it was.
    """
    if record_mode not in RECORD_MODES:
        raise CassetteError(f"record_mode is one of {RECORD_MODES}, not {record_mode!r}")
    path = Path(path)
    existed = path.is_file()
    cassette = _open(path, existed, record_mode, ignore_fields, notes)
    session = CassetteSession(cassette, record_mode, realtime=realtime, existed=existed, timing=timing)
    _hold()
    token = _ACTIVE.set((*_ACTIVE.get(), session))
    from ..models.config import IN_CASSETTE, REPLAYING

    # Replaying only (no request can leave): a model loaded inside needs no API key.
    replay_token = REPLAYING.set(True) if session.replaying and not session.recording else None
    cassette_token = IN_CASSETTE.set(True)
    failed = False
    try:
        yield session
    except BaseException:
        failed = True
        raise
    finally:
        try:
            _ACTIVE.reset(token)
        except ValueError:  # left in another context than it was entered: drop it there
            _ACTIVE.set(tuple(s for s in _ACTIVE.get() if s is not session))
        _reset(REPLAYING, replay_token, False)
        _reset(IN_CASSETTE, cassette_token, False)
        _release()
        if session.recording and session.recorded:
            from ._drift import provenance_after_recording

            cassette.provenance = provenance_after_recording(cassette)
            cassette.save({*secrets, *session.secrets})
        if not failed and not session.reported:
            _check_played(session, allow_unused)
