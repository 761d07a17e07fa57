"""The provider reached over Bedrock Converse.
(Each is also named in the ``modelwire.presets`` entry points, in pyproject.toml.)
"""

from __future__ import annotations

from .._protocol import Preset

__all__ = ["PRESETS"]

PRESETS = (
    Preset(
        "bedrock",
        "bedrock-converse",
        "https://bedrock-runtime.{region}.amazonaws.com",
        "AWS_BEARER_TOKEN_BEDROCK",
        "BEDROCK_BASE_URL",
        key_required=False,
        dialect={"credentials": "aws"},
        description="AWS Bedrock Converse (AWS_REGION; AWS credentials or AWS_BEARER_TOKEN_BEDROCK)",
        example="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        otel_name="aws.bedrock",
        price_id="aws",
        model_prefixes=(
            "us.",
            "eu.",
            "apac.",
            "global.",
            "amazon.",
            "anthropic.",
            "meta.",
            "mistral.",
            "openai.gpt-oss",
        ),
    ),
)
