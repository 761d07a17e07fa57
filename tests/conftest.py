"""Shared fixtures."""

from __future__ import annotations

import pytest

from modelwire.testing.server import ProviderServer


@pytest.fixture
def server():
    """A local HTTP server on 127.0.0.1 that answers like a provider (see modelwire.testing)."""
    with ProviderServer() as srv:
        yield srv


# Bugs inside modelwire surface as themselves in the tests, never as a provider's fault
# (see modelwire.adapters.debug); test_robustness checks the non-debug behaviour.
import os  # noqa: E402

os.environ.setdefault("MODELWIRE_DEBUG", "1")
