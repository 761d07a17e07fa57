"""pytest plugin (registered by entry point): replay provider traffic from cassettes.

    @pytest.mark.cassette                      # cassettes/<test file>/<class>/<test name>.json
    async def test_weather(): ...

    @pytest.mark.cassette("cassettes/custom.json", ignore_fields=["metadata"])
    def test_other(cassette): ...             # the fixture gives the CassetteSession

``--record-mode {none,once,new_episodes,all}`` (default ``none``: replay only, as CI
runs; pytest-recording's ``rewrite`` is ``all``). pytest-recording owns ``--record-mode`` when it is installed too; then
(and always)
``--modelwire-record-mode`` sets modelwire's, and pytest-recording's value is used for
modelwire as well unless that is given. The folder is set by the ``modelwire_cassette_dir`` ini option (default
``cassettes``, relative to the rootdir).

``--cassette-recheck`` (a scheduled job, not every run) also sends each test's recorded
requests again after the test and reports, per test, where the live answers drifted (see
:func:`modelwire.cassettes.recheck`), with a table at the end; the tests themselves still
replay. ``--cassette-recheck-max-calls N`` bounds the requests of the whole session. The
key goes only to the endpoints the presets and profiles name (see
:mod:`modelwire.cassettes._bound`); ``--cassette-recheck-allow-host HOST`` names another. A
normal run stays offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Iterator

import pytest

if TYPE_CHECKING:
    from pluggy import Result

RECORD_MODES = ("none", "once", "new_episodes", "all")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("modelwire")
    group.addoption(
        "--modelwire-record-mode",
        action="store",
        default=None,
        choices=RECORD_MODES,
        help="modelwire cassettes: how to record",
    )
    group.addoption(
        "--cassette-recheck",
        action="store_true",
        default=False,
        help="modelwire cassettes: send each test's recorded requests again and report drift",
    )
    group.addoption(
        "--cassette-recheck-max-calls",
        action="store",
        type=int,
        default=None,
        help="modelwire cassettes: the most requests --cassette-recheck sends in the session",
    )
    group.addoption(
        "--cassette-recheck-allow-host",
        action="append",
        default=None,
        metavar="HOST",
        help="modelwire cassettes: also send --cassette-recheck's requests (with the key) to HOST or HOST:PORT",
    )
    parser.addini(
        "modelwire_cassette_dir", "folder for modelwire cassettes (relative to the rootdir)", default="cassettes"
    )
    # pytest-recording claims --record-mode and refuses to share it, whichever plugin loads
    # first: where it is installed, the option is its own, and its value applies to ours too.
    from importlib.util import find_spec

    if find_spec("pytest_recording") is not None:
        return
    try:
        group.addoption(
            "--record-mode",
            action="store",
            default=None,
            choices=(*RECORD_MODES, "rewrite"),
            help="modelwire cassettes: how to record",
        )
    except ValueError:
        pass  # another plugin has it: its value applies to ours too


# pytest-recording's modes beside ours: "rewrite" deletes and records anew, which is "all".
_ALIASES = {"rewrite": "all"}


def _record_mode(config: Any) -> str | None:
    mode: str | None = config.getoption("--modelwire-record-mode")
    if mode is None:
        try:
            mode = config.getoption("--record-mode")
        except ValueError:
            mode = None
    if mode is None:
        return None
    mode = _ALIASES.get(mode, mode)
    if mode not in RECORD_MODES:
        from ..errors import CassetteError

        raise CassetteError(
            (
                f"--record-mode={mode!r} means nothing to modelwire cassettes; use one of "
                f"{', '.join(RECORD_MODES)} (or rewrite)"
            )
        )
    return mode


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "cassette(path=None, **options): replay this test's provider traffic from a modelwire cassette"
    )


def _path(request: Any, marker: Any) -> Path:
    if marker is not None and marker.args:
        path = Path(marker.args[0])
        return path if path.is_absolute() else Path(request.config.rootpath) / path
    folder: Path = Path(request.config.rootpath) / request.config.getini("modelwire_cassette_dir")
    return folder / default_name(request.node.nodeid)


def default_name(nodeid: str) -> Path:
    """A test's own cassette path from its full node id, so no two tests share one:
    ``tests/api/test_x.py::TestA::test_y[p1]`` -> ``tests/api/test_x/TestA/test_y-p1.json``."""
    file, *names = nodeid.split("::")
    parts = [p for p in Path(file).with_suffix("").parts if p not in ("", ".", "..")]
    clean = [_safe(n) for n in names] or ["test"]
    return Path(*parts, *clean[:-1], clean[-1] + ".json")


def _safe(name: str) -> str:
    name = name.replace("[", "-").replace("]", "")
    return "".join(c if c.isalnum() or c in "-_.=+" else "_" for c in name)[:150]


@pytest.fixture
def cassette(request: Any) -> Iterator[Any]:
    from . import use_cassette

    marker = request.node.get_closest_marker("cassette")
    options = dict(marker.kwargs) if marker is not None else {}
    mode = _record_mode(request.config) or options.pop("record_mode", "none")
    options.pop("record_mode", None)
    path = _path(request, marker)
    with use_cassette(path, mode, **options) as session:
        yield session
        # A test that failed (a request the cassette could not answer raises in the test)
        # is reported once, as a failure, not again as an error in teardown.
        report = getattr(request.node, "_modelwire_call", None)
        session.reported = report is not None and report.failed
    if request.config.getoption("--cassette-recheck") and path.is_file():
        _recheck_after(request, path)


def _recheck_after(request: Any, path: Path) -> None:
    """The test's cassette sent again (once the replay is over), its drift kept for the
    summary, within the session's call limit."""
    from ._recheck import recheck

    done = request.config.stash.setdefault(_RECHECKED, [])
    limit = request.config.getoption("--cassette-recheck-max-calls")
    spent = sum(r.calls for _, r in done)
    if limit is not None and spent >= limit:
        return
    allowed = request.config.getoption("--cassette-recheck-allow-host") or ()
    report = recheck([path], allow_hosts=allowed, max_calls=None if limit is None else limit - spent)
    done.append((request.node.nodeid, report))


_RECHECKED = pytest.StashKey[list[tuple[str, Any]]]()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: Any, config: Any) -> None:
    done = config.stash.get(_RECHECKED, None)
    if not config.getoption("--cassette-recheck", False) or done is None:
        return
    from ._drift import SEVERITIES

    terminalreporter.section("modelwire cassette recheck")
    worst_of = {0: "ok", 1: "warning", 2: "error"}
    for nodeid, report in done:
        counts = ", ".join(f"{sum(d.severity == s for d in report.drifts)} {s}" for s in reversed(SEVERITIES))
        terminalreporter.write_line(
            f"{worst_of[report.exit_status]:8} {nodeid}: {report.calls} call(s); {counts}"
            + (f"; stopped: {report.stopped}" if report.stopped else "")
        )
        for why in report.refused:
            terminalreporter.write_line(f"         REFUSED {why}")
        for drift in report.drifts:
            if drift.severity != "info" or terminalreporter.verbosity > 0:
                terminalreporter.write_line(f"         {drift}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Generator[None, Result[Any], None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item._modelwire_call = report


@pytest.fixture(autouse=True)
def _modelwire_cassette_marker(request: Any) -> Iterator[None]:
    if request.node.get_closest_marker("cassette") is not None and "cassette" not in request.fixturenames:
        request.getfixturevalue("cassette")
    yield
