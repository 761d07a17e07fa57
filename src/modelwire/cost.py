"""What a model call costs, from its usage and the provider's published prices.

Prices come from the maintained ``genai-prices`` package (optional extra:
``pip install 'modelwire[cost]'``). A call is priced by provider and model: input tokens
(uncached), cache reads and cache writes at their own rates, output tokens (reasoning
included, as providers bill it). A model the package does not know has no price: the cost
says so (``total: None`` and why), it is never guessed. The cost of a call travels on its
``MODEL_CALL_END`` event (``cost``), and a message adds up the calls it holds (``Msg.cost``).

    >>> price(end_event, provider=preset_name, model=model_name)  # e.g. anthropic, claude-sonnet-4-5
    {"currency": "USD", "total": 0.0039975, "input": 0.0024975, "output": 0.0015, "source": "genai-prices 0.2.3"}
"""

from __future__ import annotations

import importlib.util
from typing import Any

__all__ = ["price", "available", "preload", "ready", "loaded", "catalogue_id"]


_state: dict[str, Any] = {}


def available() -> bool:
    """Whether genai-prices is installed (looked up once, imported only when pricing)."""
    if "available" not in _state:
        _state["available"] = importlib.util.find_spec("genai_prices") is not None
    found: bool = _state["available"]
    return found


def catalogue_id(provider: str) -> str | None:
    """The genai-prices provider id of a preset (its ``price_id``; None: not in the
    catalogue); a name that is no preset is taken as a catalogue id itself."""
    from .protocols import find_preset

    preset = find_preset(provider)  # one lookup: no protocol is loaded for it
    return preset.price_id if preset is not None else provider


def preload() -> None:
    """Start loading the price catalogue in a worker thread (once): importing it takes
    about a tenth of a second, which the first priced call would otherwise spend at its
    end, with the event loop stopped for every other stream. A model starts this when its
    first call starts, so the catalogue is there by the time the call ends."""
    if not available() or "loader" in _state:
        return
    import threading

    def load() -> None:
        try:
            import genai_prices
            from genai_prices import data_snapshot

            first = data_snapshot.get_snapshot().providers[0]  # warm its lookups on any priced model
            genai_prices.calc_price(
                genai_prices.Usage(input_tokens=1, output_tokens=1), first.models[0].id, provider_id=first.id
            )
        except Exception:  # noqa: BLE001 - pricing then fails where it is asked, and says why
            pass

    loader = threading.Thread(target=load, name="modelwire-prices", daemon=True)
    _state["loader"] = loader
    loader.start()


def ready() -> bool:
    """Whether pricing can run now without waiting for the catalogue to load."""
    loader = _state.get("loader")
    return loader is not None and not loader.is_alive()


async def loaded() -> None:
    """Wait, without stopping the event loop, until the catalogue has loaded."""
    preload()
    loader = _state.get("loader")
    if loader is not None and loader.is_alive():
        import asyncio

        await asyncio.to_thread(loader.join)


def price(
    usage: Any,
    *,
    provider: str,
    model: str,
    input_includes_cache: bool = True,
) -> dict[str, Any] | None:
    """The cost of one call (``usage``: input, output, cache read, cache write tokens), or
    None when genai-prices is not installed. modelwire's own counts include the cache
    reads and writes in ``input_tokens`` on every protocol (the default);
    ``input_includes_cache=False`` prices a provider's raw figures that leave them out
    (Anthropic's and Bedrock's own usage)."""
    if not available():
        return None
    import genai_prices

    source = f"genai-prices {genai_prices.__version__}"
    catalogue = catalogue_id(provider)
    if catalogue is None:
        return {
            "currency": "USD",
            "total": None,
            "unknown": f"{provider} is not in {source}'s catalogue",
            "source": source,
        }
    cache_read = getattr(usage, "cache_input_tokens", 0) or 0
    cache_write = getattr(usage, "cache_creation_input_tokens", 0) or 0
    total_input = usage.input_tokens + (0 if input_includes_cache else cache_read + cache_write)
    counted = genai_prices.Usage(
        input_tokens=total_input,
        output_tokens=usage.output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
    try:
        calc = genai_prices.calc_price(counted, model, provider_id=catalogue)
    except LookupError:
        return {
            "currency": "USD",
            "total": None,
            "unknown": f"no price for {model!r} at {catalogue} in {source}",
            "source": source,
        }
    return {
        "currency": "USD",
        "total": float(calc.total_price),
        "input": float(calc.input_price),
        "output": float(calc.output_price),
        "model": calc.model.id,
        "source": source,
    }
