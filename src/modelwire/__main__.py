"""``python -m modelwire``: the ``modelwire`` command."""

import sys

from .cli import main

sys.exit(main())
