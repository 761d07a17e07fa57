"""A reply that is running: its stream as sent, kept so a client that lost its connection
can take up the rest.

The reply runs in a task of the app's, not of the connection that started it. Each frame
it writes gets an SSE ``id:`` (1, 2, ...) and goes into a bounded buffer; every client
attached to the reply follows the buffer from the id after its ``Last-Event-ID``, so a
reconnect sees no gap and no repeat. When the last client leaves, the reply goes on for
a grace period; if nobody comes back by then it is cancelled (which closes the provider's
stream). A user's Stop is an interrupt, which ends the reply at once.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Awaitable, Callable

__all__ = ["Gone", "LiveReply"]


class Gone(Exception):
    """What the client asks for is no longer in the buffer (it fell too far behind)."""


class LiveReply:
    def __init__(
        self, token: str, *, first: int = 1, max_frames: int = 20_000, max_bytes: int = 32 * 1024 * 1024
    ) -> None:
        self.token = token
        self.max_frames, self.max_bytes = max_frames, max_bytes
        self.frames: list[bytes] = []  # the oldest go in batches, past the bounds (see add)
        # Ids are unique across the parts of one reply: a continuation after the client's
        # answer starts where the part before it stopped.
        self.first = first  # the id of frames[0]
        self.next = first  # the id the next frame gets
        self.bytes = 0
        self.done = False
        self.task: asyncio.Task[None] | None = None
        self.publisher: asyncio.Task[None] | None = None  # writes the stream to a shared store
        self._checking: asyncio.Task[None] | None = None
        self.agent: Any = None
        self.reply_id: str | None = None
        self.followers = 0
        self._waiting: list[asyncio.Future[None]] = []  # followers waiting for a frame
        self._grace: asyncio.TimerHandle | None = None
        # With a shared store, a client may follow this reply on another worker: asked
        # before the reply is abandoned.
        self.followed_elsewhere: Callable[[], Awaitable[bool]] | None = None
        self._grace_seconds = 0.0

    def add(self, frames: list[bytes]) -> None:
        for frame in frames:
            framed = b"id: %d\n" % self.next + frame
            self.next += 1
            self.frames.append(framed)
            self.bytes += len(framed)
        if len(self.frames) > self.max_frames or self.bytes > self.max_bytes:
            self._drop_oldest()
        if frames:
            self._wake()

    def _drop_oldest(self) -> None:
        """The oldest frames let go until the buffer is within its bounds again."""
        drop = max(0, len(self.frames) - self.max_frames)
        dropped = sum(len(f) for f in self.frames[:drop])
        while self.bytes - dropped > self.max_bytes and drop < len(self.frames):
            dropped += len(self.frames[drop])
            drop += 1
        del self.frames[:drop]
        self.bytes -= dropped
        self.first += drop

    def finish(self) -> None:
        self.done = True
        self._wake()

    def _wake(self) -> None:
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)

    async def follow(self, after: int, joined: bool = False) -> AsyncIterator[Any]:
        """The frames after id ``after`` as ``(id, frame)`` batches (or, ``joined``, each
        batch's frames as one piece of the stream), as they come, until the reply's stream
        ends."""
        seq = after + 1
        while True:
            if seq < self.first:
                raise Gone()
            if seq < self.next:
                frames = self.frames[seq - self.first :]
                batch: Any = b"".join(frames) if joined else list(zip(range(seq, self.next), frames))
                seq = self.next
                yield batch
                continue
            if self.done:
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:  # the follower is gone: nothing to wake
                if waiter in self._waiting:
                    self._waiting.remove(waiter)
                raise

    def attach(self) -> None:
        self.followers += 1
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None

    def detach(self, grace: float) -> None:
        """A client left; with none left, the reply has ``grace`` seconds to be taken up."""
        self.followers -= 1
        if self.followers or self.done or self.task is None:
            return
        self._grace_seconds = grace
        if grace <= 0 and self.followed_elsewhere is None:
            self.task.cancel()
        else:
            self._grace = asyncio.get_running_loop().call_later(max(grace, 0.0), self._abandon)

    def _abandon(self) -> None:
        self._grace = None
        if self.followers or self.done or self.task is None:
            return
        if self.followed_elsewhere is None:
            self.task.cancel()
            return

        async def check() -> None:
            try:
                elsewhere = await self.followed_elsewhere()  # type: ignore[misc]
            except Exception:  # noqa: BLE001 - the store is unreachable: nobody can follow there
                elsewhere = False
            if self.followers or self.done or self.task is None:
                return
            if elsewhere:
                self._grace = asyncio.get_running_loop().call_later(max(self._grace_seconds, 1.0), self._abandon)
            else:
                self.task.cancel()

        self._checking = asyncio.get_running_loop().create_task(check())
