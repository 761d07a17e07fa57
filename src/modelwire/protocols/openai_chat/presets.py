"""The providers reached over OpenAI Chat Completions: OpenAI, Azure, and the servers that speak
its dialects (where reasoning arrives and goes back, the thinking switch, tool-id rules ...).
(Each is also named in the ``modelwire.presets`` entry points, in pyproject.toml.)
"""

from __future__ import annotations

from .._protocol import Preset

__all__ = ["PRESETS"]

PRESETS = (
    Preset(
        "openai", "openai-chat", "https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL",
        dialect={"max_tokens_field": "max_completion_tokens", "reasoning_effort": True, "prompt_cache": "openai"},
        description="OpenAI Chat Completions", example="gpt-4.1",
        price_id="openai",
        model_prefixes=("gpt-", "o1", "o3", "o4", "chatgpt-", "codex-"),
    ),
    Preset(
        "azure", "openai-chat", "", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", auth="api-key",
        path="/openai/deployments/{model}/chat/completions",
        query={"api-version": ("AZURE_OPENAI_API_VERSION", "2024-10-21")},
        # strict_default: Azure refuses a non-null default in a strict schema (openai/openai-agents-python#4390, 2026-08-14)
        dialect={"max_tokens_field": "max_completion_tokens", "reasoning_effort": True, "prompt_cache": "openai", "strict_default": False},
        description="Azure OpenAI (deployment name as the model)", example="my-gpt-4o-deployment",
        otel_name="azure.ai.openai", price_id="azure",
    ),
    # Azure OpenAI's v1 API (/openai/v1/...): the model is the deployment name, in the body;
    # an api-key, or a Microsoft Entra ID token when no key is set.
    Preset(
        "azure-v1", "openai-chat", "", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", key_required=False, auth="api-key",
        path="/openai/v1/chat/completions",
        dialect={"max_tokens_field": "max_completion_tokens", "reasoning_effort": True, "credentials": "azure", "prompt_cache": "openai", "strict_default": False},
        description="Azure OpenAI v1 API, Chat Completions (AZURE_OPENAI_API_KEY or Entra ID)", example="my-gpt-4o-deployment",
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
        model_prefixes=("deepseek-",),
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
    Preset("mistral", "openai-chat", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", dialect={"tool_id_style": "mistral"}, description="Mistral", example="mistral-large-latest", otel_name="mistral_ai", price_id="mistral", model_prefixes=("mistral-", "magistral-", "codestral-", "ministral-", "devstral-")),
    Preset("xai", "openai-chat", "https://api.x.ai/v1", "XAI_API_KEY", dialect={"reasoning_effort": True}, description="xAI", example="grok-4", otel_name="x_ai", price_id="x-ai", model_prefixes=("grok-",)),
    Preset(
        "moonshot", "openai-chat", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY",
        dialect={"reasoning_field": "reasoning_content", "reasoning_on_tool_calls": True},
        description="Moonshot (Kimi)", example="kimi-k2-thinking",
        price_id="moonshotai",
        model_prefixes=("kimi-", "moonshot-"),
    ),
    Preset(
        "dashscope", "openai-chat", "https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY",
        dialect={"reasoning_field": "reasoning_content", "thinking_switch": "qwen"},
        description="Alibaba DashScope (Qwen)", example="qwen-plus",
        model_prefixes=("qwen-", "qwq-"),
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
        "lmstudio", "openai-chat", "http://localhost:1234/v1", "LMSTUDIO_API_KEY", "LMSTUDIO_BASE_URL",
        key_required=False, description="LM Studio on this machine", example="qwen3-8b",
    ),
    Preset(
        "openai-compatible", "openai-chat", "", "OPENAI_COMPATIBLE_API_KEY", "OPENAI_COMPATIBLE_BASE_URL",
        key_required=False, dialect={"max_tokens_field": "max_tokens"},
        description="any OpenAI-compatible server at the base URL given (`modelwire conform` finds its dialect)", example="my-model",
    ),
    Preset(
        "llamacpp", "openai-chat", "http://localhost:8080/v1", "LLAMACPP_API_KEY", "LLAMACPP_BASE_URL",
        key_required=False, dialect={"reasoning_field": "reasoning_content", "empty_content_null": False},
        description="a llama.cpp server (llama-server)", example="qwen3-8b",
    ),
)
