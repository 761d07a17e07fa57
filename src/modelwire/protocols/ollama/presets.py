"""The provider reached over Ollama's native chat API.
(Each is also named in the ``modelwire.presets`` entry points, in pyproject.toml.)
"""

from __future__ import annotations

from .._protocol import Preset

__all__ = ["PRESETS"]

PRESETS = (
    Preset(
        "ollama",
        "ollama",
        "http://localhost:11434",
        "OLLAMA_API_KEY",
        "OLLAMA_BASE_URL",
        key_required=False,
        description="Ollama on this machine, native API (num_ctx from the model, think)",
        example="qwen3:8b",
    ),
)
