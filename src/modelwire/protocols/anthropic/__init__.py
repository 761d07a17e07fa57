"""The Anthropic Messages protocol (``POST /v1/messages``, streamed).

Its adapter is :mod:`.adapter`, its formatter :mod:`.formatter`; this module says how a
request is built, how options map onto it and what it can do. Its parts beside the core are
their own modules: the Files and Batches APIs (:mod:`._files`), the Models API
(:mod:`._discovery`) and how the test server fakes it (:mod:`._fakes`). Thinking it
produced is valid on every server that speaks it (``replay_scope = "protocol"``), unless the
endpoint family it was minted by says otherwise.

Claude is also reached through two clouds with the same messages and events and their own
request (a preset's ``dialect["endpoint"]``):

- ``vertex``: ``POST .../publishers/anthropic/models/{model}:streamRawPredict`` on Vertex AI,
  ``anthropic_version: "vertex-2023-10-16"`` in the body and no ``model``; Google credentials.
- ``bedrock``: ``POST /model/{model}/invoke-with-response-stream`` on Bedrock's runtime,
  ``anthropic_version: "bedrock-2023-05-31"``, neither ``model`` nor ``stream`` in the body;
  the answer is AWS's event stream whose ``chunk`` frames carry each Anthropic event as
  base64 (:class:`InvokeStreamDecoder`); SigV4 or a Bedrock API key.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping

from ... import errors as E
from .._caps import Refusal, levels_in, levels_up_to
from .._claude import MIN_BUDGET, claude_fields, claude_schema
from .._protocol import (
    DEFAULT_MAX_TOKENS,
    CachePlan,
    Capabilities,
    CompactionPlan,
    ModelCapabilities,
    ModelOptions,
    Preset,
    WireProtocol,
    rate_limit_shape,
    refuse,
    sampling,
)
from ._discovery import AnthropicDiscovery
from ._fakes import AnthropicTestSupport
from ._files import AnthropicFilesAndBatches
from .presets import PRESETS

if TYPE_CHECKING:
    from ...formatters._common import ReplayScope

__all__ = ["PROTOCOL", "AnthropicProtocol", "ENDPOINT_VERSIONS"]

# The anthropic_version each cloud endpoint wants in the body.
ENDPOINT_VERSIONS = {"vertex": "vertex-2023-10-16", "bedrock": "bedrock-2023-05-31"}
# What count_tokens takes of a Messages request (the SDK's MessageCountTokensParams, and the
# beta fields of its beta twin): sampling, limits and streaming are left out.
_COUNTED = frozenset(
    {
        "messages",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "mcp_servers",
        "context_management",
        "cache_control",
        "speed",
    }
)
_VERTEX_PATH = "/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:streamRawPredict"
_EVENTSTREAM = "application/vnd.amazon.eventstream"

log = logging.getLogger("modelwire.protocols.anthropic")


class AnthropicProtocol(AnthropicFilesAndBatches, AnthropicDiscovery, AnthropicTestSupport, WireProtocol):
    name = "anthropic"
    presets = PRESETS
    error_types = {
        "overloaded_error": E.OverloadedError,
        "api_error": E.UpstreamError,
        "rate_limit_error": E.RateLimitError,
        "authentication_error": E.AuthenticationError,
        "permission_error": E.PermissionDeniedError,
        "invalid_request_error": E.InvalidRequestError,
        "not_found_error": E.InvalidRequestError,
        "request_too_large": E.InvalidRequestError,
    }

    def rate_limits(self, headers: Mapping[str, str]) -> dict[str, Any] | None:
        """``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}``
        (the reset an RFC 3339 time) and ``retry-after``
        (https://docs.anthropic.com/en/api/rate-limits#response-headers)."""
        names = {
            kind: tuple(
                f"anthropic-ratelimit-{kind.replace('_', '-')}-{part}" for part in ("limit", "remaining", "reset")
            )
            for kind in ("requests", "tokens", "input_tokens", "output_tokens")
        }
        return rate_limit_shape(headers, names, reset_is_duration=False)  # type: ignore[arg-type]

    refusals = (
        Refusal(
            r'"?thinking\.type\.disabled"? is not supported for this model',
            "thinking",
            lambda m: {"thinking_off": False},
            "the API's 400 to claude-opus-5-5 and claude-fable-5-1 with thinking off, as users reported it in 2026-11: "
            '\'"thinking.type.disabled" is not supported for this model. Use '
            '"thinking.type.adaptive" and "output_config.effort"\'',
        ),
        Refusal(
            r'"?thinking\.type\.enabled"? is not supported for this model',
            "thinking_budget",
            lambda m: {"thinking": ["adaptive"]},
            "the 400 to claude-sonnet-5 with thinking.type enabled, which must be adaptive (on "
            "Bedrock, aaronrussell/anthropix#20,"
            " 2026-08-22), in the words of its thinking.type.disabled sibling ('Use "
            "thinking.type.adaptive and output_config.effort')",
        ),
        Refusal(
            r"Only 'enabled' and 'disabled' are supported for thinking; 'adaptive' is not supported",
            "thinking",
            lambda m: {"thinking": ["budget"]},
            "a compatible server's 400 to adaptive thinking (Qwen on DashScope's Anthropic route): "
            "\"Only 'enabled' and 'disabled' are"
            " supported for thinking; 'adaptive' is not supported.\" (anthropics/claude-code#29531, 2026-02-28)",
        ),
        Refusal(
            r"thinking may not be enabled when tool_choice forces tool use",
            "tool_choice",
            lambda m: {"forced_tool_thinking": False},
            (
                "the API's 400 to a forced tool_choice with thinking on (run-llama/llama_index#19641, "
                "2025-08-11; on Bedrock, can1357/oh-my-pi#341, 2026-03-09)"
            ),
        ),
        Refusal(
            r"supported levels: ([a-z, ]+)",
            "reasoning_effort",
            lambda m: {"effort": list(levels_in(m.group(1)))},
            "a recorded claude-opus-4-6 400 to an effort it lacks: 'Supported levels: high, low, max, medium'",
        ),
        Refusal(
            (
                r"effort '?(\w+)'? is not supported when thinking is disabled on this model\. Use effort "
                r"'?(\w+)'? or below"
            ),
            "reasoning_effort",
            lambda m: {"thinking_off_effort": list(levels_up_to(m.group(2)))},
            "the API's 400 to claude-opus-5 with thinking off at effort xhigh: "
            "\"output_config.effort 'xhigh' is not supported when thinking"
            " is disabled on this model. Use effort 'high' or below, or enable thinking.\" "
            "(anthropics/claude-code#81084, 2026-07-25)",
        ),
        Refusal(
            r"`?(?:temperature|top_p|top_k)`? is deprecated for this model",
            "temperature",
            lambda m: {"sampling": False},
            'the API\'s 400 to claude-opus-4-7 with a temperature: "`temperature` is deprecated for this model."'
            " (UKGovernmentBEIS/inspect_ai#3721, 2026-04-20; on Bedrock, DayuanJiang/next-ai-draw-io#861, 2026-06-06)",
        ),
        Refusal(
            r"budget_tokens: Input should be greater than or equal to (\d+)",
            "thinking_budget",
            lambda m: {"budget_min": int(m.group(1))},
            "the API's 400 to a thinking budget under its floor: 'thinking.enabled.budget_tokens: "
            "Input should be greater than or"
            " equal to 1024' (through Bedrock, danny-avila/LibreChat#8346, 2025-07-09; "
            "tingly-dev/tingly-box#569, 2026-03-26)",
        ),
        Refusal.unknown_field(
            r"(?:^|\s)([a-z_]+): Extra inputs are not permitted",  # a top-level field only (no dotted path)
            "a server's 400 to a field it does not know: 'output_config: Extra inputs are not permitted' "
            "(ding113/claude-code-hub#662, 2026-01-27); 'context_management: Extra inputs are not permitted' "
            "(caozhiyuan/copilot-api#305, 2026-07-02)",
        ),
        Refusal(
            r"`?temperature`? and `?top_p`? cannot both be specified for this model",
            "top_p",
            lambda m: {"sampling_one_of": True},
            "the API's 400 to both sampling parameters on Claude 4.1 and later: \"`temperature` and `top_p` cannot "
            'both be specified for this model. Please use only one." (Vali-98/ChatterUI#564, 2026-05-16; on '
            "Bedrock, skydiscover-ai/skydiscover#15, 2026-03-10)",
        ),
        Refusal(
            r"max_tokens: \d+ > (\d+), which is the maximum allowed number of output tokens",
            "max_tokens",
            lambda m: {"max_output_tokens": int(m.group(1))},
            "the API's 400 to a max_tokens above the model's: 'max_tokens: 200000 > 64000, which is the maximum "
            "allowed number of output tokens for claude-sonnet-4-5-20250929' (on Vertex, BerriAI/litellm#15715, "
            "2025-10-19)",
        ),
        Refusal(
            r"tool_use\.id: String should match pattern '([^']+)'",
            "tool_id",
            lambda m: {"tool_id_pattern": m.group(1)},
            "the API's 400 to a tool-call id from elsewhere: \"messages.1.content.1.tool_use.id: "
            "String should match pattern"
            " '^[a-zA-Z0-9_-]+$'\" (CommandCodeAI/command-code#323, 2026-05-06; through a gateway, "
            "tailcallhq/forgecode#1142, 2025-07-20)",
        ),
        Refusal(
            r"tools\.\d+\.(?:custom\.)?name: String should match pattern '([^']+)'",
            "tool_name",
            lambda m: {"tool_name_pattern": m.group(1)},
            "the API's 400 to a tool name: \"tools.7.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'\""
            " (apify/tester-mcp-client#11, 2025-03-07)",
        ),
    )
    # endpoint: Claude on a cloud (where the model goes, how it streams); model_info: the
    # provider publishes its models (the Models API)
    dialect_keys = {"endpoint": {"vertex", "bedrock"}, "model_info": {"anthropic"}}
    description = "Anthropic Messages"
    adapter = "modelwire.protocols.anthropic.adapter:AnthropicAdapter"
    conform = "modelwire.protocols.anthropic._conform:CHECKS"
    formatter = "modelwire.protocols.anthropic.formatter:AnthropicFormatter"
    path = "/v1/messages"
    signature = (
        b"event: message_start",
        b'"type": "message_start"',
        b'"type":"message_start"',
        b'"content_block_delta"',
    )
    replay_scope: ReplayScope = "protocol"  # mypy infers it from the first base (a mixin)
    replay_keys = ("signature", "redacted_thinking_data")
    extras_keys = ("signature", "redacted_thinking_data", "citations", "server_name", "caller")
    capabilities = Capabilities(native_structured_output=False, thinking=True, server_tools=True)
    sdk_package = "anthropic"

    def sdk_base_url(self, base_url: str) -> str:
        base_url = base_url.rstrip("/")
        return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url

    # -- the cloud endpoints -----------------------------------------------------------------

    def url(self, base_url: str, model: str, preset: Preset, env: Any = None) -> str:
        import os
        from urllib.parse import quote

        endpoint = preset.dialect.get("endpoint")
        env = os.environ if env is None else env
        if endpoint == "vertex":
            from ..gemini import vertex_place

            base, project, location = vertex_place(base_url, preset, env)
            return base + _VERTEX_PATH.format(project=project, location=location, model=model)
        if endpoint == "bedrock":
            from ..bedrock import regional

            return regional(base_url, preset, env) + f"/model/{quote(model, safe='')}/invoke-with-response-stream"
        return super().url(base_url, model, preset, env)

    def whole_url(self, url: str, preset: Preset) -> str:
        path, sep, query = url.partition("?")
        for streamed, whole in ((":streamRawPredict", ":rawPredict"), ("/invoke-with-response-stream", "/invoke")):
            if path.endswith(streamed):
                return path[: -len(streamed)] + whole + sep + query
        return url

    def count_request(
        self, url: str, body: dict[str, Any], model: str, preset: Preset
    ) -> tuple[str, dict[str, Any]] | None:
        """``POST /v1/messages/count_tokens`` (https://docs.claude.com/en/api/messages-count-tokens):
        the fields it takes of the request. Claude on Vertex: ``.../models/count-tokens:rawPredict``
        with the model in the body
        (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/count-tokens);
        on Bedrock: ``CountTokens`` around the invoke body (botocore's ``CountTokens`` shape)."""
        import base64
        import json

        path, _, query = url.partition("?")
        endpoint = preset.dialect.get("endpoint")
        kept = {k: v for k, v in body.items() if k in _COUNTED}
        if endpoint == "bedrock":
            invoke = {k: v for k, v in body.items() if k != "stream"}
            return path.rsplit("/", 1)[0] + "/count-tokens", {
                "input": {"invokeModel": {"body": base64.b64encode(json.dumps(invoke).encode()).decode()}}
            }
        if endpoint == "vertex":
            return path.rsplit("/models/", 1)[0] + "/models/count-tokens:rawPredict", {"model": model, **kept}
        return path.rstrip("/") + "/count_tokens" + (f"?{query}" if query else ""), {"model": model, **kept}

    claimed_types = ("thinking",)

    def claims(self, block_type: str, fields: Mapping[str, Any], block_id: str) -> bool:
        # AgentScope's fields for Claude's thinking: its signature, or the redacted data.
        return block_type == "thinking" and bool(
            fields.get("signature") or fields.get("redacted_thinking_data") is not None
        )

    def matches_url(self, url: str) -> bool:
        path = url.split("?")[0].rstrip("/")
        return path.endswith(
            (":streamRawPredict", ":rawPredict", "/invoke-with-response-stream", "/invoke")
        ) or super().matches_url(url)

    def body(
        self,
        model: str,
        payload: dict[str, Any],
        options: ModelOptions,
        preset: Preset,
        caps: ModelCapabilities | None = None,
    ) -> dict[str, Any]:
        from ._body import MESSAGE_EFFORT_BETA, betas_for

        endpoint = preset.dialect.get("endpoint")
        body = super().body(model, payload, options, preset, caps)
        if endpoint in ENDPOINT_VERSIONS and body.get("mcp_servers"):
            raise refuse(
                "tools",
                preset,
                f"Claude on {endpoint.title()} has no MCP connector: run the server from the agent instead (MCPServer)",
                model=model,
            )
        if endpoint in ENDPOINT_VERSIONS:
            body.pop("model", None)  # in the URL
            if endpoint == "vertex" and MESSAGE_EFFORT_BETA in betas_for(body):
                raise refuse(
                    "reasoning_effort",
                    preset,
                    "Claude on Vertex AI is not known to take an effort change in mid-conversation (metadata "
                    "'reasoning_effort' on a system message); set reasoning_effort for the call instead",
                    model=model,
                )
            if endpoint == "bedrock":
                body.pop("stream", None)  # the endpoint streams
                beta = {k.lower(): v for k, v in options.extra_headers.items()}.get("anthropic-beta")
                given = [b.strip() for b in beta.split(",") if b.strip()] if beta else []
                # What the body needs goes there too: "With the Amazon Bedrock InvokeModel API, send the
                # beta value in the request body's anthropic_beta array, not as a header"
                # (https://platform.claude.com/docs/zh-CN/build-with-claude/effort-per-message, in translation).
                given += [b for b in betas_for(body) if b not in given]
                if given:  # Bedrock takes the betas in the body, not as a header
                    body.setdefault("anthropic_beta", given)
            body = {"anthropic_version": ENDPOINT_VERSIONS[endpoint], **body}
        return body

    def headers(self, api_key: str | None, preset: Preset, extra: Any = None) -> dict[str, str]:
        headers = super().headers(api_key, preset, extra)
        if preset.dialect.get("endpoint") == "bedrock":
            headers["accept"] = _EVENTSTREAM
            for name in [k for k in headers if k.lower() == "anthropic-beta"]:
                del headers[name]  # sent in the body (see body())
        return headers

    def request_headers(self, body: dict[str, Any], headers: dict[str, str], preset: Preset) -> dict[str, str]:
        from ._body import betas_for

        needed = betas_for(body)
        if not needed or preset.dialect.get("endpoint") == "bedrock":  # in the body there (see body())
            return headers
        key = next((k for k in headers if k.lower() == "anthropic-beta"), "anthropic-beta")
        given = [b.strip() for b in headers.get(key, "").split(",") if b.strip()]
        headers[key] = ",".join(given + [b for b in needed if b not in given])
        return headers

    def stream_content_type(self, preset: Preset) -> str:
        return _EVENTSTREAM if preset.dialect.get("endpoint") == "bedrock" else self.content_type

    def decoder_for(self, adapter: Any, preset: Preset, *, keep: bool = False) -> Any:
        if preset.dialect.get("endpoint") == "bedrock":
            from ._invoke import InvokeStreamDecoder

            return InvokeStreamDecoder(adapter, keep=keep)
        return self.decoder(adapter, keep=keep)

    def model_defaults(self, preset: Preset, model: str = "") -> ModelCapabilities:
        # Any server speaking the protocol takes the budget form; output_config.format only
        # where the model is known to take it.
        return ModelCapabilities(
            structured_output=False, sources={"structured_output": "the anthropic protocol (not known for this model)"}
        )

    def apply_options(
        self,
        p: dict[str, Any],
        o: ModelOptions,
        /,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        p["max_tokens"] = o.max_tokens or DEFAULT_MAX_TOKENS
        sampling(p, o, stop="stop_sequences")
        forced = (p.get("tool_choice") or {}).get("type") in ("any", "tool")
        fields = claude_fields(o, preset, model, caps, p["max_tokens"], forced_tool=forced, default_budget=MIN_BUDGET)
        if o.reasoning_summary is not None:
            raise refuse(
                "reasoning_summary",
                preset,
                "Claude streams its thinking itself; use thinking=True, and thinking_display",
            )
        if o.parallel_tool_calls is not None:
            if o.parallel_tool_calls is False:
                choice = p.setdefault("tool_choice", {"type": "auto"})
                choice["disable_parallel_tool_use"] = True
            # True is Anthropic's default: nothing to send.
        if o.json_schema is not None:
            if not caps.structured_output:
                raise refuse(
                    "json_schema",
                    preset,
                    "the model is not known to take output_config.format; ask for structured output through a tool (the"
                    " agent's structured_model does this), or say capabilities={'structured_output': True}",
                    model=model,
                )
            fields.setdefault("output_config", {})["format"] = {
                "type": "json_schema",
                "schema": claude_schema(o.json_schema, preset, model),
            }
        if o.task_budget is not None:  # the model takes it: checked in body()
            budget = o.task_budget if isinstance(o.task_budget, dict) else {"total": o.task_budget}
            fields.setdefault("output_config", {})["task_budget"] = {"type": "tokens", **budget}
        p.update(fields)

    prompt_order = ("tools", "system", "messages")
    cache_marker_keys = ("cache_control",)

    def apply_cache(
        self,
        body: dict[str, Any],
        plan: CachePlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        if plan.key is not None:
            raise refuse(
                "cache",
                preset,
                "Anthropic takes no cache key (its cache follows the prompt's prefix); leave key out",
                model=model,
            )
        if plan.placement == "provider":
            if preset.dialect.get("endpoint") in ENDPOINT_VERSIONS:
                raise refuse(
                    "cache",
                    preset,
                    (
                        "the top-level cache_control (automatic placement) is Anthropic's own API's; use "
                        "placement='breakpoints'"
                    ),
                    model=model,
                )
            body["cache_control"] = {"type": "ephemeral", **({"ttl": plan.ttl} if plan.ttl != "5m" else {})}
            return
        from ._body import place_cache

        place_cache(body, plan.ttl, self.name, system=plan.system, tools=plan.tools, history=plan.history)

    def apply_compaction(
        self,
        body: dict[str, Any],
        plan: CompactionPlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        """Server-side compaction: ``context_management.edits`` with a ``compact_20260112``
        edit (the anthropic SDK's BetaCompact20260112EditParam), and its beta header (see
        ``_body.betas_for``)."""
        from ._body import COMPACT_EDIT, COMPACT_MIN_TRIGGER

        endpoint = preset.dialect.get("endpoint")
        if endpoint in ENDPOINT_VERSIONS:
            raise refuse(
                "compaction",
                preset,
                f"Claude on {endpoint.title()} is not known to take the compaction beta; "
                "send it yourself in extra_body if the cloud takes it",
                model=model,
            )
        if plan.threshold is not None and plan.threshold < COMPACT_MIN_TRIGGER:
            raise refuse(
                "compaction",
                preset,
                f"Claude compacts at {COMPACT_MIN_TRIGGER} input tokens at the least "
                "(https://platform.claude.com/docs/en/build-with-claude/compaction)",
                model=model,
            )
        edit: dict[str, Any] = {"type": COMPACT_EDIT}
        if plan.threshold is not None:
            edit["trigger"] = {"type": "input_tokens", "value": plan.threshold}
        if plan.pause:
            edit["pause_after_compaction"] = True
        if plan.instructions:
            edit["instructions"] = plan.instructions
        context = body.setdefault("context_management", {})
        context.setdefault("edits", []).append(edit)

    def apply_clear_tool_uses(self, body: dict[str, Any], value: Any, preset: Preset, model: str = "") -> None:
        """Context editing: a ``clear_tool_uses_20250919`` edit in ``context_management.edits``
        (the anthropic SDK's BetaClearToolUses20250919EditParam), and its beta header (see
        ``_body.betas_for``): the server clears the oldest tool results (and, with
        ``clear_tool_inputs``, their calls' inputs) once the trigger is passed, keeping the
        last ``keep`` tool uses; the history sent is not changed."""
        from ._body import CLEAR_TOOL_USES_EDIT

        endpoint = preset.dialect.get("endpoint")
        if endpoint in ENDPOINT_VERSIONS:
            raise refuse(
                "clear_tool_uses",
                preset,
                f"Claude on {endpoint.title()} is not known to take the context-editing beta here; "
                "send it yourself in extra_body if the cloud takes it",
                model=model,
            )
        given = value if isinstance(value, dict) else {}
        edit: dict[str, Any] = {"type": CLEAR_TOOL_USES_EDIT}
        trigger = given.get("trigger")
        if trigger is not None:
            kind, count = ("input_tokens", trigger) if isinstance(trigger, int) else next(iter(trigger.items()))
            edit["trigger"] = {"type": kind, "value": count}
        if given.get("keep") is not None:
            edit["keep"] = {"type": "tool_uses", "value": given["keep"]}
        if given.get("clear_at_least") is not None:
            edit["clear_at_least"] = {"type": "input_tokens", "value": given["clear_at_least"]}
        for key in ("exclude_tools", "clear_tool_inputs"):
            if given.get(key) is not None:
                edit[key] = given[key]
        context = body.setdefault("context_management", {})
        context.setdefault("edits", []).insert(0, edit)  # before a compaction edit, which sees what is left


PROTOCOL = AnthropicProtocol()
