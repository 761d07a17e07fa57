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


# Bugs inside modelwire surface as themselves in the tests, never as a provider's fault
# (see modelwire.adapters.debug); test_robustness checks the non-debug behaviour.
import os  # noqa: E402

os.environ.setdefault("MODELWIRE_DEBUG", "1")
