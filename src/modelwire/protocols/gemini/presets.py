"""The providers reached over the Gemini API: Google AI and Vertex AI.
(Each is also named in the ``modelwire.presets`` entry points, in pyproject.toml.)
"""

from __future__ import annotations

from .._protocol import Preset

__all__ = ["PRESETS"]

PRESETS = (
    Preset(
        "google",
        "gemini",
        "https://generativelanguage.googleapis.com",
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        auth="x-goog-api-key",
        dialect={"key_envs": ("GEMINI_API_KEY", "GOOGLE_API_KEY")},
        description="Google Gemini API",
        example="gemini-2.5-flash",
        otel_name="gcp.gemini",
        price_id="google",
        model_prefixes=("gemini-",),
    ),
    Preset(
        "vertex",
        "gemini",
        "https://aiplatform.googleapis.com",
        "GOOGLE_ACCESS_TOKEN",
        "GOOGLE_VERTEX_BASE_URL",
        key_required=False,
        dialect={"endpoint": "vertex", "credentials": "google"},
        description="Gemini on Vertex AI (GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION)",
        example="gemini-2.5-pro",
        otel_name="gcp.vertex_ai",
        price_id="google",
    ),
)
