"""pytest plugin (registered by entry point): replay provider traffic from cassettes.

    @pytest.mark.cassette                      # cassettes/<test module>/<test name>.json
    async def test_weather(): ...

    @pytest.mark.cassette("cassettes/custom.json", ignore_fields=["metadata"])
    def test_other(cassette): ...             # the fixture gives the CassetteSession

``--record-mode {none,once,new_episodes,all}`` (default ``none``: replay only, as CI
runs). pytest-recording owns ``--record-mode`` when it is installed too; then (and always)
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
    try:
        group.addoption("--record-mode", action="store", default=None, choices=RECORD_MODES, help="modelwire cassettes: how to record")
    except ValueError:
        pass  # pytest-recording (or VCR's plugin) has it: its value applies to ours too
    parser.addini("modelwire_cassette_dir", "folder for modelwire cassettes (relative to the rootdir)", default="cassettes")


def _record_mode(config: Any) -> str | None:
    mode = config.getoption("--modelwire-record-mode")
    if mode is None:
        try:
            mode = config.getoption("--record-mode")
        except ValueError:
            mode = None
    return mode if mode in RECORD_MODES else None


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "cassette(path=None, **options): replay this test's provider traffic from a modelwire cassette")


def _path(request: Any, marker: Any) -> Path:
    if marker is not None and marker.args:
        path = Path(marker.args[0])
        return path if path.is_absolute() else Path(request.config.rootpath) / path
    folder = Path(request.config.rootpath) / request.config.getini("modelwire_cassette_dir")
    name = request.node.name.replace("/", "_").replace("[", "-").replace("]", "")
    return folder / Path(request.node.fspath).stem / f"{name}.json"


@pytest.fixture
def cassette(request: Any) -> Iterator[Any]:
    from . import use_cassette

    marker = request.node.get_closest_marker("cassette")
    options = dict(marker.kwargs) if marker is not None else {}
    mode = _record_mode(request.config) or options.pop("record_mode", "none")
    options.pop("record_mode", None)
    with use_cassette(_path(request, marker), mode, **options) as session:
        yield session


@pytest.fixture(autouse=True)
def _modelwire_cassette_marker(request: Any) -> Iterator[None]:
    if request.node.get_closest_marker("cassette") is not None and "cassette" not in request.fixturenames:
        request.getfixturevalue("cassette")
    yield
