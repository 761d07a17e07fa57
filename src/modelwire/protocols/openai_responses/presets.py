"""The providers reached over the OpenAI Responses API.
(Each is also named in the ``modelwire.presets`` entry points, in pyproject.toml.)
"""

from __future__ import annotations

from .._protocol import Preset

__all__ = ["PRESETS"]

PRESETS = (
    Preset(
        "openai-responses",
        "openai-responses",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        description="OpenAI Responses API",
        example="o4-mini",
        otel_name="openai",
        price_id="openai",
    ),
    Preset(
        "azure-responses",
        "openai-responses",
        "",
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_ENDPOINT",
        key_required=False,
        auth="api-key",
        # strict_default: Azure refuses a non-null default in a strict schema (openai/openai-agents-python#4390,
        # 2026-08-14)
        path="/openai/v1/responses",
        dialect={"credentials": "azure", "strict_default": False},
        description="Azure OpenAI v1 API, Responses (AZURE_OPENAI_API_KEY or Entra ID)",
        example="my-gpt-5-deployment",
        otel_name="azure.ai.openai",
        price_id="azure",
    ),
    Preset(
        "responses-compatible",
        "openai-responses",
        "",
        "RESPONSES_COMPATIBLE_API_KEY",
        "RESPONSES_COMPATIBLE_BASE_URL",
        key_required=False,
        description=(
            "any server with an OpenAI Responses route at the base URL given (`modelwire conform "
            "--protocol openai-responses` finds what it takes)"
        ),
        example="my-model",
    ),
)
