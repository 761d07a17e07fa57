"""Which provider, where, with which key: model strings, presets and profiles.

A model is named by ``PROVIDER:MODEL`` (``anthropic:claude-sonnet-4-5``, ``openai:gpt-4.1``,
``openai-responses:o4-mini``, ``deepseek:deepseek-chat`` ...) or by the name of a profile
in ``modelwire.toml`` (or ``[tool.modelwire]`` in ``pyproject.toml``)::

    default = "anthropic:claude-sonnet-4-5"

    [profiles.fast]
    model = "openai:gpt-4.1-mini"
    temperature = 0.2

``load_model()`` with no name uses ``MODELWIRE_MODEL`` (a model string or a profile name),
then the file's ``default``.
"""

from __future__ import annotations

import contextvars
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError, MissingKeyError
from ..protocols import Preset, plugin_presets

__all__ = ["Preset", "PRESETS", "ConfigError", "ModelSpec", "resolve", "find_config", "load_config", "find_preset", "all_presets"]


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset(
            "anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
            auth="x-api-key", headers={"anthropic-version": "2023-06-01"}, dialect={"model_info": "anthropic"}, endpoint_family="anthropic", description="Anthropic Messages API",
            example="claude-sonnet-4-5",
            price_id="anthropic",
        ),
        # Claude through the clouds: the same messages and events, the cloud's own URL, body and
        # auth; signatures are valid across them and the Anthropic API (Anthropic's docs).
        Preset(
            "vertex-anthropic", "anthropic", "https://aiplatform.googleapis.com", "GOOGLE_ACCESS_TOKEN", "GOOGLE_VERTEX_BASE_URL",
            key_required=False, dialect={"endpoint": "vertex", "credentials": "google"}, endpoint_family="anthropic",
            description="Claude on Vertex AI (GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION)", example="claude-sonnet-4-5@20250929",
            otel_name="gcp.vertex_ai", price_id="google",
        ),
        Preset(
            "bedrock-anthropic", "anthropic", "https://bedrock-runtime.{region}.amazonaws.com", "AWS_BEARER_TOKEN_BEDROCK", "BEDROCK_BASE_URL",
            key_required=False, dialect={"endpoint": "bedrock", "credentials": "aws"}, endpoint_family="anthropic",
            description="Claude on Bedrock's Anthropic API (AWS_REGION; AWS credentials or AWS_BEARER_TOKEN_BEDROCK)",
            example="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            otel_name="aws.bedrock", price_id="aws",
        ),
        # Anthropic-compatible endpoints users switch between: each mints thinking signatures
        # only it accepts (its own endpoint family), which are never sent to Anthropic.
        Preset(
            "minimax", "anthropic", "https://api.minimax.io/anthropic", "MINIMAX_API_KEY", "MINIMAX_BASE_URL",
            auth="x-api-key", headers={"anthropic-version": "2023-06-01"}, description="MiniMax (Anthropic-compatible; api.minimaxi.com/anthropic in China)",
            example="MiniMax-M2",
            price_id="minimax",
        ),
        Preset(
            "moonshot-anthropic", "anthropic", "https://api.moonshot.ai/anthropic", "MOONSHOT_API_KEY",
            auth="x-api-key", headers={"anthropic-version": "2023-06-01"}, description="Moonshot Kimi, Anthropic-compatible endpoint",
            example="kimi-k2-turbo-preview",
            price_id="moonshotai",
        ),
        Preset(
            "zai-anthropic", "anthropic", "https://api.z.ai/api/anthropic", "ZAI_API_KEY",
            auth="x-api-key", headers={"anthropic-version": "2023-06-01"}, description="Zhipu GLM (Z.ai), Anthropic-compatible endpoint",
            example="glm-4.6",
            price_id="zai",
        ),
        Preset(
            "deepseek-anthropic", "anthropic", "https://api.deepseek.com/anthropic", "DEEPSEEK_API_KEY",
            auth="x-api-key", headers={"anthropic-version": "2023-06-01"}, description="DeepSeek, Anthropic-compatible endpoint",
            example="deepseek-chat",
            otel_name="deepseek", price_id="deepseek",
        ),
        Preset(
            "openai", "openai-chat", "https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL",
            dialect={"max_tokens_field": "max_completion_tokens", "reasoning_effort": True, "prompt_cache": "openai"},
            description="OpenAI Chat Completions", example="gpt-4.1",
            price_id="openai",
        ),
        Preset(
            "openai-responses", "openai-responses", "https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL",
            description="OpenAI Responses API", example="o4-mini",
            otel_name="openai", price_id="openai",
        ),
        Preset(
            "azure", "openai-chat", "", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", auth="api-key",
            path="/openai/deployments/{model}/chat/completions",
            query={"api-version": ("AZURE_OPENAI_API_VERSION", "2024-10-21")},
            dialect={"max_tokens_field": "max_completion_tokens", "reasoning_effort": True, "prompt_cache": "openai"},
            description="Azure OpenAI (deployment name as the model)", example="my-gpt-4o-deployment",
            otel_name="azure.ai.openai", price_id="azure",
        ),
        # Azure OpenAI's v1 API (/openai/v1/...): the model is the deployment name, in the body;
        # an api-key, or a Microsoft Entra ID token when no key is set.
        Preset(
            "azure-v1", "openai-chat", "", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", key_required=False, auth="api-key",
            path="/openai/v1/chat/completions",
            dialect={"max_tokens_field": "max_completion_tokens", "reasoning_effort": True, "credentials": "azure", "prompt_cache": "openai"},
            description="Azure OpenAI v1 API, Chat Completions (AZURE_OPENAI_API_KEY or Entra ID)", example="my-gpt-4o-deployment",
            otel_name="azure.ai.openai", price_id="azure",
        ),
        Preset(
            "azure-responses", "openai-responses", "", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", key_required=False, auth="api-key",
            path="/openai/v1/responses", dialect={"credentials": "azure"},
            description="Azure OpenAI v1 API, Responses (AZURE_OPENAI_API_KEY or Entra ID)", example="my-gpt-5-deployment",
            otel_name="azure.ai.openai", price_id="azure",
        ),
        Preset(
            "deepseek", "openai-chat", "https://api.deepseek.com", "DEEPSEEK_API_KEY",
            dialect={
                "reasoning_field": "reasoning_content", "reasoning_on_tool_calls": True, "thinking_switch": "deepseek",
                "reasoning_effort": True, "json_schema": False, "prompt_cache": "automatic",
            },
            description="DeepSeek", example="deepseek-chat",
            price_id="deepseek",
        ),
        Preset(
            "openrouter", "openai-chat", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
            dialect={"reasoning_field": "reasoning", "replay_reasoning_details": True, "thinking_switch": "openrouter", "model_info": "openrouter"},
            description="OpenRouter", example="anthropic/claude-sonnet-4.5",
            price_id="openrouter",
        ),
        Preset(
            "groq", "openai-chat", "https://api.groq.com/openai/v1", "GROQ_API_KEY",
            dialect={"reasoning_field": "reasoning", "reasoning_effort": True}, description="Groq", example="openai/gpt-oss-120b",
            price_id="groq",
        ),
        Preset("together", "openai-chat", "https://api.together.xyz/v1", "TOGETHER_API_KEY", description="Together AI", example="meta-llama/Llama-3.3-70B-Instruct-Turbo", price_id="together"),
        Preset("mistral", "openai-chat", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", dialect={"tool_id_style": "mistral"}, description="Mistral", example="mistral-large-latest", otel_name="mistral_ai", price_id="mistral"),
        Preset("xai", "openai-chat", "https://api.x.ai/v1", "XAI_API_KEY", dialect={"reasoning_effort": True}, description="xAI", example="grok-4", otel_name="x_ai", price_id="x-ai"),
        Preset(
            "moonshot", "openai-chat", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY",
            dialect={"reasoning_field": "reasoning_content", "reasoning_on_tool_calls": True},
            description="Moonshot (Kimi)", example="kimi-k2-thinking",
            price_id="moonshotai",
        ),
        Preset(
            "dashscope", "openai-chat", "https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY",
            dialect={"reasoning_field": "reasoning_content", "thinking_switch": "qwen"},
            description="Alibaba DashScope (Qwen)", example="qwen-plus",
        ),
        Preset(
            "ollama", "ollama", "http://localhost:11434", "OLLAMA_API_KEY", "OLLAMA_BASE_URL",
            key_required=False, description="Ollama on this machine, native API (num_ctx from the model, think)", example="qwen3:8b",
        ),
        Preset(
            "ollama-openai", "openai-chat", "http://localhost:11434/v1", "OLLAMA_API_KEY", "OLLAMA_OPENAI_BASE_URL",
            key_required=False, dialect={"reasoning_field": "reasoning", "reasoning_effort": True},
            description="Ollama's OpenAI-compatible endpoint (it ignores num_ctx and think)", example="qwen3:8b",
        ),
        Preset(
            "vllm", "openai-chat", "http://localhost:8000/v1", "VLLM_API_KEY", "VLLM_BASE_URL",
            key_required=False, dialect={"reasoning_field": "reasoning_content", "thinking_switch": "vllm", "reasoning_effort": True},
            description="a vLLM server", example="Qwen/Qwen3-8B",
        ),
        Preset(
            "google", "gemini", "https://generativelanguage.googleapis.com", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL",
            auth="x-goog-api-key", dialect={"key_envs": ("GEMINI_API_KEY", "GOOGLE_API_KEY")},
            description="Google Gemini API", example="gemini-2.5-flash",
            otel_name="gcp.gemini", price_id="google",
        ),
        Preset(
            "vertex", "gemini", "https://aiplatform.googleapis.com", "GOOGLE_ACCESS_TOKEN", "GOOGLE_VERTEX_BASE_URL",
            key_required=False, dialect={"endpoint": "vertex", "credentials": "google"},
            description="Gemini on Vertex AI (GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION)", example="gemini-2.5-pro",
            otel_name="gcp.vertex_ai", price_id="google",
        ),
        Preset(
            "bedrock", "bedrock-converse", "https://bedrock-runtime.{region}.amazonaws.com", "AWS_BEARER_TOKEN_BEDROCK", "BEDROCK_BASE_URL",
            key_required=False, dialect={"credentials": "aws"},
            description="AWS Bedrock Converse (AWS_REGION; AWS credentials or AWS_BEARER_TOKEN_BEDROCK)", example="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            otel_name="aws.bedrock", price_id="aws",
        ),
        Preset(
            "lmstudio", "openai-chat", "http://localhost:1234/v1", "LMSTUDIO_API_KEY", "LMSTUDIO_BASE_URL",
            key_required=False, description="LM Studio on this machine", example="qwen3-8b",
        ),
        Preset(
            "llamacpp", "openai-chat", "http://localhost:8080/v1", "LLAMACPP_API_KEY", "LLAMACPP_BASE_URL",
            key_required=False, dialect={"reasoning_field": "reasoning_content", "empty_content_null": False},
            description="a llama.cpp server (llama-server)", example="qwen3-8b",
        ),
    ]
}


