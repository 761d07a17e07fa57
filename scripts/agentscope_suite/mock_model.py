"""AgentScope's test ``MockModel`` on modelwire: the scripted ``ChatResponse`` objects are
served as a provider's stream by modelwire's local provider server (a real socket) and read
back by ``ModelwireChatModel``; the rest of AgentScope's tests run unchanged. Used by
``run.py``, which puts this class into AgentScope's ``tests/utils.py``.
"""

import json
from typing import Any

from agentscope.message import Msg
from agentscope.model import ChatResponse, StructuredResponse

from modelwire.integrations.agentscope import ModelwireChatModel
from modelwire.testing import ProviderServer, sse_reply


def _sse(chunks: list, final: "ChatResponse | None") -> tuple[str, bytes]:
    """AgentScope's scripted chunks as a provider's stream: each non-last chunk's blocks as
    deltas (the final chunk's whole content when there are none). Anthropic's Messages
    stream where the final chunk has usage (it can say every cache count), an OpenAI chat
    stream with no usage where it has none (as servers that send none do)."""
    pieces = [c for c in chunks if not c.is_last] or ([final] if final is not None else [])
    usage = final.usage if final is not None else None
    blocks = [b for c in pieces for b in c.content]
    if usage is None:
        return "openai", _chat(blocks)
    return "anthropic", _messages(blocks, usage)


def _chat(blocks: list) -> bytes:
    index: dict[str, int] = {}

    def chunk(delta, finish=None):
        return (
            "data: "
            + json.dumps(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "mock-model",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
            )
            + "\n\n"
        )

    out = [chunk({"role": "assistant", "content": ""})]
    for block in blocks:
        if block.type == "text":
            out.append(chunk({"content": block.text}))
        elif block.type == "thinking":
            out.append(chunk({"reasoning_content": block.thinking}))
        elif block.type == "tool_call":
            first = block.id not in index
            call: dict[str, Any] = {
                "index": index.setdefault(block.id, len(index)),
                "function": {"arguments": block.input},
            }
            if first:
                call.update(id=block.id, type="function")
                call["function"]["name"] = block.name
            out.append(chunk({"tool_calls": [call]}))
    out.append(chunk({}, "tool_calls" if index else "stop"))
    return ("".join(out) + "data: [DONE]\n\n").encode()


def _messages(blocks: list, usage: Any) -> bytes:
    from modelwire.adapters import encode_sse

    cache_read, cache_write = usage.cache_input_tokens or 0, usage.cache_creation_input_tokens or 0
    first = {
        "input_tokens": usage.input_tokens - cache_read - cache_write,
        "output_tokens": 1,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }
    ev = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "mock-model",
                    "content": [],
                    "stop_reason": None,
                    "usage": first,
                },
            },
        )
    ]
    open_key, n, tools = None, -1, False
    for block in blocks:
        key = (block.type, getattr(block, "id", None) if block.type == "tool_call" else None)
        if key != open_key:
            if open_key is not None:
                if open_key[0] == "thinking":
                    ev.append(
                        (
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": n,
                                "delta": {"type": "signature_delta", "signature": "sig"},
                            },
                        )
                    )
                ev.append(("content_block_stop", {"type": "content_block_stop", "index": n}))
            n += 1
            open_key = key
            start = {
                "text": {"type": "text", "text": ""},
                "thinking": {"type": "thinking", "thinking": "", "signature": ""},
            }.get(block.type) or {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            ev.append(("content_block_start", {"type": "content_block_start", "index": n, "content_block": start}))
        if block.type == "text":
            delta = {"type": "text_delta", "text": block.text}
        elif block.type == "thinking":
            delta = {"type": "thinking_delta", "thinking": block.thinking}
        else:
            tools = True
            delta = {"type": "input_json_delta", "partial_json": block.input}
        ev.append(("content_block_delta", {"type": "content_block_delta", "index": n, "delta": delta}))
    if open_key is not None:
        if open_key[0] == "thinking":
            ev.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": n,
                        "delta": {"type": "signature_delta", "signature": "sig"},
                    },
                )
            )
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": n}))
    ev.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use" if tools else "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": usage.output_tokens},
            },
        )
    )
    ev.append(("message_stop", {"type": "message_stop"}))
    return encode_sse(ev)


class MockModel(ModelwireChatModel):
    """AgentScope's test MockModel, backed by modelwire: the scripted responses are served as
    an OpenAI chat stream by a real local server and read by ModelwireChatModel."""

    def __init__(
        self,
        model: str = "mock-model",
        stream: bool = True,
        context_size: int = 1000,
        mock_chat_responses: list | None = None,
        mock_structured_response: Any = None,
        formatter: Any = None,
    ) -> None:
        self._server = ProviderServer()
        self._server.__enter__()
        super().__init__(
            f"openai:{model}",
            api_key="sk-test",
            base_url=self._server.url + "/v1",
            stream=stream,
            context_size=context_size,
        )
        from modelwire.models import load_model
        from modelwire.models.transport import RetryPolicy

        self._wires = {
            "openai": self.wire_model,
            "anthropic": load_model(
                f"anthropic:{model}", api_key="sk-test", base_url=self._server.url, retry=RetryPolicy(max_retries=2)
            ),
        }
        self._kinds: list[str] = []
        for wire in self._wires.values():  # what a first call pays once (the catalogue, the HTTP client)
            wire.capabilities
            wire.transport.client
        self.mock_chat_responses = []
        self.mock_structured_response = mock_structured_response
        self.cnt = 0
        if mock_chat_responses:
            self.set_responses(mock_chat_responses)

    def set_responses(self, mock_responses: list) -> None:
        self.mock_chat_responses = mock_responses
        self.stream = not all(isinstance(_, (ChatResponse, BaseException)) for _ in mock_responses)
        self.cnt = 0
        self._kinds = []
        for item in mock_responses:
            if isinstance(item, ChatResponse):
                kind, raw = _sse([], item)
            elif isinstance(item, list):
                final = next((c for c in item if isinstance(c, ChatResponse) and c.is_last), None)
                kind, raw = _sse([c for c in item if isinstance(c, ChatResponse)], final)
            else:
                kind, raw = "", b""
            self._kinds.append(kind)
            if kind:
                self._server.script(sse_reply(raw))

    async def _call_api(self, *args: Any, **kwargs: Any):
        item = self.mock_chat_responses[self.cnt]
        self.cnt += 1
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, list) and any(isinstance(c, BaseException) for c in item):
            raise NotImplementedError("an exception inside a scripted stream")
        self.wire_model = self._wires[self._kinds[self.cnt - 1]]
        return await super()._call_api(*args, **kwargs)

    def set_structured_response(self, mock_response: StructuredResponse) -> None:
        self.mock_structured_response = mock_response

    async def _call_api_with_structured_output(
        self, model_name: str, messages: list[Msg], structured_model: Any, **kwargs: Any
    ) -> StructuredResponse:
        return self.mock_structured_response
