"""pytest plugin (registered by entry point): replay provider traffic from cassettes.

    @pytest.mark.cassette                      # cassettes/<test file>/<class>/<test name>.json
    async def test_weather(): ...

    @pytest.mark.cassette("cassettes/custom.json", ignore_fields=["metadata"])
    def test_other(cassette): ...             # the fixture gives the CassetteSession

``--record-mode {none,once,new_episodes,all}`` (default ``none``: replay only, as CI
runs; pytest-recording's ``rewrite`` is ``all``). pytest-recording owns ``--record-mode`` when it is installed too; then (and always)
``--modelwire-record-mode`` sets modelwire's, and pytest-recording's value is used for
modelwire as well unless that is given. The folder is set by the ``modelwire_cassette_dir`` ini option (default
``cassettes``, relative to the rootdir).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

RECORD_MODES = ("none", "once", "new_episodes", "all")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("modelwire")
    group.addoption("--modelwire-record-mode", action="store", default=None, choices=RECORD_MODES, help="modelwire cassettes: how to record")
    parser.addini("modelwire_cassette_dir", "folder for modelwire cassettes (relative to the rootdir)", default="cassettes")
    # pytest-recording claims --record-mode and refuses to share it, whichever plugin loads
    # first: where it is installed, the option is its own, and its value applies to ours too.
    from importlib.util import find_spec

    if find_spec("pytest_recording") is not None:
        return
    try:
        group.addoption("--record-mode", action="store", default=None, choices=(*RECORD_MODES, "rewrite"), help="modelwire cassettes: how to record")
    except ValueError:
        pass  # another plugin has it: its value applies to ours too


# pytest-recording's modes beside ours: "rewrite" deletes and records anew, which is "all".
_ALIASES = {"rewrite": "all"}


def _record_mode(config: Any) -> str | None:
    mode = config.getoption("--modelwire-record-mode")
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

        raise CassetteError(f"--record-mode={mode!r} means nothing to modelwire cassettes; use one of {', '.join(RECORD_MODES)} (or rewrite)")
    return mode


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "cassette(path=None, **options): replay this test's provider traffic from a modelwire cassette")


def _path(request: Any, marker: Any) -> Path:
    if marker is not None and marker.args:
        path = Path(marker.args[0])
        return path if path.is_absolute() else Path(request.config.rootpath) / path
    folder = Path(request.config.rootpath) / request.config.getini("modelwire_cassette_dir")
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
    with use_cassette(_path(request, marker), mode, **options) as session:
        yield session
        # A test that failed (a request the cassette could not answer raises in the test)
        # is reported once, as a failure, not again as an error in teardown.
        report = getattr(request.node, "_modelwire_call", None)
        session.reported = report is not None and report.failed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item._modelwire_call = report


@pytest.fixture(autouse=True)
def _modelwire_cassette_marker(request: Any) -> Iterator[None]:
    if request.node.get_closest_marker("cassette") is not None and "cassette" not in request.fixturenames:
        request.getfixturevalue("cassette")
    yield