@dataclass
class ModelSpec:
    """A resolved model: preset, model name, and the options from the profile or the call."""

    preset: Preset
    model: str
    options: dict[str, Any] = field(default_factory=dict)
    api_key: str | None = field(default=None, repr=False)  # never shown
    base_url: str | None = None

    @property
    def protocol(self) -> str:
        return self.preset.protocol


# Well-known model names and their provider, to suggest PROVIDER:MODEL for a bare name.
_MODEL_PREFIXES = (
    (("gpt-", "o1", "o3", "o4", "chatgpt-", "codex-"), "openai"),
    (("claude-",), "anthropic"),
    (("gemini-",), "google"),
    (("deepseek-",), "deepseek"),
    (("grok-",), "xai"),
    (("mistral-", "magistral-", "codestral-", "ministral-", "devstral-"), "mistral"),
    (("kimi-", "moonshot-"), "moonshot"),
    (("qwen-", "qwq-"), "dashscope"),
    (("us.", "eu.", "apac.", "global.", "amazon.", "anthropic.", "meta.", "mistral.", "openai.gpt-oss"), "bedrock"),
)


def guess_provider(model: str) -> str | None:
    """The provider a bare, well-known model name belongs to (for a hint), or None."""
    lowered = model.lower()
    for prefixes, provider in _MODEL_PREFIXES:
        if lowered.startswith(prefixes):
            return provider
    return None


