"""Pricing a model's calls: where it is asked for, with the price catalogue loaded off the
event loop (see :mod:`modelwire.cost`)."""

from __future__ import annotations

import os
from typing import Any

from .. import errors as E
from ..event import AgentEvent, ModelCallEndEvent

__all__ = ["Pricing", "pricing_option"]

_ON, _OFF = ("on", "1", "true", "yes"), ("off", "0", "false", "no")


def pricing_option(options: dict[str, Any]) -> bool | None:
    """Whether calls are priced: ``pricing=`` (True or False), else ``MODELWIRE_PRICING``
    (``on`` or ``off``), else None: priced only where cost is asked for (an agent with a
    cost limit, batches, ``modelwire chat``). Unpriced, the price catalogue is never loaded
    and no call waits for it; ``MODEL_CALL_END.cost`` is then None."""
    value = options.pop("pricing", None)
    if value is None:
        setting = os.environ.get("MODELWIRE_PRICING", "").strip().lower()
        if setting and setting not in _ON + _OFF:
            raise E.ConfigError(f"MODELWIRE_PRICING={setting!r} must be on or off")
        return True if setting in _ON else False if setting in _OFF else None
    if not isinstance(value, bool):
        raise E.ConfigError(f"pricing={value!r} must be True or False")
    return value


class Pricing:
    """What :class:`~modelwire.models.HTTPModel` does to price its calls: the catalogue
    loaded in a thread once pricing is asked for, and each call's end priced."""

    pricing: bool | None  # pricing_option(): True, False, or None (where asked for)
    provider: str
    name: str

    def _preload_prices(self) -> None:
        """Start loading the price catalogue in a thread (once), where calls are priced."""
        if self.pricing:
            from .. import cost

            cost.preload()

    def ask_for_cost(self) -> None:
        """Price this model's calls from now on, unless ``pricing=False`` said never (what an
        agent with a cost limit, or a batch, calls)."""
        if self.pricing is None:
            self.pricing = True
            self._preload_prices()

    async def _prices_loaded(self) -> None:
        """The price catalogue loaded (off the loop) before a call's end is priced."""
        if not self.pricing:
            return
        from .. import cost

        if cost.available() and not cost.ready():
            await cost.loaded()

    def _ended(self, end: AgentEvent, trace: Any) -> AgentEvent:  # after _prices_loaded()
        """The call's MODEL_CALL_END, with its price (when genai-prices is installed), and
        the end of its span."""
        from .. import cost

        if not isinstance(end, ModelCallEndEvent):
            return end
        if self.pricing and cost.available():
            usage = end  # the event has the four counts the price needs
            priced = cost.price(usage, provider=self.provider, model=self.name)
            if priced is not None:
                end = end.replace(cost=priced)
        if trace is not None and end.finished_reason == "completed" and end.stop_reason != "error":
            trace.end(end)
        return end
