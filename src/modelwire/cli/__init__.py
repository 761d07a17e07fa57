"""The ``modelwire`` command line.

Every mistake is one line on stderr that names what is wrong and how to fix it, in command
line terms, with exit status 2 (1 when a provider answered with an error); ``--debug``
shows the Python traceback instead.

One module per command (``_chat``, ``_serve``, ``_models`` ...) adds its flags and runs it;
``_main`` builds the parser from them and dispatches; ``_common`` holds what they share.
Each command's heavy imports stay inside it, so building the parser loads none of them.
"""

from ._common import ENVIRONMENT, UsageError
from ._main import build_parser, main
from ._serve import SERVE_CONNECTIONS, SERVE_TOKEN_VARIABLE
from ._serve import _serve_app as _serve_app

__all__ = ["ENVIRONMENT", "SERVE_CONNECTIONS", "SERVE_TOKEN_VARIABLE", "UsageError", "build_parser", "main"]