def parse(spec: str) -> tuple[Preset, str]:
    provider, sep, model = spec.partition(":")
    if not sep or not model:
        guess = guess_provider(spec)
        hint = f"did you mean {guess}:{spec}?" if guess else "for example anthropic:claude-sonnet-4-5"
        raise ConfigError(f"{spec!r} is not PROVIDER:MODEL; {hint}")
    preset = find_preset(provider)
    if preset is None:
        import difflib

        names = list(all_presets())
        lowered = {n.lower(): n for n in names}
        close = [lowered[provider.lower()]] if provider.lower() in lowered else difflib.get_close_matches(provider.lower(), names, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}:{model}?" if close else f"known providers: {', '.join(names)} (`modelwire models` lists them)"
        raise ConfigError(f"unknown provider {provider!r} in {spec!r}; {hint}")
    return preset, model


def find_preset(name: str) -> Preset | None:
    """A built-in preset, or one a protocol plugin brings (looked up only when needed)."""
    return PRESETS.get(name) or plugin_presets().get(name)


def all_presets() -> dict[str, Preset]:
    found = {**PRESETS, **plugin_presets()}
    if "checked" not in _DIALECTS or _DIALECTS["checked"] != set(found):
        from ..protocols import get_protocol, protocol_names

        names = set(protocol_names())
        for preset in found.values():
            if preset.protocol in names:
                get_protocol(preset.protocol).check_dialect(preset)  # a typo in a dialect is an error, once
        _DIALECTS["checked"] = set(found)
    return found


