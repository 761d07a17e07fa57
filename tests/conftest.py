"""Shared fixtures."""

from __future__ import annotations

import pytest

from modelwire.testing.server import ProviderServer


@pytest.fixture
def server():
    """A local HTTP server on 127.0.0.1 that answers like a provider (see modelwire.testing)."""
    with ProviderServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_kept_capabilities(monkeypatch):
    """Each test starts with no capability answer kept, in memory or on disk. A kept answer
    skips the lookup a test scripts (the cache is keyed by URL, and a port comes back), so
    the next scripted reply went to the wrong request. Tests of the cache set their own."""
    from modelwire.models import _learned, _lookup

    monkeypatch.setenv("MODELWIRE_CACHE_DIR", "")
    monkeypatch.setattr(_lookup, "_default", None)
    monkeypatch.setattr(_learned, "_default", None)  # and no rule a refusal taught another test


# The suite runs what a user's program runs: MODELWIRE_DEBUG off, so a bug inside modelwire
# is the InternalError a user would get. A test asks for debug mode with @pytest.mark.debug
# (a bug then surfaces as itself, and the models layer checks each request built on a draft
# against a full build); the files below ask for all their tests, each for its reason.
DEBUG_FILES = {
    "test_fuzz.py": "only typed errors may leave: a bug must fail as itself, not pass as InternalError",
    "test_drafts.py": "the models layer's check of each draft-built request against a full build runs",
    "test_adapters_errors.py": "it takes any ProviderError from every protocol's error bodies",
    "test_fast_paths.py": "it compares the short path's error with the full path's, whatever its type",
    "test_middleware.py": "its retries take any ProviderError",
    "test_chunked_reads.py": "it takes any ProviderError from a cut read",
}


# The slowest tests, marked slow: `pytest -m "not slow"` leaves them out of the edit-test loop,
# and the README's command (what CI runs) runs them with the rest. Each with what one run took
# (--durations, 2026-12-07, on 2 cores shared at a load of about 10: several times CI's).
SLOW = {
    "test_typing.py::test_pyright_finds_no_errors_in_the_package": "603 s",
    "test_typing.py::test_the_readme_examples_pass_mypy_strict": "140 s",
    "test_typing.py::test_the_readme_examples_pass_pyright": "38 s",
    "test_benchmarks.py": "socket_stream 178 s, stream 40 s, request_build 32 s, import_time 13 s; 15 in all",
    "test_release.py::test_the_built_wheel_installs_and_runs_outside_the_source_tree": "79 s",
    "test_docs_site.py::test_the_site_builds_strictly": "31 s",
    "test_load.py": "1,000 sequential calls 16 s, 100 cancelled streams 7 s, 200 concurrent streams 2-3 s each",
    "test_fuzz.py::test_msg_from_dict_takes_anything_and_raises_only_typed_errors": "16 s",
    "test_fuzz.py::test_formatters_raise_only_format_errors_on_odd_conversations": "14 s",
    "test_properties.py::test_generated_streams_are_valid_and_fold_to_their_content": "23 s",
    "test_first_project.py::test_the_first_project_records_once_and_replays_with_no_key": "30 s",
    "test_agentscope1_model.py": "23 s at a load of 5: AgentScope 1.x's agent run in its own environment, 17 checks",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in DEBUG_FILES:
            item.add_marker(pytest.mark.debug)
        test = f"{item.path.name}::{getattr(item, 'originalname', item.name)}"
        if item.path.name in SLOW or test in SLOW:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _production_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """MODELWIRE_DEBUG off for each test, on for one marked ``debug``, whatever the shell says."""
    if request.node.get_closest_marker("debug") is not None:
        monkeypatch.setenv("MODELWIRE_DEBUG", "1")
    else:
        monkeypatch.delenv("MODELWIRE_DEBUG", raising=False)
