"""What a Claude model accepts, as Anthropic's Models API publishes it (``GET /v1/models``):
the protocol's discovery part (a mixin before ``WireProtocol`` in
:class:`~modelwire.protocols.anthropic.AnthropicProtocol`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._caps import ModelCapabilities
from .._claude import EFFORTS as _EFFORTS
from .._parts import Discovery
from .._protocol import Preset

__all__ = ["AnthropicDiscovery"]


class AnthropicDiscovery(Discovery):
    if TYPE_CHECKING:  # the protocol's own (see AnthropicProtocol.sdk_base_url)

        def sdk_base_url(self, base_url: str) -> str: ...

    def model_info_url(self, base_url: str, model: str, preset: Preset) -> str | None:
        # Anthropic's Models API; Anthropic-compatible servers publish no capabilities.
        if preset.dialect.get("model_info") != "anthropic":
            return None
        from urllib.parse import quote

        return f"{self.sdk_base_url(base_url)}/v1/models/{quote(model, safe='')}"

    def capabilities_from_info(self, data: Any, model: str) -> ModelCapabilities | None:
        """The Models API's ``ModelInfo`` (``GET /v1/models/{id}``): ``capabilities``,
        ``max_tokens``, ``max_input_tokens``."""
        if not isinstance(data, dict) or data.get("type") != "model" or not isinstance(data.get("capabilities"), dict):
            return None
        caps = data["capabilities"]

        def on(*path: str) -> bool | None:
            return _supported(caps, path)

        values: dict[str, Any] = _thinking_info(caps)
        effort = on("effort")
        if effort is not None:
            values["effort"] = [level for level in _EFFORTS if on("effort", level)] if effort else []
        for name, key in (
            ("structured_output", "structured_outputs"),
            ("strict_tools", "structured_outputs"),
            ("image_input", "image_input"),
            ("pdf_input", "pdf_input"),
        ):
            if on(key) is not None:
                values[name] = on(key)
        if on("server_tools") is not None:
            values["server_tools"] = [tool for tool in ("web_search", "code_execution") if on("server_tools", tool)]
        for name, key in (("max_output_tokens", "max_tokens"), ("context_window", "max_input_tokens")):
            if isinstance(data.get(key), int) and not isinstance(data.get(key), bool) and data[key] > 0:
                values[name] = data[key]
        return ModelCapabilities.from_mapping(values, "provider: GET /v1/models")

    # ModelInfo.capabilities speaks of these levels and server tools only (the anthropic SDK's
    # EffortCapability and ServerToolsCapability).
    listed_names = {"effort": _EFFORTS, "server_tools": ("web_search", "code_execution")}

    def model_list_url(self, base_url: str, preset: Preset, page: str | None = None) -> str | None:
        # GET /v1/models pages with limit (at most 1000) and after_id
        # (https://platform.claude.com/docs/en/api/models/list).
        if preset.dialect.get("model_info") != "anthropic":
            return None
        from urllib.parse import urlencode

        query = {"limit": "1000", **({"after_id": page} if page else {})}
        return f"{self.sdk_base_url(base_url)}/v1/models?{urlencode(query)}"

    def models_listed(self, data: Any, preset: Preset) -> tuple[list[tuple[str, ModelCapabilities]], str | None]:
        """``{data: [ModelInfo], has_more, last_id}``: each ModelInfo read as
        :meth:`capabilities_from_info` reads one."""
        rows = data.get("data") if isinstance(data, dict) else None
        if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), str) for r in rows):
            raise ValueError("not a model list: no data of models with ids")
        listed = [(row["id"], self.capabilities_from_info(row, row["id"]) or ModelCapabilities()) for row in rows]
        more = data.get("has_more") is True and isinstance(data.get("last_id"), str)
        return listed, (data["last_id"] if more else None)


def _thinking_info(caps: dict[str, Any]) -> dict[str, Any]:
    """What a ModelInfo says of thinking: the forms it takes, and whether it can be off."""
    thinking = _supported(caps, ("thinking",))
    if thinking is None:
        return {}
    modes = [
        mode
        for mode, key in (("adaptive", "adaptive"), ("budget", "enabled"))
        if _supported(caps, ("thinking", "types", key))
    ]
    values: dict[str, Any] = {"thinking": modes if thinking else []}
    off = _supported(caps, ("thinking", "types", "disabled"))
    between = _supported(caps, ("thinking", "types", "between_tools"))
    if off is False and between:
        # Sonnet 5.5's way: thinking turned down to between tool calls is its off
        # (the anthropic SDK's ModelInfo: thinking.types.between_tools).
        values["thinking_off"], values["thinking_off_as"] = True, "between_tools"
    elif off is not None:
        values["thinking_off"] = off
    return values


def _supported(caps: dict[str, Any], path: tuple[str, ...]) -> bool | None:
    """``supported`` at ``path`` of a ModelInfo's capabilities; None where the answer leaves
    it out, and an error where it says something else than the documented shape (the whole
    answer is then not trusted)."""
    node: Any = caps
    for key in path:
        if not isinstance(node, dict):
            raise ValueError(f"capabilities.{'.'.join(path)}: not an object")
        node = node.get(key)
    if node is None:
        return None
    if not isinstance(node, dict) or not isinstance(node.get("supported"), bool):
        raise ValueError(f"capabilities.{'.'.join(path)}: no true/false 'supported'")
    supported: bool = node["supported"]  # checked a bool just above
    return supported
