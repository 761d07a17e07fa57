"""The OpenAI Chat Completions protocol (``POST /chat/completions``, streamed), spoken by
OpenAI and by most OpenAI-compatible servers.

Servers differ in a few documented ways; a preset's ``dialect`` says which:

- ``reasoning_field``: where reasoning arrives and, for servers that want it back, goes
  back (``reasoning_content``: DeepSeek, Moonshot, DashScope, vLLM; ``reasoning``:
  OpenRouter, Groq, Ollama); ``reasoning_on_tool_calls``: the server needs the reasoning
  of tool-call turns sent back (DeepSeek's thinking mode answers 400 without it);
  ``replay_reasoning_details``: OpenRouter's ``reasoning_details`` go back too;
- ``max_tokens_field``: ``max_completion_tokens`` (OpenAI) or ``max_tokens``;
- ``thinking_switch``: how thinking is turned on or off, where the server has a switch:
  ``deepseek`` (``thinking: {type}``), ``qwen`` (``enable_thinking``, ``thinking_budget``),
  ``vllm`` (``chat_template_kwargs.enable_thinking``), ``openrouter`` (``reasoning:
  {enabled, max_tokens, effort}``);
- ``reasoning_effort``: the server takes ``reasoning_effort``;
- ``json_schema``: the server takes ``response_format`` of type ``json_schema``;
- ``stream_usage``: send ``stream_options.include_usage``;
- ``tool_id_style``: ``mistral`` when tool-call ids must be nine letters and digits (others
  are rewritten, the same for a call and its result);
- ``prompt_cache``: ``openai`` where the server takes OpenAI's ``prompt_cache_key`` and
  cache lifetimes (OpenAI, Azure), ``automatic`` where it caches on its own and takes
  nothing (DeepSeek); without it the ``cache`` option is refused;
- ``empty_content_null``: an assistant turn with only tool calls says ``content: null``
  (OpenAI's documented form; the default) or, set to False, ``""`` (llama.cpp's server
  refuses null there).

Reasoning one provider produced is replayed only to that provider (``replay_scope =
"provider"``): DeepSeek's reasoning is not Groq's.

Beside this module: the strict-mode schema rules (:mod:`._strict`) and the rate-limit headers
(:mod:`._rate_limits`) the Responses API shares, and the test server's fakes (:mod:`._fakes`).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping

from ... import errors as E
from .._caps import Refusal, levels_in
from .._openai_errors import OpenAIErrors
from .._openai_shared import OpenAIFilesAndBatches, openai_model_list_url, openai_models_listed
from .._protocol import (
    CachePlan,
    Capabilities,
    ModelCapabilities,
    ModelOptions,
    Preset,
    WireProtocol,
    check_effort,
    refuse,
    sampling,
)
from ._fakes import OpenAIChatTestSupport
from ._rate_limits import openai_rate_limits
from ._strict import STRICT_RULES, strict_defaults, strict_format
from .presets import PRESETS

if TYPE_CHECKING:
    from ...formatters._common import ReplayScope

__all__ = [
    "PROTOCOL",
    "OpenAIChatProtocol",
    "STRICT_RULES",
    "strict_format",
    "strict_defaults",
    "openai_cache",
    "openai_rate_limits",
]

log = logging.getLogger("modelwire.protocols.openai")


_FORMATTER_KEYS = (
    "reasoning_field",
    "reasoning_on_tool_calls",
    "replay_reasoning_details",
    "empty_content_null",
    "tool_id_style",
)


class OpenAIChatProtocol(OpenAIErrors, OpenAIFilesAndBatches, OpenAIChatTestSupport, WireProtocol):
    name = "openai-chat"
    credential_kinds = {"azure": "modelwire.protocols.openai_chat._credentials:AzureCredentials"}  # Entra ID
    presets = PRESETS
    error_types = {
        "server_error": E.UpstreamError,
        "internal_server_error": E.UpstreamError,
        "rate_limit_exceeded": E.RateLimitError,
        # "You exceeded your current quota, please check your plan and billing details"
        # (https://platform.openai.com/docs/guides/error-codes): no wait lifts it.
        "insufficient_quota": E.QuotaExceededError,
        "invalid_api_key": E.AuthenticationError,
        "invalid_request_error": E.InvalidRequestError,
        "invalid_prompt": E.InvalidRequestError,
        "context_length_exceeded": E.ContextTooLongError,
        "string_above_max_length": E.InvalidRequestError,
        "tool_use_failed": E.InvalidRequestError,  # Groq: a tool call that did not fit its schema
        # llama.cpp's llama-server (tools/server/server-common.cpp, format_error_response, as
        # vendored in llama-cpp-python 0.3.36): 400 {"error": {"type":
        # "exceed_context_size_error", "message": "request (N tokens) exceeds the available
        # context size (M tokens), try increasing it", "n_prompt_tokens", "n_ctx"}}, on its
        # Chat and its Anthropic routes.
        "exceed_context_size_error": E.ContextTooLongError,
    }

    def rate_limits(self, headers: Mapping[str, str]) -> dict[str, Any] | None:
        return openai_rate_limits(headers)

    # OpenAI's words (the Responses API uses the same, naming reasoning.effort), and those of
    # servers that speak its protocol.
    refusals = (
        Refusal(
            r"'(?:temperature|top_p)' (?:is not supported|does not support .* only the default)",
            "temperature",
            lambda m: {"sampling": False},
            "OpenAI's 400 to gpt-5 and the o-series: \"Unsupported value: 'temperature' does not "
            "support 0.01 with this model. Only the default (1)"
            ' value is supported." (owndev/Open-WebUI-Functions#98, 2025-11-20); "Unsupported '
            "parameter: 'temperature' is not supported with this model.\"",
        ),
        Refusal(
            r"max_tokens is too large: \d+\. This model supports at most (\d+) completion tokens",
            "max_tokens",
            lambda m: {"max_output_tokens": int(m.group(1))},
            "OpenAI's 400 to a max_tokens above the model's: 'max_tokens is too large: 32000. This model supports "
            "at most 16384 completion tokens, whereas you provided 32000.' (enoch3712/ExtractThinker#346, "
            "2025-06-24; ChatGPTNextWeb/NextChat#3195, 2023-11-08)",
        ),
        Refusal.unknown_field(
            r"Unsupported parameter: '(max_tokens)' is not supported with this model\. Use 'max_completion_tokens'",
            "OpenAI's 400 to max_tokens on its reasoning models (and Azure's, on GPT-5.1): \"Unsupported parameter: "
            "'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.\" "
            "(griptape-ai/ComfyUI-Griptape#312, 2025-08-22; anomalyco/opencode#37964, 2026-07-20)",
        ),
        Refusal(
            r"this model does not support image input",
            "image",
            lambda m: {"image_input": False},
            "the 400 to an image for a text-only model: 'this model does not support image input' (Ollama's "
            "cloud models, ollama/ollama#17301, 2026-07-22; cloudflare/cloudflare-os#97, 2026-08-08)",
        ),
        Refusal(
            r"invalid temperature: only 1 is allowed for this model",
            "temperature",
            lambda m: {"sampling": False},
            (
                "Moonshot's 400 to Kimi K3 with a temperature: 'invalid temperature: only 1 is allowed "
                "for this model' (XCNXNXNX/dsh-portable-tavern#1, 2026-08-25)"
            ),
        ),
        Refusal(
            r"'(?:reasoning_effort|reasoning\.effort)' does not support .*supported values are: ([a-z', ]+)",
            "reasoning_effort",
            lambda m: {"effort": list(levels_in(m.group(1)))},
            "\"Unsupported value: 'reasoning_effort' does not support 'none' with this model. "
            "Supported values are: 'minimal', 'low', 'medium',"
            " and 'high'.\" (Kilo-Org/cloud#3807, 2026-06-08)",
        ),
        Refusal.unknown_field(
            r"Unrecognized request argument supplied: (\w+)",
            "Azure OpenAI's 400 to a field the deployment does not know: 'Unrecognized request "
            "argument supplied: reasoning_effort'"
            " (gpt-4.1 behind GitHub Copilot, formulahendry/wechat-acp#16, 2026-03-30); '... "
            "supplied: thinking' (nashsu/llm_wiki#336, 2026-06-04)",
        ),
        Refusal(
            r"Invalid '(?:tools\[\d+\]|messages\[\d+\]\.tool_calls\[\d+\])\.function\.name': string "
            r"does not match pattern\."
            r" Expected a string that matches the pattern '([^']+)'",
            "tool_name",
            lambda m: {"tool_name_pattern": m.group(1)},
            "OpenAI's 400 to a tool name: \"Invalid 'tools[0].function.name': string does not match "
            "pattern. Expected a string that matches"
            " the pattern '^[a-zA-Z0-9_\\.-]+$'.\" (danishjsheikh/swagger-mcp#13, 2025-06-11); "
            "DeepSeek's, in the same words with"
            " '^[a-zA-Z0-9_-]+$' (nikkigallery/Whimbox#61, 2026-05-04)",
        ),
        Refusal(
            r"'messages\[\d+\]\.tool_calls\[\d+\]\.id': string too long\. Expected a string with (maximum length \d+)",
            "tool_id",
            lambda m: {"tool_id_pattern": m.group(1)},
            "Azure OpenAI's 400 to a long tool-call id: \"'messages[2].tool_calls[0].id': string too "
            "long. Expected a string with maximum"
            ' length 40, but got a string with length 44 instead." (Portkey-AI/gateway#1062, 2025-04-24)',
        ),
        Refusal(
            r"Tool call id was \S* but (must be (?:[a-zA-Z0-9]-[a-zA-Z0-9],? ?)+,? with a length of \d+)",
            "tool_id",
            lambda m: {"tool_id_pattern": m.group(1)},
            "Mistral's 400 (and mistral_common's, in vLLM) to a tool-call id of another form: 'Tool call id was"
            " 38f04d9ea185424a8dc6ed9a88da5 but must be a-z, A-Z, 0-9, with a length of 9.' "
            "(jackmpcollins/magentic#276, 2024-07-25;"
            " editor-code-assistant/eca#233, 2025-12-13)",
        ),
        Refusal(
            r"Invalid 'tools': array too long\. Expected an array with maximum length (\d+)",
            "tools",
            lambda m: {"max_tools": int(m.group(1))},
            "OpenAI's 400 to a long tool list: \"Invalid 'tools': array too long. Expected an array with maximum "
            'length 128, but got an array with length 325 instead." (vishalmysore/Tools4AI#16, 2024-05-15; '
            "zed-industries/zed#42393, 2025-11-10)",
        ),
        Refusal(
            r"Function tools with reasoning_effort are not supported for \S+ in /v1/chat/completions",
            "tools",
            lambda m: {"tool_use_thinking": False},
            "OpenAI's 400 to function tools on Chat Completions while the model reasons: \"Function tools with "
            "reasoning_effort are not supported for gpt-6-astra in /v1/chat/completions. To use function tools, use "
            "/v1/responses or set reasoning_effort to 'none'.\" (microsoft/foundry-dev-tools#779, 2026-09-13; "
            "gpt-5.6-sol: TheR1D/shell_gpt#801, 2026-09-01)",
        ),
        Refusal(
            r"\S+ does not support this tool_choice",
            "tool_choice",
            lambda m: {"forced_tool": False},
            "DeepSeek's 400 to a forced tool_choice on its thinking models: 'deepseek-reasoner does "
            "not support this tool_choice'"
            " (deepseek-ai/awesome-deepseek-integration#598, 2026-04-29; i-am-bee/beeai-framework#1441, 2026-05-08)",
        ),
        Refusal(
            r"Invalid schema for (?:function|response_format) '[^']*': In context=\([^)]*\), '(\w+)' is not permitted",
            "tools",
            lambda m: {"strict_refused": [m.group(1)]},
            'the 400 to a keyword strict mode does not take: "Invalid schema for function '
            "'GetLogs': In context=('properties', 'name'),"
            " 'default' is not permitted.\" (dotnet/extensions#6196, 2025-03-26); Azure OpenAI still "
            "refuses a non-null default"
            " (openai/openai-agents-python#4390, 2026-08-13)",
        ),
    )
    # The servers that speak this protocol, where their error type does not say it:
    error_phrases = {
        # llama.cpp (above), in a body whose type a proxy dropped.
        "exceeds the available context size": E.ContextTooLongError,
        # vLLM's input processor: 400 "The decoder prompt (length 5951) is longer than the
        # maximum model length of 4096." ("This model's maximum context length is ..." is
        # OpenAI's own words, read by every protocol.)
        "longer than the maximum model length": E.ContextTooLongError,
        # (LM Studio's "... is greater than the context length" and Ollama's "the input length
        # exceeds the context length", 400 with truncate false, ollama/ollama PR #17944,
        # 2026-08-23, are read by the words every protocol shares: "context length".)
        # LiteLLM's proxy names its mapped exception first, whatever the upstream said:
        # "litellm.ContextWindowExceededError: ..." (docs/my-website/docs/exception_mapping.md).
        "contextwindowexceedederror": E.ContextTooLongError,
        # A request larger than the per-minute budget itself, a 429 no wait lifts: OpenAI's
        # "Request too large for gpt-4o in organization org-... on tokens per min (TPM): Limit
        # 30000, Requested 30601. The input or output tokens must be reduced in order to run
        # successfully." (type "tokens", code "rate_limit_exceeded"; DrShushen/climb#13,
        # 2024-11-24), Groq's "Request too large for model `openai/gpt-oss-120b` in
        # organization ... on tokens per minute (TPM): Limit 8000, Requested 34041"
        # (autohandai/code-cli#302, 2026-06-29).
        "request too large for": E.QuotaExceededError,
    }
    dialect_keys = {
        "reasoning_field": {"reasoning_content", "reasoning"},
        "reasoning_on_tool_calls": bool,
        "replay_reasoning_details": bool,
        "max_tokens_field": {"max_tokens", "max_completion_tokens"},
        "thinking_switch": {"deepseek", "qwen", "vllm", "openrouter"},
        "reasoning_effort": bool,
        "json_schema": bool,
        "stream_usage": bool,
        "tool_id_style": {"mistral"},
        "empty_content_null": bool,
        "prompt_cache": {"openai", "automatic"},
        "model_info": {"openrouter"},
        # False: the strict mode refuses a non-null ``default`` (Azure OpenAI; api.openai.com takes
        # it), which then goes into the description.
        "strict_default": bool,
        # The provider of the same service's Responses API, named where a request is for it.
        "responses_provider": {"openai-responses", "azure-responses"},
    }
    description = "OpenAI Chat Completions"
    adapter = "modelwire.protocols.openai_chat.adapter:OpenAIChatAdapter"
    conform = "modelwire.protocols.openai_chat._conform:CHECKS"
    formatter = "modelwire.protocols.openai_chat.formatter:OpenAIChatFormatter"
    path = "/chat/completions"
    signature = (b'"chat.completion.chunk"', b'"object": "chat.completion"', b'"object":"chat.completion"')
    replay_scope: ReplayScope = "provider"  # mypy infers it from the first base (a mixin)
    replay_keys = ("reasoning_details",)
    extras_keys = ("reasoning_details", "reasoning_field", "refusal", "tool_type")
    capabilities = Capabilities(native_structured_output=True, thinking=True, server_tools=False)
    sdk_package = "openai"

    def formatter_options(self, preset: Preset, model: str = "") -> dict[str, Any]:
        return {key: preset.dialect[key] for key in _FORMATTER_KEYS if key in preset.dialect}

    def stream_fields(self, body: dict[str, Any], preset: Preset) -> None:
        if preset.dialect.get("stream_usage", True):
            body["stream_options"] = {"include_usage": True}

    def capabilities_for(self, preset: Preset) -> Capabilities:
        if preset.dialect.get("json_schema", True):
            return self.capabilities
        return replace(self.capabilities, native_structured_output=False)

    def model_defaults(self, preset: Preset, model: str = "") -> ModelCapabilities:
        return strict_defaults(super().model_defaults(preset, model), preset)

    def schema_problems(self, schema: dict[str, Any]) -> list[str]:
        from ...formatters._schema import NotStrict, SchemaRules, strict_schema

        try:
            strict_schema(schema, SchemaRules(**STRICT_RULES))
        except NotStrict as exc:
            return [str(exc)]
        return []

    def takes_file_ref(self, media_type: str) -> bool:
        return media_type.split(";")[0].strip().lower() == "application/pdf"  # Chat takes files, not images, by id

    def model_info_url(self, base_url: str, model: str, preset: Preset) -> str | None:
        # OpenRouter publishes each model's parameters (``GET /models``); OpenAI's own
        # models endpoint says nothing a request depends on.
        return f"{base_url.rstrip('/')}/models" if preset.dialect.get("model_info") == "openrouter" else None

    def capabilities_from_info(self, data: Any, model: str) -> ModelCapabilities | None:
        """OpenRouter's model list: ``supported_parameters``, ``context_length``,
        ``top_provider.max_completion_tokens``, ``architecture.input_modalities``."""
        rows = data.get("data") if isinstance(data, dict) else None
        row = (
            next((r for r in rows if isinstance(r, dict) and r.get("id") == model), None)
            if isinstance(rows, list)
            else None
        )
        return None if row is None else openrouter_row(row)

    def model_list_url(self, base_url: str, preset: Preset, page: str | None = None) -> str | None:
        return openai_model_list_url(base_url, preset)

    def models_listed(self, data: Any, preset: Preset) -> tuple[list[tuple[str, ModelCapabilities]], str | None]:
        """``{data: [{id, ...}]}``, one page: OpenRouter's rows read as
        :meth:`capabilities_from_info` reads one; OpenAI's say nothing but the id."""
        read = openrouter_row if preset.dialect.get("model_info") == "openrouter" else None
        return openai_models_listed(data, read), None

    prompt_order = ("tools", "messages")

    def apply_cache(
        self,
        body: dict[str, Any],
        plan: CachePlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        kind = preset.dialect.get("prompt_cache")
        if kind == "openai":
            return openai_cache(body, plan, preset, model, caps)
        if kind == "automatic" and plan.key is None and plan.ttl == "5m":
            return  # the provider caches every prefix on its own: nothing to ask
        hint = (
            "the server caches on its own and takes no key or lifetime; use cache=True"
            if kind == "automatic"
            else "the server takes no prompt-caching fields; leave cache out"
        )
        raise refuse("cache", preset, hint, model=model)

    def apply_options(
        self,
        p: dict[str, Any],
        o: ModelOptions,
        /,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        dialect = preset.dialect
        if o.max_tokens is not None:
            p[dialect.get("max_tokens_field", "max_tokens")] = o.max_tokens
        sampling(p, o, stop="stop")
        switch = dialect.get("thinking_switch")
        if o.reasoning_effort is not None:
            _effort(p, o.reasoning_effort, preset, switch, model, caps)
        if o.thinking is not None or o.thinking_budget is not None:
            _thinking(p, o, preset, switch, model, caps)
        if o.thinking_display is not None:
            if switch != "openrouter":
                raise refuse(
                    "thinking_display",
                    preset,
                    (
                        "Chat Completions has no switch for how reasoning is shown; reasoning summaries come "
                        "from openai-responses:"
                    ),
                    model=model,
                )
            # OpenRouter returns the reasoning unless told to exclude it: "summarized" says
            # so explicitly (``exclude: false``) rather than being dropped.
            p.setdefault("reasoning", {})["exclude"] = o.thinking_display == "omitted"
        if o.reasoning_summary is not None:
            raise refuse("reasoning_summary", preset, "summaries come from the Responses API (openai-responses:)")
        if p.get("tools") and caps.tool_use_thinking is False and p.get("reasoning_effort") != "none":
            raise _tools_while_reasoning(preset, model, caps)
        if o.parallel_tool_calls is not None and p.get("tools"):
            p["parallel_tool_calls"] = o.parallel_tool_calls
        elif o.parallel_tool_calls is not None:
            raise refuse("parallel_tool_calls", preset, "it needs tools in the request")
        if o.json_schema is not None:
            p["response_format"] = _response_format(o.json_schema, o.json_schema_name, preset, model, caps)


def _switch(p: dict[str, Any], o: ModelOptions, preset: Preset, switch: str, on: bool) -> None:
    """Thinking on or off (and its budget, where the server takes one) on the server's own
    switch: DeepSeek's, Qwen's, vLLM's chat templates', OpenRouter's."""
    if switch == "deepseek":
        if o.thinking_budget is not None:
            raise refuse("thinking_budget", preset, "DeepSeek takes reasoning_effort, not a budget")
        p["thinking"] = {"type": "enabled" if on else "disabled"}
    elif switch == "qwen":
        p["enable_thinking"] = on
        if o.thinking_budget is not None:
            p["thinking_budget"] = o.thinking_budget
    elif switch == "vllm":
        if o.thinking_budget is not None:
            raise refuse("thinking_budget", preset, "vLLM's chat templates take only a switch")
        p.setdefault("chat_template_kwargs", {})["enable_thinking"] = on
    elif switch == "openrouter":
        reasoning = p.setdefault("reasoning", {})
        reasoning["enabled"] = on
        if o.thinking_budget is not None:
            reasoning["max_tokens"] = o.thinking_budget


def _effort(p: dict[str, Any], effort: str, preset: Preset, switch: Any, model: str, caps: ModelCapabilities) -> None:
    """A reasoning effort, where the server's dialect takes one (OpenRouter: under ``reasoning``)."""
    level = check_effort(effort, caps, preset, model)
    if switch == "openrouter":
        p.setdefault("reasoning", {})["effort"] = level
    elif preset.dialect.get("reasoning_effort"):
        p["reasoning_effort"] = level
    else:
        raise refuse(
            "reasoning_effort",
            preset,
            "this server takes no reasoning_effort; pass its own field in extra_body",
            model=model,
        )


def _tools_while_reasoning(preset: Preset, model: str, caps: ModelCapabilities) -> E.UnsupportedOptionError:
    """Tools refused where the model takes them only with reasoning off (GPT-6 on OpenAI's
    Chat Completions; its reasoning is on unless ``reasoning_effort`` is ``none``): the
    endpoint that takes both named, and thinking=False where the model can stop reasoning."""
    elsewhere = preset.dialect.get("responses_provider")
    where = f"{elsewhere}:{model}, where tools and reasoning go together" if elsewhere else "the Responses API"
    if caps.thinking_off is False:
        hint = f"on this endpoint the model takes tools only with reasoning off, which it cannot turn off; use {where}"
    else:
        hint = (
            f"on this endpoint the model takes tools only with reasoning off; use {where}, or thinking=False "
            "(reasoning_effort 'none')"
        )
    return refuse("tools", preset, hint, model=model)


def _response_format(
    schema: dict[str, Any], name: str, preset: Preset, model: str, caps: ModelCapabilities
) -> dict[str, Any]:
    """Structured output as Chat Completions takes it, strict where the model's schema allows."""
    dialect = preset.dialect
    if not dialect.get("json_schema", True) or caps.structured_output is False:
        raise refuse(
            "json_schema",
            preset,
            "this server takes JSON mode only; ask for JSON in the prompt, or use extra_body",
            model=model,
        )
    schema, strict = strict_format(schema, model, dialect, caps.strict_refused)
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}


def _thinking(
    p: dict[str, Any], o: ModelOptions, preset: Preset, switch: str | None, model: str, caps: ModelCapabilities
) -> None:
    """``thinking`` / ``thinking_budget`` on the server's own switch, or refused."""
    if o.thinking is False and o.thinking_budget:
        raise refuse("thinking_budget", preset, "thinking=False turns thinking off; drop the budget or the False")
    on = o.thinking is not False
    if not on and caps.thinking_off is False:
        raise refuse("thinking", preset, "the model always reasons; thinking=False cannot be honoured", model=model)
    if on and caps.thinking == ():
        raise refuse(
            "thinking" if o.thinking else "thinking_budget",
            preset,
            "the model does not reason; choose one that does",
            model=model,
        )
    if switch is not None:
        _switch(p, o, preset, switch, on)
    elif (
        preset.dialect.get("reasoning_effort")
        and caps.thinking is not None
        and "effort" in caps.thinking
        and o.thinking_budget is None
    ):
        # A reasoning model reached by effort alone: off is effort "none" where the model
        # can stop reasoning; on is "medium" unless a level was given (some models do not
        # reason unless asked).
        if not on:
            if o.reasoning_effort is not None:
                raise refuse(
                    "reasoning_effort",
                    preset,
                    "thinking=False turns reasoning off; drop the effort or the False",
                    model=model,
                )
            p["reasoning_effort"] = "none"
        else:
            # Mistral Medium 3.5 takes none or high only: the highest it has where medium is not one.
            levels = caps.effort or ("medium",)
            p.setdefault("reasoning_effort", "medium" if "medium" in levels else levels[-1])
    else:
        option = "thinking" if o.thinking is not None else "thinking_budget"
        hint = (
            "its reasoning models always reason; set reasoning_effort"
            if preset.dialect.get("reasoning_effort")
            else "choose a reasoning model, or pass the server's own switch in extra_body"
        )
        raise refuse(option, preset, hint, model=model)


PROTOCOL = OpenAIChatProtocol()


def openai_cache(body: dict[str, Any], plan: CachePlan, preset: Preset, model: str, caps: ModelCapabilities) -> None:
    """OpenAI's prompt caching: automatic on every prefix, so only a routing key
    (``prompt_cache_key``) and, for ``ttl="1h"``, a lifetime of at least that: the 12-hour
    ``prompt_cache_options.ttl`` on models that take it (GPT-5.6 on), else the 24-hour
    ``prompt_cache_retention``. OpenAI places its own breakpoint (``placement`` and the
    system / tools / history marks have nothing to do here)."""
    if plan.key is not None:
        body["prompt_cache_key"] = plan.key
    if plan.ttl == "1h":
        if caps.cache_ttls is not None and "12h" in caps.cache_ttls:
            body["prompt_cache_options"] = {"ttl": "12h"}
        else:
            body["prompt_cache_retention"] = "24h"


def openrouter_row(row: Mapping[str, Any]) -> ModelCapabilities:
    """One row of OpenRouter's model list (``GET /models``): ``supported_parameters``,
    ``context_length``, ``top_provider.max_completion_tokens``, ``architecture.input_modalities``."""
    values: dict[str, Any] = {}
    params = row.get("supported_parameters")
    if isinstance(params, list):
        values["structured_output"] = "structured_outputs" in params
        values["sampling"] = "temperature" in params
        if not {"reasoning", "include_reasoning"} & set(params):
            values["thinking"] = []
        if "tool_choice" not in params and "tools" in params:
            values["forced_tool"] = False
    modalities = (row.get("architecture") or {}).get("input_modalities")
    if isinstance(modalities, list):
        values.update(
            image_input="image" in modalities, pdf_input="file" in modalities, audio_input="audio" in modalities
        )
    limits = (
        ("context_window", row.get("context_length")),
        ("max_output_tokens", (row.get("top_provider") or {}).get("max_completion_tokens")),
    )
    for name, value in limits:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            values[name] = value
    return ModelCapabilities.from_mapping(values, "provider: GET /models")
