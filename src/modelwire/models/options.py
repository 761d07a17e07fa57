"""Unified call options (:class:`ModelOptions`), mapped onto each provider's request by its
wire protocol (:meth:`modelwire.protocols.WireProtocol.apply_options`).

An option a provider cannot honour raises :class:`UnsupportedOptionError` (a clear error,
never a silent drop). Anything a provider takes that has no unified name goes in
``extra_body`` (merged into the request body last) or ``extra_headers``.
"""

from __future__ import annotations

from ..errors import UnsupportedOptionError
from ..protocols import ModelOptions

__all__ = ["ModelOptions", "UnsupportedOptionError"]
