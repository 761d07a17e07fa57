"""``modelwire demo``: the recorded demo agent, replayed."""

from __future__ import annotations

import argparse
import sys

from ._common import _view, _view_flags


def _demo_command(demo: argparse.ArgumentParser) -> None:
    _view_flags(demo)
    demo.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    return run_demo(out=sys.stdout, view=_view(args))
