"""``python -m modelwire.cli``: the ``modelwire`` command."""

import sys

from ._main import main

sys.exit(main())
