"""A background response whose stream broke, read again from where it broke (the mixin
:class:`Resumption` of :class:`~modelwire.models.HTTPModel`)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, AsyncGenerator

from .. import errors as E
from ..event import AgentEvent
from ..protocols import ModelOptions, WireProtocol
from ._body import http_error
from .transport import HTTPTransport, Timeouts, read_chunks

__all__ = ["Resumption"]

log = logging.getLogger("modelwire.models")

_MAX_RESUMES = 5  # times one background response is read again after its stream broke


class Resumption:
    """How :class:`~modelwire.models.HTTPModel` reads the rest of a background response."""

    if TYPE_CHECKING:  # what it reads of the model
        spec: Any
        wire: WireProtocol
        transport: HTTPTransport
        timeouts: Timeouts

        def headers(self, extra: dict[str, str]) -> dict[str, str]: ...
        async def _signed(self, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]: ...
        def _mask(self, err: E.ProviderError, headers: Any, url: str | None = None) -> E.ProviderError: ...
        async def _prices_loaded(self) -> None: ...
        def _ended(self, end: AgentEvent, trace: Any) -> AgentEvent: ...
        def _remember(self, full: dict[str, Any], end: AgentEvent, opts: ModelOptions) -> None: ...

    def _resumed(
        self, adapter: Any, opts: ModelOptions, trace: Any, full: dict[str, Any], err: E.ProviderError
    ) -> AsyncGenerator[AgentEvent, None] | None:
        """The rest of a background response whose stream broke, read again from the last
        event received (the provider's cursor), into the same adapter; None when the
        protocol cannot say where (the error then stands)."""

        def where() -> str | None:
            seen = {**adapter.call_metadata, "sequence_number": getattr(adapter, "sequence", None)}
            return self.wire.resume_url(self.spec.base_url or "", self.spec.preset, seen)

        if where() is None:
            return None

        async def resume() -> AsyncGenerator[AgentEvent, None]:
            last: E.ProviderError = err
            for _ in range(_MAX_RESUMES):
                url = where()
                if url is None:
                    break
                log.debug("%s: the background stream broke (%s); resumed from %s", self, last.message, url)
                headers = await self._signed(url, self.headers(opts.extra_headers), b"")
                response = None
                try:
                    response = await self.transport.open("GET", url, headers, b"", self.timeouts.first_byte)
                    if response.status_code >= 400:
                        last = self._mask(await http_error(response, self.wire), headers, url)
                        break
                    async for event in self._read_resumed(response, adapter, opts, trace, full):
                        yield event
                    if adapter.finished:
                        return
                    last = E.IncompleteStreamError("the resumed background stream ended before its response")
                except (E.ConnectionError, E.IncompleteStreamError) as again:
                    last = again
                    if adapter.finished:
                        return
                finally:
                    if response is not None:
                        await response.aclose()
            # Not resumed: the stream ends as a broken one does, with what it had.
            if adapter.started and not adapter.finished:
                try:
                    adapter.fail(last)
                except E.ProviderError as closed:
                    for event in closed.events:
                        yield event
            if trace is not None:
                trace.end(None, error=last)
            raise last

        return resume()

    async def _read_resumed(
        self, response: Any, adapter: Any, opts: ModelOptions, trace: Any, full: dict[str, Any]
    ) -> AsyncGenerator[AgentEvent, None]:
        """A resumed background stream's events, into the adapter that read the broken one
        (closed only when its response ended)."""
        decoder = self.wire.decoder_for(adapter, self.spec.preset)
        deadline = asyncio.get_running_loop().time() + self.timeouts.first_byte
        async for chunk in read_chunks(response, self.timeouts, None, deadline):
            events = decoder.feed(chunk)
            if events and events[-1].type == "MODEL_CALL_END":
                await self._prices_loaded()
                events[-1] = self._ended(events[-1], trace)
                self._remember(full, events[-1], opts)
            for event in events:
                yield event
        if adapter.finished:
            for event in decoder.close():
                yield event
