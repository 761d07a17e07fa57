"""A local model behind LiteLLM's proxy (its custom-provider interface): it calls the first
tool it is given when the user's turn is last (arguments from the tool's schema, an id per
call), answers "It is sunny." after a tool result, a JSON object when asked for JSON, and
"OK" otherwise; usage is counted. LiteLLM, not this file, shapes what goes over the wire."""

import itertools
import json

import litellm
from litellm import CustomLLM

_ids = itertools.count(1)


def _plan(messages, params):
    tools = params.get("tools") or []
    last = messages[-1]
    if tools and last.get("role") == "user":
        function = tools[0]["function"]
        properties = (function.get("parameters") or {}).get("properties") or {}
        return None, (
            f"call_echo{next(_ids):04d}",
            function["name"],
            json.dumps({name: "Paris" for name in properties}),
        )
    if last.get("role") == "tool":
        return "It is sunny.", None
    if params.get("response_format"):
        return '{"answer": "OK"}', None
    return "OK", None


def _chunk(text="", tool=None, finished=False, reason="", usage=None):
    return {
        "text": text,
        "tool_use": tool,
        "is_finished": finished,
        "finish_reason": reason,
        "usage": usage,
        "index": 0,
    }


class Echo(CustomLLM):
    async def acompletion(self, model, messages, *args, optional_params=None, **kwargs):
        text, call = _plan(messages, optional_params or {})
        calls = (
            [{"id": call[0], "type": "function", "function": {"name": call[1], "arguments": call[2]}}] if call else None
        )
        return litellm.completion(model="gpt-4o", messages=messages, mock_response=text or "", mock_tool_calls=calls)

    async def astreaming(self, model, messages, *args, optional_params=None, **kwargs):
        text, call = _plan(messages, optional_params or {})
        usage = {"prompt_tokens": 5 * len(messages), "completion_tokens": 3, "total_tokens": 5 * len(messages) + 3}
        if call:
            half = len(call[2]) // 2
            yield _chunk(
                tool={
                    "id": call[0],
                    "type": "function",
                    "function": {"name": call[1], "arguments": call[2][:half]},
                    "index": 0,
                }
            )
            yield _chunk(
                tool={
                    "id": None,
                    "type": "function",
                    "function": {"name": None, "arguments": call[2][half:]},
                    "index": 0,
                }
            )
            yield _chunk(finished=True, reason="tool_calls", usage=usage)
            return
        yield _chunk(text)
        yield _chunk(finished=True, reason="stop", usage=usage)


echo = Echo()
