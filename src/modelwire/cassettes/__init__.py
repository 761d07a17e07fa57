"""Record real provider traffic once, replay it in tests, offline and deterministic.

    from modelwire.cassettes import use_cassette

    with use_cassette("cassettes/test_weather.json", record_mode="none"):
        reply = await agent.reply(UserMsg("me", "Weather in Paris?"))

In pytest, mark a test with ``@pytest.mark.cassette`` (or use the ``cassette`` fixture) and
pick the mode with ``--record-mode``; see ``modelwire.cassettes.pytest_plugin``.

Replays do not notice when the provider changes; :func:`recheck` (``modelwire cassette
recheck``, ``pytest --cassette-recheck``) sends the recorded requests again and reports
where the live answers' structure drifted from the recorded ones; :func:`transpose`
(``modelwire cassette transpose``) sends the recorded conversations to another model and
reports both side by side.
"""

from ._cassette import (
    RECORD_MODES,
    SECRET_HEADERS,
    Cassette,
    Interaction,
    canonical_json,
)
from ._drift import Drift, RecheckReport
from ._hook import CassetteSession, use_cassette
from ._recheck import recheck, recheck_async
from ._transpose import TransposeReport, transpose, transpose_async
from ._vcr import import_vcr

__all__ = [
    "use_cassette",
    "Cassette",
    "CassetteSession",
    "Interaction",
    "RECORD_MODES",
    "SECRET_HEADERS",
    "canonical_json",
    "import_vcr",
    "recheck",
    "recheck_async",
    "RecheckReport",
    "Drift",
    "transpose",
    "transpose_async",
    "TransposeReport",
]
