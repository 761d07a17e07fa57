"""What follows a failed request of a model call: the error's secrets masked, a rule the
provider stated learned, where it came from explained, and the call sent again, resumed
or ended with the error (the mixin :class:`Failures` of
:class:`~modelwire.models.HTTPModel`)."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING, Any, AsyncGenerator, Awaitable, Callable

from .. import errors as E
from ..event import AgentEvent
from ._body import request_id_of
from ._call import Attempt, Call

__all__ = ["AGAIN", "Failures"]

log = logging.getLogger("modelwire.models")

AGAIN = object()  # a failed request is sent again
_CALL_BOUNDS = frozenset({"MODEL_CALL_START", "MODEL_CALL_END"})


def _answer_began(*batches: list[AgentEvent]) -> bool:
    """Whether the provider had begun its answer (a block) before an error: such a call is
    never sent again, whether the error came in a piece of its own or in the piece that
    also held the answer's start (a body read a socket read at a time holds several)."""
    return any(event.type not in _CALL_BOUNDS for batch in batches for event in batch)


def _say_wait(err: E.ProviderError, why: str) -> None:
    """A rate limit's error says how long the provider asked to wait (its ``retry-after``, or
    the wait its body names), and, where modelwire did not wait, why; said once."""
    if not isinstance(err, E.RateLimitError) or getattr(err, "_wait_said", False):
        return
    wait = getattr(err, "retry_after", None)
    if wait is None and err.rate_limits:
        wait = err.rate_limits.get("retry_after")
    if wait is None:
        return
    err._wait_said = True  # type: ignore[attr-defined]
    err.message += f" (the provider asks to wait {float(wait):g} s" + (f"; {why})" if why else ")")


# A refusal of the model id itself where it is not a 404: the provider's error type or code
# ("invalid_model", "model_not_found"), else its words ("Invalid model: magistral-medium-2509",
# "The model `x` does not exist", "Model Not Exist", "The provided model identifier is invalid").
_MODEL_TYPE = re.compile(r"model_?not_?(?:found|exist)|(?:invalid|unknown)_?model\b")
_MODEL_WORDS = re.compile(
    r"\b(?:invalid|unknown) model\b|\bmodel\b.{0,80}?\b(?:not found|(?:does )?not exist|is invalid|is not valid)"
)


def _refuses_the_model(err: E.ProviderError) -> bool:
    """Whether ``err`` says the provider does not serve the model asked for (a 400 about a bad
    schema or any other part of the request does not)."""
    if err.status_code == 404:
        return True
    if err.status_code not in (None, 400, 422):
        return False
    kind = (err.provider_type or "").lower()
    return bool(_MODEL_TYPE.search(kind) or _MODEL_WORDS.search(err.message.lower()))


