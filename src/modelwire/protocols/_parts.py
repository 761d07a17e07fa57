"""The parts of a wire protocol beside its core (request, stream, errors), each with its
defaults: a protocol overrides only what its provider has. :class:`WireProtocol` is the core
and all of these; a reader of a protocol package sees which part each method it writes
belongs to.

- :class:`Files`: uploads to the provider's Files API, and references to them;
- :class:`Batches`: many requests answered within a day, at a discount;
- :class:`TokenCounting`: the provider's own endpoint that counts a request's tokens;
- :class:`StoredState`: responses the provider keeps (continued, resumed);
- :class:`Caching`: prompt caching asked for, and the prompt's cached prefix;
- :class:`LongContext`: the provider's own compaction of a long conversation;
- :class:`Discovery`: what a model accepts, as the provider publishes it;
- :class:`TestSupport`: fake streams and answers for the test server, an SDK client's URL.

Every default refuses or says "none" in so many words: a part a provider lacks is never a
silent no-op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import UnsupportedOptionError
from ._caps import ModelCapabilities
from ._records import (
    BatchResult,
    BatchState,
    CachePlan,
    CompactionPlan,
    FileBody,
    HTTPCall,
    Preset,
    UploadedFile,
    _unmarked,
    refuse,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..adapters import Framing

__all__ = ["Files", "Batches", "TokenCounting", "StoredState", "Caching", "LongContext", "Discovery", "TestSupport"]


class Files:
    """Uploads to the provider's Files API, and blocks sent by reference to them."""

    name: str

    files_refusal = "it has no Files API known to modelwire: send the data inline, or by URL"
    files_api: str | None = None  # whose Files API holds its uploads (protocols sharing one name it alike)

    def file_upload(
        self, base_url: str, preset: Preset, data: "bytes | FileBody", media_type: str, name: str
    ) -> HTTPCall:
        """The request that uploads ``data`` to the provider's Files API, or an
        :class:`~modelwire.errors.UnsupportedOptionError` saying what it takes instead.
        ``data`` is bytes, or a :class:`FileBody` (a file read from disk as it is sent): put it
        in the body as it is, or through :func:`multipart`, never read whole."""
        raise UnsupportedOptionError("upload_file", preset.name, self.files_refusal)

    def file_uploaded(
        self, answer: Mapping[str, Any], headers: Mapping[str, str], call: HTTPCall, data: "bytes | FileBody"
    ) -> "UploadedFile | HTTPCall":
        """The file the provider now holds, from the answer to ``call``; or the next request
        of an upload made in several (Gemini's resumable upload)."""
        raise UnsupportedOptionError("upload_file", self.name, self.files_refusal)

    def files_url(self, base_url: str, preset: Preset) -> str:
        """Where the provider lists the files it holds (``GET``); a file's own URL is this
        and its id."""
        raise UnsupportedOptionError("list_files", preset.name, self.files_refusal)

    def files_listed(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> list[UploadedFile]:
        """The files in a listing's answer."""
        return []

    def takes_file_ref(self, media_type: str) -> bool:
        """Whether a file the endpoint holds can be sent by reference as this media type (else
        its bytes go, from the block's local copy)."""
        return False


class Batches:
    """Many requests submitted at once and answered within a day, at the provider's batch
    price."""

    name: str

    batch_refusal = "it has no batch API known to modelwire"
    batch_discount = 1.0  # what a batched request costs, as a share of the same request sent alone
    batch_limit = 0  # the most requests one batch takes (0: no limit known)

    def batch_submit(self, base_url: str, preset: Preset, model: str, bodies: Sequence[Mapping[str, Any]]) -> HTTPCall:
        """The request that submits ``bodies`` (whole-answer request bodies, in order) as one
        batch, or an ``UnsupportedOptionError`` saying why there is none."""
        raise UnsupportedOptionError("batch", preset.name, self.batch_refusal)

    def batch_submitted(
        self, answer: Mapping[str, Any], call: HTTPCall, base_url: str, preset: Preset
    ) -> "BatchState | HTTPCall":
        """The batch's state from the answer to ``call``, or the next request of a submission
        made in several (OpenAI's: the input file, then the batch)."""
        return self.batch_state(answer, base_url, preset)

    def batch_call(self, base_url: str, preset: Preset, batch_id: str, action: str) -> HTTPCall:
        """The request that reads a batch's state (``action`` ``status``) or cancels it (``cancel``)."""
        raise UnsupportedOptionError("batch", preset.name, self.batch_refusal)

    def batch_state(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> BatchState:
        """A batch's state from the provider's answer."""
        raise UnsupportedOptionError("batch", preset.name, self.batch_refusal)

    def batch_results(self, text: str) -> "list[BatchResult]":
        """A batch's results (the text its results requests read): ``(request index, the whole
        answer or None, the error body or None)`` for each request it holds. A result that
        cannot be read is the typed error in the place of the request it names (its error
        instead of a body); an index that names no request of the batch (-1 where none could
        be read) is reported by the models layer, not placed."""
        return []


class TokenCounting:
    """The provider's own endpoint that counts the input tokens of a request."""

    def count_request(
        self, url: str, body: dict[str, Any], model: str, preset: Preset
    ) -> tuple[str, dict[str, Any]] | None:
        """The URL and body of the provider's own endpoint that counts the input tokens of
        the request ``body`` (which would go to ``url``), or None where it has none."""
        return None

    def counted(self, answer: Mapping[str, Any]) -> int:
        """The input tokens in the counting endpoint's answer (each provider names them its way)."""
        for key in ("input_tokens", "inputTokens", "totalTokens"):
            count = answer.get(key)
            if isinstance(count, int):
                return count
        raise ValueError(f"no token count in {str(dict(answer))[:200]}")


class StoredState:
    """Responses the provider keeps on its side: continued with only the new items, read
    again after a broken stream."""

    # Whether the provider keeps responses on its side (so that ``stateless``, ``chain`` and
    # ``background`` mean something). Where it keeps none, ``stateless`` and ``chain`` are
    # what happens anyway, and ``background`` is refused.
    keeps_state: bool = False

    def chain(self, body: dict[str, Any], records: Sequence[Any]) -> dict[str, Any] | None:
        """``body`` continuing one of the stored responses in ``records`` (what
        :meth:`chain_record` kept of earlier calls), with only the new items; None when
        none of them is this conversation's."""
        return None

    def chain_record(self, body: dict[str, Any], metadata: Mapping[str, Any]) -> Any:
        """What to keep of a finished call (its full request, the end's metadata) to
        continue it later; None: nothing."""
        return None

    def forgot_state(self, err: Exception) -> bool:
        """Whether ``err`` says the server no longer has the response a request continued."""
        return False

    def resume_url(self, base_url: str, preset: Preset, metadata: Mapping[str, Any]) -> str | None:
        """Where to read the rest of a background response whose stream broke (a GET), from
        what its adapter recorded so far; None when it cannot be resumed."""
        return None


class Caching:
    """Prompt caching as the provider takes it, and the prompt's cached prefix."""

    def apply_cache(
        self,
        body: dict[str, Any],
        plan: CachePlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        """Put the prompt-caching ``plan`` into ``body`` as this provider takes it (in
        place), or refuse it: a provider with no caching to ask for refuses ``cache``."""
        raise refuse("cache", preset, "the provider has no prompt caching to ask for; leave cache out", model=model)

    def cache_resource(self, body: dict[str, Any], plan: CachePlan, url: str) -> tuple[str, dict[str, Any]] | None:
        """For a provider whose cache is a resource created first (and then named in the
        request): where to create it for this request (``url`` is the request's) and the
        body that creates it; None when there is nothing to create."""
        return None

    def with_cache_resource(self, body: dict[str, Any], name: str) -> dict[str, Any]:
        """``body`` using the created cache ``name`` (what it holds left out)."""
        raise NotImplementedError

    # The request's fields in the order the provider reads its prompt (the cached prefix is
    # a leading run of them); the last is the conversation, one part per item.
    prompt_order: tuple[str, ...] = ()
    # Keys that only mark cache breakpoints (left out when prefixes are compared).
    cache_marker_keys: tuple[str, ...] = ()

    def prompt_parts(self, body: dict[str, Any]) -> list[tuple[str, Any]]:
        """The request as the provider's cached prefix sees it: ``(label, value)`` in
        prompt order, cache marks left out. Two calls share a cached prefix up to their
        first differing part."""
        parts: list[tuple[str, Any]] = []
        for index, name in enumerate(self.prompt_order):
            value = _unmarked(body.get(name), self.cache_marker_keys)
            if index == len(self.prompt_order) - 1 and isinstance(value, list):
                parts += [(f"{name}[{i}]", item) for i, item in enumerate(value)]
            elif value is not None:
                parts.append((name, value))
        return parts


class LongContext:
    """The provider's own ways to keep a long conversation within its window."""

    def apply_compaction(
        self,
        body: dict[str, Any],
        plan: CompactionPlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        """Put the ``compaction`` plan into ``body`` as this provider takes it (in place), or
        refuse it: a provider that does not compact a conversation itself refuses ``compaction``."""
        raise refuse(
            "compaction",
            preset,
            "the provider does not compact a conversation itself; leave compaction out "
            "(or trim the history before the call)",
            model=model,
        )

    def apply_clear_tool_uses(self, body: dict[str, Any], value: Any, preset: Preset, model: str = "") -> None:
        """Put the ``clear_tool_uses`` option (True, or its dict) into ``body`` as this provider
        takes it (in place), or refuse it."""
        raise refuse(
            "clear_tool_uses",
            preset,
            "the provider does not clear tool uses from a conversation itself; leave clear_tool_uses out "
            "(or use compaction where the provider takes it)",
            model=model,
        )

    def compact_request(
        self, url: str, body: dict[str, Any], model: str, preset: Preset
    ) -> tuple[str, dict[str, Any]] | None:
        """Where the provider compacts a conversation on request, outside a turn, and the body
        that asks it to, from the request ``body`` for ``url``; None where it has no such
        endpoint (``model.compact`` then refuses)."""
        return None

    def compacted_window(self, answer: dict[str, Any]) -> list[tuple[str, Any]]:
        """What a compact endpoint's ``answer`` holds, in order: ``("user", content)`` for a user
        message it kept (its text, or its blocks, where a dict is a part kept whole as a
        provider block), ``("answer", whole_answer)`` for the rest, which this protocol's
        adapter decodes (:meth:`answer_events`) into an assistant message."""
        raise NotImplementedError

    def apply_media_resolution(self, body: dict[str, Any], resolution: str, preset: Preset, model: str = "") -> None:
        """Put the ``media_resolution`` option (low, medium, high) into ``body``, or refuse it."""
        raise refuse(
            "media_resolution", preset, "the provider takes no resolution for media; leave it out", model=model
        )


class Discovery:
    """What a model accepts, as the provider publishes it."""

    # Whether every request depends on what the model is (then its capabilities are looked
    # up on the first call whatever the options).
    lookup_always = False

    def model_info_url(self, base_url: str, model: str, preset: Preset) -> str | None:
        """Where the provider publishes what ``model`` accepts (a GET with the usual auth,
        or a POST of :meth:`model_info_body`), or None when it does not."""
        return None

    def model_info_body(self, model: str) -> bytes | None:
        """The JSON body to POST to :meth:`model_info_url` (None: a GET)."""
        return None

    def capabilities_from_info(self, data: Any, model: str) -> ModelCapabilities | None:
        """The published answer of :meth:`model_info_url` as a record (only what it says;
        None when the answer does not describe the model)."""
        return None

    # For a list field, the names the provider's model list can speak of: a name the table
    # holds beyond these (Claude's ``web_fetch``, which Anthropic's ``server_tools`` does not
    # cover) is not a difference (``modelwire models --verify``).
    listed_names: Mapping[str, tuple[str, ...]] = {}

    def model_list_url(self, base_url: str, preset: Preset, page: str | None = None) -> str | None:
        """Where the provider lists its models (the page after the cursor ``page`` that
        :meth:`models_listed` gave), or None when it lists none modelwire can read. Built from
        ``base_url`` alone: nothing an answer says is ever followed as a URL."""
        return None

    def models_listed(self, data: Any, preset: Preset) -> tuple[list[tuple[str, ModelCapabilities]], str | None]:
        """One page of the model list: each chat model's id with what the list says of it (an
        empty record where it says nothing), and the cursor of the next page (None: the last).
        An answer not in the documented shape is a ``ValueError``."""
        return [], None


class TestSupport:
    """Fake streams and answers for the test server and the conformance suite, and the base
    URL modelwire takes from an official SDK's client."""

    name: str
    framing: Framing

    def sdk_base_url(self, base_url: str) -> str:
        """The base URL modelwire wants, from an SDK client's."""
        return base_url.rstrip("/")

    def fake_stream(self, *blocks: tuple[Any, ...], **options: Any) -> bytes:
        """A response body for the local test server, from neutral blocks:
        ``("think", text)``, ``("text", text)``, ``("tool", call_id, name, arguments_json)``."""
        raise NotImplementedError(
            f"the {self.name} protocol has no fake stream: it writes fake_stream(*blocks, usage=(10, 5))"
        )

    def fake_answer(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        """The whole (not streamed) answer a server gives for the same blocks as
        :meth:`fake_stream`: what :meth:`answer_events` reads (the conformance suite checks
        that both fold to one reply). Optional: a protocol without it is checked on its
        streams alone."""
        raise NotImplementedError(f"the {self.name} protocol has no fake whole answer")

    def split_stream(self, body: bytes) -> list[bytes]:
        """A response body in the pieces a server sends it in: one event (or line, or
        frame) each, by :attr:`framing`."""
        from ..adapters import split_framed

        return split_framed(self.framing, body)
