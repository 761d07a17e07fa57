"""Google Gemini's own protocol (``generateContent``, streamed with ``alt=sse``), on the
Gemini API and on Vertex AI.

Gemini's OpenAI-compatible endpoint loses what agents need (thought signatures, which
Gemini 3 requires back on function calls, server-side tools, grounding); this speaks the
native one. The two endpoints differ only in URL and auth, which the presets carry:

- ``google``: ``{base}/v1beta/models/{model}:streamGenerateContent?alt=sse``, key in
  ``x-goog-api-key``;
- ``vertex``: ``{base}/v1/projects/{project}/locations/{location}/publishers/google/models/
  {model}:streamGenerateContent?alt=sse`` (project and location from
  ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``), a bearer token.

``model`` is in the URL and ``stream`` is the endpoint, so neither goes in the body.
Signatures are replayed only to the provider that made them (``replay_scope = "provider"``).
The Files and Batch APIs are :mod:`._files`, the test server's fakes :mod:`._fakes`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping

from ...errors import ConfigError
from ... import errors as E
from .._caps import Refusal
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
from ._fakes import GeminiTestSupport
from ._files import GeminiFilesAndBatches
from .presets import PRESETS

if TYPE_CHECKING:
    from ...formatters._common import ReplayScope

# An effort level as a thinking budget, for models that take only a budget (Gemini 2.5):
# within every 2.5 model's range (Pro 128..32768, Flash 0..24576).
_EFFORT_BUDGETS = {"minimal": 512, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 24576, "max": 24576}


def vertex_place(base_url: str, preset: Preset, env: Mapping[str, str]) -> tuple[str, str, str]:
    """Vertex AI's base URL, project and location (``GOOGLE_CLOUD_PROJECT``,
    ``GOOGLE_CLOUD_LOCATION``, default ``global``): a regional host unless the base URL was
    changed."""
    project = env.get("GOOGLE_CLOUD_PROJECT")
    if not project:
        raise ConfigError(f"{preset.name} needs a project: set GOOGLE_CLOUD_PROJECT")
    location = env.get("GOOGLE_CLOUD_LOCATION") or "global"
    base = base_url.rstrip("/")
    if base == preset.base_url.rstrip("/") and location != "global":
        base = f"https://{location}-aiplatform.googleapis.com"
    return base, project, location


__all__ = ["PROTOCOL", "vertex_place", "GeminiProtocol", "GEMINI_TS"]

_VERTEX_PATH = "/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:streamGenerateContent"


# AgentScope's Gemini model writes a function call's thought signature into the call's id:
# "gemini_ts:" + the signature (base64).
GEMINI_TS = "gemini_ts:"


class GeminiProtocol(GeminiFilesAndBatches, GeminiTestSupport, WireProtocol):
    name = "gemini"
    presets = PRESETS
    refusals = (
        Refusal(
            (
                r"Budget 0 is invalid\. This model only works in thinking mode|does not support setting "
                r"thinking_budget to 0|Thinking can't be disabled for this model"
            ),
            "thinking",
            lambda m: {"thinking_off": False},
            "Gemini's 400 to gemini-2.5-pro with thinking off: 'Budget 0 is invalid. This model only "
            "works in thinking mode.'"
            " (snailyp/gemini-balance#206, 2025-07-14); 'The model does not support setting thinking_budget to 0.'"
            " (GewoonJaap/gemini-cli-openai#22, 2025-07-06); on Vertex, 'Unable to submit request because Thinking"
            " can't be disabled for this model.' (pydantic/pydantic-ai#1967, 2025-06-12)",
        ),
        Refusal(
            r"Thinking level is not supported for this model",
            "reasoning_effort",
            lambda m: {"thinking": ["budget"]},
            "Gemini's 400 to thinkingLevel on a model that takes budgets (gemini-2.5-flash): 'Thinking level is "
            "not supported for this model.' (RooCodeInc/Roo-Code#10700, 2026-01-13)",
        ),
        Refusal(
            r"thinking is not supported by this model|Thinking is not enabled for models/",
            "thinking",
            lambda m: {"thinking": []},
            "Google's 400 to a thinkingConfig on a model that does not think: 'Unable to submit request because "
            "thinking is not supported by this model.' (on Vertex, googleapis/js-genai#681, 2025-06-12); "
            "'Thinking is not enabled for models/gemini-2.0-flash-preview-image-generation' (lobehub/lobehub#7985,"
            " 2025-05-27)",
        ),
        Refusal.unknown_field(
            # top level: no "at 'path'"
            r'Invalid JSON payload received\. Unknown name \\?"(\w+)\\?": Cannot find field',
            "Google's 400 to a request field it does not know: 'Invalid JSON payload received. "
            'Unknown name "google": Cannot find'
            " field.' (Alishahryar1/free-claude-code#542, 2026-05-24); '... Unknown name \"stream\": "
            "Cannot find field.'"
            " (sourcegraph/cody#4566, 2024-06-14)",
        ),
    )
    error_types = {  # Google's canonical status names (Gemini API, Vertex AI)
        "resource_exhausted": E.RateLimitError,
        "unauthenticated": E.AuthenticationError,
        "permission_denied": E.PermissionDeniedError,
        "invalid_argument": E.InvalidRequestError,
        "failed_precondition": E.InvalidRequestError,
        "not_found": E.InvalidRequestError,
        "out_of_range": E.InvalidRequestError,
        "unavailable": E.OverloadedError,
        "internal": E.UpstreamError,
        "deadline_exceeded": E.UpstreamError,
    }
    dialect_keys = {"endpoint": {"vertex"}}  # Vertex AI: its URL and its credentials
    credential_kinds = {"google": "modelwire.protocols.gemini._credentials:GoogleCredentials"}  # Vertex AI
    secret_envs = ("GOOGLE_ACCESS_TOKEN",)
    # Vertex AI's project, location and token (vertex_place, GoogleCredentials) and google-auth's
    # GOOGLE_APPLICATION_CREDENTIALS (https://cloud.google.com/docs/authentication/application-default-credentials).
    environ_prefixes = ("GOOGLE_",)
    description = "Google Gemini (Gemini API and Vertex AI)"
    adapter = "modelwire.protocols.gemini.adapter:GeminiAdapter"
    formatter = "modelwire.protocols.gemini.formatter:GeminiFormatter"
    path = "/v1beta/models/{model}:streamGenerateContent"
    model_in_body = False
    stream_in_body = False
    signature = (b'"candidates"', b'"usageMetadata"', b'"promptFeedback"')
    replay_scope: ReplayScope = "provider"  # mypy infers it from the first base (a mixin)
    replay_keys = ("thought_signature",)
    extras_keys = ("thought_signature", "server_call_id")
    capabilities = Capabilities(
        native_structured_output=True, thinking=True, server_tools=True, parallel_tool_calls=True
    )
    whole_tool_calls = True  # a functionCall part holds the whole call (and its thought signature)

    def url(self, base_url: str, model: str, preset: Preset, env: Mapping[str, str] | None = None) -> str:
        env = os.environ if env is None else env
        if preset.dialect.get("endpoint") != "vertex":
            return super().url(base_url, model, preset, env) + "?alt=sse"
        base, project, location = vertex_place(base_url, preset, env)
        return base + _VERTEX_PATH.format(project=project, location=location, model=model) + "?alt=sse"

    claimed_types = ("tool_call",)

    def claims(self, block_type: str, fields: Mapping[str, Any], block_id: str) -> bool:
        # AgentScope 2.x keeps a Gemini call's thought signature in the call's id; 1.x's
        # GeminiChatModel under the call's "thought_signature" key (agentscope 1.0.21,
        # model/_gemini_model.py), the name modelwire gives that extra too.
        return block_type == "tool_call" and (
            block_id.startswith(GEMINI_TS) or isinstance(fields.get("thought_signature"), str)
        )

    def whole_url(self, url: str, preset: Preset) -> str:
        path, _, query = url.partition("?")
        rest = "&".join(part for part in query.split("&") if part and part != "alt=sse")
        return path.replace(":streamGenerateContent", ":generateContent") + (f"?{rest}" if rest else "")

    def error(self, body: Any, status: int | None = None, request_id: str | None = None) -> E.ProviderError:
        """A quota spent for the day is a :class:`~modelwire.errors.QuotaExceededError`, whatever
        wait its RetryInfo names: a ``google.rpc.QuotaFailure`` violation whose ``quotaId`` counts
        per day (``GenerateRequestsPerDayPerProjectPerModel-FreeTier``, google-gemini/gemini-cli#8437,
        2025-09-14; ``GenerateRequestsPerDayPerProjectPerModel``, langgenius/dify#19838, 2025-05-16)."""
        err = super().error(body, status=status, request_id=request_id)
        if isinstance(err, E.RateLimitError) and not isinstance(err, E.QuotaExceededError) and _per_day(body):
            quota = E.QuotaExceededError(
                err.message,
                provider_type=err.provider_type,
                status_code=err.status_code,
                request_id=request_id,
                body=body,
            )
            return quota
        return err

    def retry_after_in(self, body: Mapping[str, Any]) -> float | None:
        """A 429's ``google.rpc.RetryInfo`` detail, ``retryDelay: "34.4s"`` (the body vercel/ai's
        ``packages/google/src/__fixtures__/google-429-retry-info.json`` recorded): Gemini sends
        no rate-limit headers."""
        error = body.get("error") if isinstance(body, Mapping) else None
        for detail in (error.get("details") or ()) if isinstance(error, Mapping) else ():
            delay = (
                detail.get("retryDelay")
                if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo")
                else None
            )
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    return float(delay[:-1])
                except ValueError:
                    return None
        return None

    def count_request(
        self, url: str, body: dict[str, Any], model: str, preset: Preset
    ) -> tuple[str, dict[str, Any]] | None:
        """``:countTokens``: on the Gemini API the whole request as ``generateContentRequest``
        (https://ai.google.dev/api/tokens: system instruction and tools counted too); on Vertex
        the request's fields themselves (google-genai's ``_CountTokensConfig_to_vertex``)."""
        path = self.whole_url(url, preset).replace(":generateContent", ":countTokens")
        if preset.dialect.get("endpoint") == "vertex":
            return path, {
                k: v for k, v in body.items() if k in ("contents", "systemInstruction", "tools", "generationConfig")
            }
        return path, {"generateContentRequest": {"model": f"models/{model}", **body}}

    def matches_url(self, url: str) -> bool:
        return ":streamGenerateContent" in url.split("?")[0] or url.split("?")[0].endswith(":generateContent")

    def answer_events(self, answer: Any) -> list[tuple[str | None, Any]]:
        # generateContent answers and streamed chunks share one shape; some servers send a list
        return [(None, chunk) for chunk in (answer if isinstance(answer, list) else [answer])]

    def model_info_url(self, base_url: str, model: str, preset: Preset) -> str | None:
        if preset.dialect.get("endpoint") == "vertex":
            return None  # Vertex publishes no per-model limits for Gemini
        return f"{base_url.rstrip('/')}/v1beta/models/{model}"

    def capabilities_from_info(self, data: Any, model: str) -> ModelCapabilities | None:
        """``models.get``: ``inputTokenLimit``, ``outputTokenLimit``, ``thinking``."""
        if not isinstance(data, dict) or not str(data.get("name", "")).endswith(model.rsplit("/", 1)[-1]):
            return None
        values: dict[str, Any] = {}
        for name, key in (("context_window", "inputTokenLimit"), ("max_output_tokens", "outputTokenLimit")):
            if isinstance(data.get(key), int) and not isinstance(data.get(key), bool) and data[key] > 0:
                values[name] = data[key]
        if data.get("thinking") is False:
            values["thinking"] = []
        return ModelCapabilities.from_mapping(values, "provider: models.get")

    def model_list_url(self, base_url: str, preset: Preset, page: str | None = None) -> str | None:
        # models.list pages with pageSize (at most 1000) and pageToken (https://ai.google.dev/api/models).
        if preset.dialect.get("endpoint") == "vertex":
            return None
        from urllib.parse import urlencode

        query = {"pageSize": "1000", **({"pageToken": page} if page else {})}
        return f"{base_url.rstrip('/')}/v1beta/models?{urlencode(query)}"

    def models_listed(self, data: Any, preset: Preset) -> tuple[list[tuple[str, ModelCapabilities]], str | None]:
        """``{models: [Model], nextPageToken}``: the models that take ``generateContent`` (not
        the embedding ones), each read as :meth:`capabilities_from_info` reads ``models.get``."""
        rows = data.get("models", []) if isinstance(data, dict) else None
        if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in rows):
            raise ValueError("not a model list: no models with names")
        listed = [
            (row["name"].removeprefix("models/"), self.capabilities_from_info(row, row["name"]) or ModelCapabilities())
            for row in rows
            if "generateContent" in (row.get("supportedGenerationMethods") or ["generateContent"])
        ]
        token = data.get("nextPageToken")
        return listed, (token if isinstance(token, str) and token else None)

    prompt_order = ("tools", "toolConfig", "systemInstruction", "contents")

    # What a cachedContent holds that a request using it must not send again (the API
    # answers 400 "CachedContent can not be used with ... system_instruction, tools or
    # tool_config").
    _CACHED_FIELDS = ("systemInstruction", "tools", "toolConfig")

    def apply_cache(
        self,
        body: dict[str, Any],
        plan: CachePlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        """Gemini caches the conversation's prefix implicitly (2.5 and later); an explicit
        ``cachedContent`` holding the system instruction and the tools is created by the
        model before the call (:meth:`cache_resource`), and the request then names it."""
        if plan.key is not None:
            raise refuse("cache", preset, "Gemini takes no cache key; leave key out", model=model)

    def cache_resource(self, body: dict[str, Any], plan: CachePlan, url: str) -> tuple[str, dict[str, Any]] | None:
        held = {
            k: body[k]
            for k in self._CACHED_FIELDS
            if body.get(k) and (k != "systemInstruction" or plan.system) and (k == "systemInstruction" or plan.tools)
        }
        if plan.placement == "provider" or not held:
            return None  # only the implicit cache
        path = url.split("?", 1)[0].rsplit(":", 1)[
            0
        ]  # .../v1beta/models/M or .../v1/projects/P/locations/L/publishers/google/models/M
        for version in ("/v1beta/", "/v1/"):
            root, found, resource = path.partition(version)
            if found:
                break
        else:
            return None
        parent = resource.split("publishers/", 1)[0] if "publishers/" in resource else ""
        return root + version + parent + "cachedContents", {
            "model": resource,
            **held,
            "ttl": "3600s" if plan.ttl == "1h" else "300s",
        }

    def with_cache_resource(self, body: dict[str, Any], name: str) -> dict[str, Any]:
        out = {k: v for k, v in body.items() if k not in self._CACHED_FIELDS}
        out["cachedContent"] = name
        return out

    def apply_options(
        self,
        p: dict[str, Any],
        o: ModelOptions,
        /,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        config: dict[str, Any] = {}
        if o.max_tokens is not None:
            config["maxOutputTokens"] = o.max_tokens
        sampling(config, o, top_p="topP", stop="stopSequences")
        thinking = _thinking_config(o, preset, model, caps)
        if thinking:
            config["thinkingConfig"] = thinking
        if o.reasoning_summary is not None:
            raise refuse("reasoning_summary", preset, "Gemini's thoughts are summaries already; use thinking=True")
        if o.parallel_tool_calls is not None:
            raise refuse("parallel_tool_calls", preset, "Gemini has no switch for parallel calls")
        if o.json_schema is not None:
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = o.json_schema
        if config:
            p["generationConfig"] = config

    def apply_media_resolution(self, body: dict[str, Any], resolution: str, preset: Preset, model: str = "") -> None:
        """``generationConfig.mediaResolution``: MEDIA_RESOLUTION_LOW (64 tokens), _MEDIUM
        (256), _HIGH (google-genai's MediaResolution and GenerationConfig.media_resolution)."""
        body.setdefault("generationConfig", {})["mediaResolution"] = f"MEDIA_RESOLUTION_{resolution.upper()}"


def _thinking_off(o: ModelOptions, preset: Preset, model: str, caps: ModelCapabilities) -> dict[str, Any]:
    """``thinking=False``: a budget of 0 (Gemini 2.5 Flash: off; models that must think
    refuse it), on a model not known to always think."""
    if o.thinking_budget:
        raise refuse("thinking_budget", preset, "thinking=False turns thinking off; drop the budget or the False")
    if caps.thinking_off is False:
        raise refuse(
            "thinking",
            preset,
            "the model always thinks; set reasoning_effort to the lowest level it takes",
            model=model,
        )
    if o.thinking_display is not None or o.reasoning_effort is not None:
        raise refuse(
            "thinking_display" if o.thinking_display else "reasoning_effort",
            preset,
            "thinking=False turns thinking off",
            model=model,
        )
    return {"thinkingBudget": 0}


def _thinking_config(o: ModelOptions, preset: Preset, model: str, caps: ModelCapabilities) -> dict[str, Any]:
    """``thinkingConfig``: off, a budget or a level (a level as a budget on a model that
    takes only budgets), and whether thought summaries come back."""
    if o.thinking is False:
        return _thinking_off(o, preset, model, caps)
    thinking: dict[str, Any] = {}
    modes = caps.thinking
    asked = [
        name
        for name in ("thinking", "thinking_budget", "reasoning_effort", "thinking_display")
        if getattr(o, name) not in (None, False)
    ]
    if modes == () and asked:
        raise refuse(asked[0], preset, "the model does not think", model=model)
    if o.thinking or o.thinking_budget is not None or o.thinking_display is not None:
        # Thought summaries arrive only when asked for (includeThoughts).
        thinking["includeThoughts"] = o.thinking_display != "omitted"
    if o.thinking_budget is not None:
        if modes is not None and "budget" not in modes:
            raise refuse(
                "thinking_budget", preset, "the model takes a thinking level; use reasoning_effort", model=model
            )
        thinking["thinkingBudget"] = o.thinking_budget
    if o.reasoning_effort is not None:
        if o.thinking_budget is not None:
            raise refuse("reasoning_effort", preset, "Gemini takes a thinking level or a budget, not both")
        level = check_effort(o.reasoning_effort, caps, preset, model)
        if modes is not None and "effort" not in modes:
            thinking["thinkingBudget"] = _EFFORT_BUDGETS[level]  # a budget-only model: the level as a budget
        else:
            thinking["thinkingLevel"] = level.upper()  # the enum name, as google-genai sends it
    return thinking


PROTOCOL = GeminiProtocol()


def _per_day(body: Any) -> bool:
    """Whether a Google error body's QuotaFailure names a quota counted per day."""
    error = body.get("error") if isinstance(body, Mapping) else None
    for detail in (error.get("details") or ()) if isinstance(error, Mapping) else ():
        if not isinstance(detail, Mapping) or not str(detail.get("@type", "")).endswith("google.rpc.QuotaFailure"):
            continue
        for violation in detail.get("violations") or ():
            if isinstance(violation, Mapping) and "PerDay" in str(violation.get("quotaId", "")):
                return True
    return False
