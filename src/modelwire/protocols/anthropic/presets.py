"""The providers reached over the Anthropic Messages protocol: Anthropic itself, Claude on the
clouds, and the Anthropic-compatible endpoints of other providers.
(Each is also named in the ``modelwire.presets`` entry points, in pyproject.toml.)
"""

from __future__ import annotations

from .._protocol import Preset

__all__ = ["PRESETS"]

PRESETS = (
    Preset(
        "anthropic",
        "anthropic",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        auth="x-api-key",
        headers={"anthropic-version": "2023-06-01"},
        dialect={"model_info": "anthropic"},
        endpoint_family="anthropic",
        description="Anthropic Messages API",
        example="claude-sonnet-4-5",
        price_id="anthropic",
        model_prefixes=("claude-",),
    ),
    # Claude through the clouds: the same messages and events, the cloud's own URL, body and
    # auth; signatures are valid across them and the Anthropic API (Anthropic's docs).
    Preset(
        "vertex-anthropic",
        "anthropic",
        "https://aiplatform.googleapis.com",
        "GOOGLE_ACCESS_TOKEN",
        "GOOGLE_VERTEX_BASE_URL",
        key_required=False,
        dialect={"endpoint": "vertex", "credentials": "google"},
        endpoint_family="anthropic",
        description="Claude on Vertex AI (GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION)",
        example="claude-sonnet-4-5@20250929",
        otel_name="gcp.vertex_ai",
        price_id="google",
    ),
    Preset(
        "bedrock-anthropic",
        "anthropic",
        "https://bedrock-runtime.{region}.amazonaws.com",
        "AWS_BEARER_TOKEN_BEDROCK",
        "BEDROCK_BASE_URL",
        key_required=False,
        dialect={"endpoint": "bedrock", "credentials": "aws"},
        endpoint_family="anthropic",
        description="Claude on Bedrock's Anthropic API (AWS_REGION; AWS credentials or AWS_BEARER_TOKEN_BEDROCK)",
        example="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        otel_name="aws.bedrock",
        price_id="aws",
    ),
    # Anthropic-compatible endpoints users switch between: each mints thinking signatures
    # only it accepts (its own endpoint family), which are never sent to Anthropic.
    Preset(
        "minimax",
        "anthropic",
        "https://api.minimax.io/anthropic",
        "MINIMAX_API_KEY",
        "MINIMAX_BASE_URL",
        auth="x-api-key",
        headers={"anthropic-version": "2023-06-01"},
        description="MiniMax (Anthropic-compatible; api.minimaxi.com/anthropic in China)",
        example="MiniMax-M2",
        price_id="minimax",
    ),
    Preset(
        "moonshot-anthropic",
        "anthropic",
        "https://api.moonshot.ai/anthropic",
        "MOONSHOT_API_KEY",
        auth="x-api-key",
        headers={"anthropic-version": "2023-06-01"},
        description="Moonshot Kimi, Anthropic-compatible endpoint",
        example="kimi-k2-turbo-preview",
        price_id="moonshotai",
    ),
    Preset(
        "zai-anthropic",
        "anthropic",
        "https://api.z.ai/api/anthropic",
        "ZAI_API_KEY",
        auth="x-api-key",
        headers={"anthropic-version": "2023-06-01"},
        description="Zhipu GLM (Z.ai), Anthropic-compatible endpoint",
        example="glm-4.6",
        price_id="zai",
    ),
    Preset(
        "deepseek-anthropic",
        "anthropic",
        "https://api.deepseek.com/anthropic",
        "DEEPSEEK_API_KEY",
        auth="x-api-key",
        headers={"anthropic-version": "2023-06-01"},
        description="DeepSeek, Anthropic-compatible endpoint",
        example="deepseek-chat",
        otel_name="deepseek",
        price_id="deepseek",
    ),
    Preset(
        "anthropic-compatible",
        "anthropic",
        "",
        "ANTHROPIC_COMPATIBLE_API_KEY",
        "ANTHROPIC_COMPATIBLE_BASE_URL",
        key_required=False,
        auth="x-api-key",
        headers={"anthropic-version": "2023-06-01"},
        description=(
            "any server with an Anthropic Messages route at the base URL given (`modelwire conform "
            "--protocol anthropic` finds what it takes)"
        ),
        example="my-model",
    ),
)