_DIALECTS: dict[str, Any] = {}


# Set by modelwire.cassettes while a replay-only cassette is in use (per task).
REPLAYING: contextvars.ContextVar[bool] = contextvars.ContextVar("modelwire_replaying", default=False)
# Set while any cassette is in use: no request leaves that the cassette would not hold (the
# capability lookup is skipped).
IN_CASSETTE: contextvars.ContextVar[bool] = contextvars.ContextVar("modelwire_in_cassette", default=False)
REPLAY_KEY = "modelwire-cassette-replay"  # never recorded: requests in replay never leave


def _check_profile(profile: dict[str, Any], name: str, path: Path | None) -> None:
    """Every key of a profile is a known option (a typo is named, with the likely fix)."""
    import difflib
    from dataclasses import fields

    from ..protocols import ModelOptions

    known = {f.name for f in fields(ModelOptions)} | {"model", "api_key", "base_url", "timeouts", "formatter", "capabilities", "capability_lookup", "endpoint_family", "on_unsupported_media", "fallback", "max_concurrent"}
    for key in profile:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else f"; known: {', '.join(sorted(known))}"
            raise ConfigError(f"{path}: profile {name!r} has an unknown option {key!r}{hint}")


def _check_key(key: str, preset: Preset) -> None:
    """A key that cannot go in an HTTP header is a clear error now, never later (the error
    names where the key came from, never the key)."""
    where = preset.key_env or "api_key"
    if key != key.strip():
        raise ConfigError(f"the {preset.name} key ({where}) has spaces or a line break around it; remove them")
    bad = next((i for i, c in enumerate(key) if not (" " < c < "\x7f")), None)
    if bad is not None:
        raise ConfigError(f"the {preset.name} key ({where}) has a character that cannot be sent (position {bad}); check what was pasted")


