"""The shipped capability table beside the model catalogs of other well-kept libraries, where
they are installed (``modelwire models --crosscheck``): LiteLLM's model JSON, AgentScope's
model cards, genai-prices' model list. Each catalog is read as its library writes it, and
each difference names the library and its version as the source.

Only models of the families modelwire's providers name (a preset's model prefixes, or a
row of the table) are compared; a catalog's other entries (embeddings, other hosts' own
models) are not the table's business.
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import ConfigError
from ..protocols import ModelCapabilities
from ._verify import Verification, compare
from .capabilities import from_table, normalize

__all__ = ["crosscheck", "litellm_catalog", "agentscope_catalog", "genai_prices_catalog"]

Catalog = tuple[str, str, list[tuple[str, ModelCapabilities]]]  # (library and version, source, entries)


def crosscheck(litellm_path: str | None = None) -> list[tuple[str, Verification]]:
    """Each installed catalog beside the table: the ids it knows that no row names (only
    a family's, or nothing), with what it says of them, and the fields it states otherwise
    where a row names the model (a fact only the catalog states of a named model is not
    reported: a catalog's field means what its library means by it)."""
    catalogs = [c for c in (litellm_catalog(litellm_path), agentscope_catalog(), genai_prices_catalog()) if c]
    if not catalogs:
        raise ConfigError("no catalog found: install agentscope or genai-prices, or give LiteLLM's JSON with --catalog")
    checks = []
    for library, source, entries in catalogs:
        findings = tuple(_compared(model, caps) for model, caps in _ours(entries))
        checks.append((library, Verification(source, findings)))
    return checks


def _compared(model: str, caps: ModelCapabilities) -> Any:
    """``model`` beside the table; where a row names it, only the fields both state."""
    finding = compare(model, caps)
    return replace(finding, new={}) if finding.named else finding


def _prefixes() -> tuple[str, ...]:
    from ..protocols import all_presets

    return tuple(p for preset in all_presets().values() for p in preset.model_prefixes)


def _ours(entries: Iterable[tuple[str, ModelCapabilities]]) -> Iterator[tuple[str, ModelCapabilities]]:
    """The entries of the families modelwire's providers name, one per model (the first)."""
    prefixes, seen = _prefixes(), set()
    for model, caps in entries:
        name = normalize(model)
        ours = name.startswith(prefixes) or model.lower().startswith(prefixes) or from_table(model) is not None
        if name in seen or not ours:
            continue
        seen.add(name)
        yield model, caps


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "(version not known)"


def _record(values: dict[str, Any], source: str) -> ModelCapabilities:
    return ModelCapabilities.from_mapping({k: v for k, v in values.items() if v is not None}, source)


# -- LiteLLM ---------------------------------------------------------------------------------

_LITELLM_JSON = "model_prices_and_context_window_backup.json"


def _litellm_file(path: str | None) -> Path | None:
    if path:
        return Path(path)
    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))) / _LITELLM_JSON
    # The project's own checkout keeps LiteLLM in an environment of its own.
    found = sorted(glob.glob(f"tests/litellm/.venv/lib/python3*/site-packages/litellm/{_LITELLM_JSON}"))
    return Path(found[-1]) if found else None


def _litellm_version(file: Path) -> str:
    infos = sorted(file.resolve().parent.parent.glob("litellm-*.dist-info"))
    return infos[-1].name.removeprefix("litellm-").removesuffix(".dist-info") if infos else "(version not known)"


def litellm_catalog(path: str | None = None) -> Catalog | None:
    """LiteLLM's model JSON (``--catalog``, else the installed package's): its chat models'
    ``max_input_tokens``, ``max_output_tokens`` and ``supports_*`` flags."""
    file = _litellm_file(path)
    if file is None or (not path and not file.exists()):
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: not LiteLLM's model JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: not LiteLLM's model JSON: not an object of models")
    library = f"LiteLLM {_litellm_version(file)}"
    entries = [
        (model, _litellm_record(row, library))
        for model, row in data.items()
        if isinstance(row, dict) and row.get("mode") == "chat"
    ]
    entries.sort(key=lambda entry: "/" in entry[0])  # a model under its maker's own id first, then gateways'
    return library, f"{library}, {file.name}", entries


def _litellm_record(row: dict[str, Any], library: str) -> ModelCapabilities:
    def flag(key: str) -> bool | None:
        return row[key] if isinstance(row.get(key), bool) else None

    def tokens(key: str) -> int | None:
        value = row.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    return _record(
        {
            "context_window": tokens("max_input_tokens"),
            "max_output_tokens": tokens("max_output_tokens"),
            "image_input": flag("supports_vision"),
            "pdf_input": flag("supports_pdf_input"),
            "audio_input": flag("supports_audio_input"),
            "tool_use": flag("supports_function_calling"),
            "thinking": [] if flag("supports_reasoning") is False else None,
        },
        library,
    )


# -- AgentScope ------------------------------------------------------------------------------


def agentscope_catalog() -> Catalog | None:
    """AgentScope's chat model cards (``agentscope/model/*/_models/*.yaml``, read as
    ``ModelCard.from_yaml`` reads them): ``context_size``, ``output_size``, ``input_types``.
    (``application/x-thinking`` among ``output_types`` says whether thinking comes back
    through that API, not whether the model thinks: GPT-5 on Chat has none; not compared.)"""
    spec = importlib.util.find_spec("agentscope")
    if spec is None or not spec.submodule_search_locations:
        return None
    import yaml

    root = Path(next(iter(spec.submodule_search_locations)))
    library = f"AgentScope {_version('agentscope')}"
    entries = []
    for card in sorted(root.glob("model/*/_models/*.yaml")):
        data = yaml.safe_load(card.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("name"), str) and data.get("status", "active") == "active":
            entries.append((data["name"], _agentscope_record(data, library)))
    return library, f"{library}'s model cards (agentscope/model/*/_models)", entries


def _agentscope_record(card: dict[str, Any], library: str) -> ModelCapabilities:
    taken = [t for t in card.get("input_types") or ["text/plain"] if isinstance(t, str)]
    sizes = {k: card.get(k) for k in ("context_size", "output_size")}
    size = {k: v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None for k, v in sizes.items()}
    return _record(
        {
            "context_window": size["context_size"],
            "max_output_tokens": size["output_size"],
            "image_input": any(t.startswith("image/") for t in taken),
            "pdf_input": "application/pdf" in taken,
            "audio_input": any(t.startswith("audio/") for t in taken),
        },
        library,
    )


# -- genai-prices ----------------------------------------------------------------------------


def genai_prices_catalog() -> Catalog | None:
    """genai-prices' model list (``genai_prices.data.providers``): each current model's
    ``context_window``, for the providers modelwire's presets price with it."""
    if importlib.util.find_spec("genai_prices") is None:
        return None
    from genai_prices.data import providers

    from ..protocols import all_presets

    priced = {preset.price_id for preset in all_presets().values() if preset.price_id and preset.model_prefixes}
    library = f"genai-prices {_version('genai-prices')}"
    entries = [
        (model.id, _record({"context_window": model.context_window}, library))
        for provider in providers
        if provider.id in priced
        for model in provider.models
        if not model.deprecated
    ]
    return library, f"{library}'s model list", entries
