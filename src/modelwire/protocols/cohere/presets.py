"""The provider reached over Cohere's v2 Chat API.
(Each is also named in the ``modelwire.presets`` entry points, in pyproject.toml.)
"""

from __future__ import annotations

from .._protocol import Preset

__all__ = ["PRESETS"]

PRESETS = (
    # The key variable is the official SDK's (cohere.ClientV2 reads CO_API_KEY).
    Preset(
        "cohere",
        "cohere",
        "https://api.cohere.com",
        "CO_API_KEY",
        "CO_API_URL",
        description="Cohere v2 Chat (Command A, Command A Reasoning, Command R)",
        example="command-a-03-2025",
        price_id="cohere",
        model_prefixes=("command-", "c4ai-"),
    ),
)