def find_config(start: Path | None = None) -> Path | None:
    """The nearest modelwire.toml (or a pyproject.toml with [tool.modelwire]) upwards from ``start``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "modelwire.toml"
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "[tool.modelwire" in pyproject.read_text(encoding="utf-8", errors="replace"):
            return pyproject
    return None


def load_config(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("modelwire", {})
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the modelwire table must be a table")
    for key in data:
        if key not in _CONFIG_KEYS:
            import difflib

            close = difflib.get_close_matches(key, _CONFIG_KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(_CONFIG_KEYS)}"
            raise ConfigError(f"{path}: unknown key {key!r}{hint}")
    return data


_CONFIG_KEYS = ("default", "profiles")


def resolve(name: str | None = None, *, config_path: Path | None = None, env: Mapping[str, str] | None = None, **options: Any) -> ModelSpec:
    """Turn a model string, a profile name or nothing (environment, then config) into a ModelSpec."""
    env = os.environ if env is None else env
    path = config_path if config_path is not None else find_config()
    config = load_config(path) if path else {}
    profiles = config.get("profiles", {})
    chosen = name or env.get("MODELWIRE_MODEL") or config.get("default")
    if not chosen:
        raise ConfigError(
            "no model given: name one (PROVIDER:MODEL, for example anthropic:claude-sonnet-4-5), set MODELWIRE_MODEL,"
            " or set `default` in modelwire.toml"
        )
    profile_options: dict[str, Any] = {}
    seen: list[str] = []
    while ":" not in chosen:
        if chosen in seen:
            raise ConfigError(f"profile loop: {' -> '.join(seen + [chosen])}")
        seen.append(chosen)
        profile = profiles.get(chosen)
        if profile is None:
            import difflib

            where = f" in {path}" if path else " (no modelwire.toml found)"
            guess = guess_provider(chosen)
            close = difflib.get_close_matches(chosen, sorted(profiles), n=1, cutoff=0.6)
            hint = f"; did you mean the profile {close[0]!r}?" if close else f"; did you mean {guess}:{chosen}?" if guess else ""
            raise ConfigError(f"{chosen!r} is neither PROVIDER:MODEL nor a profile{where}{hint}")
        if isinstance(profile, str):
            chosen = profile
            continue
        if not isinstance(profile, dict):
            raise ConfigError(f"{path}: profile {chosen!r} must be a table or a model string")
        profile = dict(profile)
        _check_profile(profile, chosen, path)
        target = profile.pop("model", None)
        if not target:
            raise ConfigError(f"profile {chosen!r} has no `model`")
        profile_options = {**profile, **profile_options}
        chosen = target
    preset, model = parse(chosen)
    merged = {**profile_options, **{k: v for k, v in options.items() if v is not None}}
    api_key = merged.pop("api_key", None)
    base_url = merged.pop("base_url", None)
    if base_url is None and preset.base_url_env:
        base_url = env.get(preset.base_url_env) or None
    if base_url is None:
        base_url = preset.base_url
    if not base_url:
        raise ConfigError(f"{preset.name} needs a base URL: set {preset.base_url_env}")
    if api_key is None:
        for variable in preset.dialect.get("key_envs") or ((preset.key_env,) if preset.key_env else ()):
            api_key = env.get(variable) or None
            if api_key:
                break
    if api_key is not None:
        _check_key(api_key, preset)
    if api_key is None and preset.key_required and REPLAYING.get():
        api_key = REPLAY_KEY  # replaying a cassette: no request leaves, no key is needed
    if api_key is None and preset.key_required:
        raise MissingKeyError(f"{preset.name} needs an API key: set {preset.key_env}", preset.key_env)
    return ModelSpec(preset=preset, model=model, options=merged, api_key=api_key, base_url=base_url.rstrip("/"))
