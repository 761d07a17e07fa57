"""What a model asks of its provider besides a call: tokens counted, a conversation
compacted, files held, batches submitted (the mixin :class:`Services` of
:class:`~modelwire.models.HTTPModel`; each service lives in a module of its own)."""

from __future__ import annotations

from typing import Any, Sequence

from ..message import Msg, MsgInput
from ..protocols import ModelOptions

__all__ = ["Services"]


class Services:
    """How :class:`~modelwire.models.HTTPModel` reaches its provider's other endpoints."""

    async def count_tokens(
        self,
        messages: MsgInput,
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: ModelOptions | dict[str, Any] | None = None,
        estimate: bool = False,
    ) -> Any:
        """The input tokens this request would send (a :class:`~modelwire.models.TokenCount`),
        counted by the provider's own endpoint for the exact body the request would have
        (Anthropic ``count_tokens``, also on Vertex and Bedrock; OpenAI Responses
        ``input_tokens``; Gemini ``countTokens``; Bedrock ``CountTokens``). Where the provider
        has none, :class:`~modelwire.errors.TokenCountUnavailableError`, or with
        ``estimate=True`` an estimate from the request's size, marked ``estimated``."""
        from ._count import count_tokens

        return await count_tokens(self, messages, tools, tool_choice, options, estimate)

    async def compact(self, messages: MsgInput, *, options: ModelOptions | dict[str, Any] | None = None) -> list[Msg]:
        """The conversation compacted by the provider on request, outside a turn (OpenAI
        Responses ``POST /responses/compact``): the compacted window as messages, the user
        messages the provider kept and an assistant message holding its compaction block,
        which goes back only to this provider (``message.BINDINGS["compaction"]``; elsewhere
        its summary, where it has one, or nothing: ``check`` says ``foreign-compaction``).
        Send the window, then what follows, as the next request's history. Where the provider
        has no such endpoint, an :class:`~modelwire.errors.UnsupportedOptionError` naming the model."""
        from ._compact import compact

        return await compact(self, messages, options)

    async def upload_file(self, source: Any, *, media_type: str | None = None, name: str | None = None) -> Any:
        """Upload a file (a path, or bytes with their ``media_type``) to this provider's Files
        API once, and return a :class:`~modelwire.message.DataBlock` that refers to it: sent
        to this endpoint it goes by id, anywhere else as its bytes (read again from the path
        it was uploaded from), or a ``FormatError`` says what to do. Anthropic, OpenAI (Chat
        takes PDFs by id, Responses images and PDFs) and the Gemini API hold files; the others
        refuse with an ``UnsupportedOptionError`` saying what they take instead."""
        from ._files import upload_file

        return await upload_file(self, source, media_type, name)

    async def batch(self, requests: Sequence[Any]) -> Any:
        """Submit many requests as one batch (a :class:`~modelwire.models.Batch`), answered
        within a day at the provider's batch price: each a conversation, or a dict with
        ``messages`` and any of ``tools``, ``tool_choice``, ``options``, built as the same call
        would be. ``await batch.wait()``, then ``await batch.results()``: one assistant message
        per request, in order, or its typed error. Anthropic's Message Batches, OpenAI's Batch
        API (Chat and Responses) and the Gemini API's batch mode; the others refuse with an
        ``UnsupportedOptionError``."""
        from ._batch import submit_batch

        return await submit_batch(self, requests)

    async def batch_by_id(self, batch_id: str) -> Any:
        """A batch submitted earlier (by this process or another), by its id."""
        from ._batch import Batch
        from ..protocols import BatchState

        batch = Batch(self, BatchState(batch_id, "", False))
        await batch.status()
        return batch

    async def list_files(self) -> list[Any]:
        """The files this provider holds (``protocols.UploadedFile``: id, url, media type, name, size)."""
        from ._files import list_files

        return await list_files(self)

    async def delete_file(self, file: Any) -> None:
        """Delete a file this provider holds: its id, an ``UploadedFile``, or the block ``upload_file`` made."""
        from ._files import delete_file

        await delete_file(self, file)
