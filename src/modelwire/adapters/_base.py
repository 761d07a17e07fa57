"""What every streaming adapter shares, by the names it has always had here.

The kit lives in modules of its own parts: :mod:`._adapter` (:class:`BaseAdapter`, the
contract, errors included), :mod:`._state` (:class:`Block` and the call's states),
:mod:`._makers` (the event makers, :func:`json_text`, :func:`error_object`),
:mod:`._decoders` (:class:`StreamDecoder`, :class:`AWSStreamDecoder`, :func:`decode_answer`)
and :mod:`._shapes` (:func:`shape_problem`). Each name is the same object here as there.
"""

from __future__ import annotations

from ._adapter import BaseAdapter, debug
from ._decoders import AWSStreamDecoder, StreamDecoder, decode_answer
from ._decoders import _refuse as _refuse, short_path as short_path
from ._makers import COMMON_EXTRAS, json_text
from ._makers import DELTA_MAKERS as DELTA_MAKERS, error_object as error_object
from ._shapes import OPTIONAL, shape_problem
from ._state import Block
from ._state import DONE as DONE, FAILED as FAILED, IDLE as IDLE, STREAMING as STREAMING
from ._state import AdapterState as AdapterState

__all__ = [
    "json_text",
    "BaseAdapter",
    "StreamDecoder",
    "AWSStreamDecoder",
    "Block",
    "debug",
    "shape_problem",
    "OPTIONAL",
    "decode_answer",
    "COMMON_EXTRAS",
]
