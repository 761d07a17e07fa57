"""Record real provider traffic once, replay it in tests, offline and deterministic.

    from modelwire.cassettes import use_cassette

    with use_cassette("cassettes/test_weather.json", record_mode="none"):
        reply = await agent.reply(UserMsg("me", "Weather in Paris?"))

In pytest, mark a test with ``@pytest.mark.cassette`` (or use the ``cassette`` fixture) and
pick the mode with ``--record-mode``; see ``modelwire.cassettes.pytest_plugin``.
"""

from ._cassette import (
    RECORD_MODES,
    SECRET_HEADERS,
    Cassette,
    CassetteError,
    CassetteMismatchError,
    CassetteSecretError,
    Interaction,
    UnusedInteractionsError,
    canonical_json,
)
from ._hook import CassetteSession, use_cassette
from ._vcr import import_vcr

__all__ = [
    "use_cassette",
    "Cassette",
    "CassetteSession",
    "Interaction",
    "CassetteError",
    "CassetteMismatchError",
    "UnusedInteractionsError",
    "CassetteSecretError",
    "RECORD_MODES",
    "SECRET_HEADERS",
    "canonical_json",
    "import_vcr",
]