class Failures:
    """How :class:`~modelwire.models.HTTPModel` handles a failed request."""

    if TYPE_CHECKING:  # what it reads of the model
        spec: Any
        wire: Any
        protocol: str
        provider: str
        name: str
        endpoint: str
        retry: Any
        timeouts: Any
        rate_limiter: Any
        _credentials: Any
        _capabilities: Any

        @property
        def capabilities(self) -> Any: ...
        def url(self, opts: Any = None) -> str: ...
        def _limit_key(self) -> str: ...

        _sleep: Callable[[float], Awaitable[None]]  # asyncio.sleep, or the one a test gave

        async def _encoded(
            self, payload: dict[str, Any], opts: Any, drafted: Any = None
        ) -> tuple[bytes, dict[str, str]]: ...
        def _resumed(
            self, adapter: Any, opts: Any, trace: Any, full: dict[str, Any], err: E.ProviderError
        ) -> AsyncGenerator[AgentEvent, None] | None: ...
        async def _prices_loaded(self) -> None: ...
        def _ended(self, end: AgentEvent, trace: Any) -> AgentEvent: ...

    def _mask(self, err: E.ProviderError, headers: Any, url: str | None = None) -> E.ProviderError:
        """The credentials a request carried (its key headers and query, the cloud
        credentials that signed it) masked in its error: what a server echoes is shown to
        people and browsers, never the key."""
        from .._secrets import sent_secrets
        from ..protocols import signed_schemes

        secrets = sent_secrets(
            url or self.url(), headers.items() if hasattr(headers, "items") else headers, signed_schemes
        )
        if self.spec.api_key:
            secrets.add(self.spec.api_key)
        held = getattr(self._credentials, "secrets", None)
        if held is not None:
            secrets |= held()
        err.mask(secrets)
        return err

    def _learned(self, err: E.ProviderError) -> E.ProviderError:
        """A 400 whose words state a rule modelwire reads (see ``_learned``): the rule kept
        for this endpoint and model, and the error a :class:`~modelwire.errors.RefusedOptionError`
        quoting the provider; any other error as it is."""
        if type(err) is not E.InvalidRequestError or err.status_code not in (None, 400, 422):
            return err
        from ._learned import learned_rules, refusal_in

        found = refusal_in(self.protocol, err.message)
        if found is None:
            return err
        option, learned = found
        learned_rules().add(self.endpoint, self.name, learned, err.message)
        self._capabilities = None  # the next call reads what was learned
        refused = E.RefusedOptionError(
            option,
            self.provider,
            self.name,
            err.message,
            provider_type=err.provider_type,
            status_code=err.status_code,
            request_id=err.request_id,
            body=err.body,
        )
        refused.events, refused.retry_after = err.events, err.retry_after
        refused.rate_limits = err.rate_limits
        return refused

    def _explain(self, err: E.ProviderError, attempt: Attempt) -> None:
        """What the error says of where it came from: the request id, and a server that
        answered in another protocol."""
        if attempt.response is not None and err.request_id is None:
            err.request_id = request_id_of(attempt.response)
        if attempt.response is not None and err.rate_limits is None:
            err.rate_limits = self.wire.rate_limits(attempt.response.headers)
        if self.rate_limiter is not None and err.rate_limits:
            self.rate_limiter.learn(self._limit_key(), err.rate_limits)
        if isinstance(err, E.InvalidRequestError) and _refuses_the_model(err):
            self._say_model_refused(err)
        if isinstance(err, E.StreamProtocolError) and attempt.head:
            from ..protocols import sniff

            other = sniff(attempt.head)
            if other is not None and other != self.protocol:
                err.message = (
                    f"the server at {self.url().split('?')[0]} answered in another protocol ({other}), not "
                    f"{self.protocol}: {err.message}"
                )

    def _say_model_refused(self, err: E.ProviderError) -> None:
        """What the error to a model id the provider does not serve adds: the day the provider
        retired it (once that day has come) and the model it names instead, and names close to
        one modelwire knows (a misspelt id)."""
        retired = self.capabilities.retired
        if retired is not None and "retired" not in err.message:
            from .capabilities import has_come

            if has_come(retired):
                successor = self.capabilities.successor
                err.message += f" ({self.provider}:{self.name} was retired on {retired}" + (
                    f"; its provider names {self.provider}:{successor} in its place)" if successor else ")"
                )
        if err.status_code == 404 and "did you mean" not in err.message:
            from .capabilities import near_names

            near = near_names(self.name)
            if near:
                err.message += (
                    f" (did you mean {self.provider}:{near[0]}? the model {self.name!r} is unknown to modelwire)"
                )

    async def _after_error(self, err: E.ProviderError, attempt: Attempt, call: Call) -> Any:
        """What follows a failed request: ``AGAIN`` (sent again: the whole history, or a
        retry after its delay), the rest of a background response read again, or None (the
        call fails with ``err``)."""
        adapter = attempt.decoder.adapter
        if not attempt.passed_on and call.chained is not None and self.wire.forgot_state(err):
            # The server no longer has the response this call continued: the same call with
            # the whole history (no retry spent).
            log.debug("%s: %s; sent again with the whole history", self, err.message)
            call.chained, call.payload = None, call.full
            call.body, call.headers = await self._encoded(call.payload, call.opts)
            await attempt.close()
            return AGAIN
        if (
            call.opts.background
            and isinstance(err, (E.ConnectionError, E.IncompleteStreamError))
            and adapter.started
            and not adapter.finished
        ):
            # A background response goes on without us: read the rest of it rather than
            # start it again.
            resumed = self._resumed(adapter, call.opts, call.trace, call.full, err)
            if resumed is not None:
                await attempt.close()
                return resumed
        if attempt.passed_on or getattr(err, "answered", False) or _answer_began(attempt.held, err.events):
            return None
        delay = (
            self.retry.delay(call.attempts, getattr(err, "retry_after", None)) if self.retry.retryable(err) else None
        )
        if (
            delay is not None
            and call.deadline is not None
            and asyncio.get_running_loop().time() + delay >= call.deadline
        ):
            # One deadline for the call: a wait that would cross it is not begun, and the
            # error that made it wait is the one raised.
            total = f"{self.timeouts.total:g} s"
            _say_wait(err, f"not waited: that would pass the call's total timeout ({total})")
            delay = None
        if delay is None:
            _say_wait(err, "")
            return None
        call.attempts += 1
        await attempt.close()
        await self._sleep(delay)
        return AGAIN

    async def _failed(self, err: E.ProviderError, attempt: Attempt, trace: Any) -> AsyncGenerator[AgentEvent, None]:
        """The call ends with ``err``: what the stream opened is closed, the events held back
        and those the error carries are passed on, then it is raised."""
        adapter = attempt.decoder.adapter
        if adapter.started and not adapter.finished:
            # A transport error in the middle: close what the stream opened.
            try:
                adapter.fail(err)
            except E.ProviderError as closed:
                err.events = closed.events
        closing = attempt.held + err.events
        if closing and closing[-1].type == "MODEL_CALL_END":
            await self._prices_loaded()
            closing[-1] = self._ended(closing[-1], None)
        if trace is not None:
            trace.end(closing[-1] if closing and closing[-1].type == "MODEL_CALL_END" else None, error=err)
        for event in closing:
            yield event
        err.events = []
        raise err
