"""Shared fixtures."""

from __future__ import annotations

import pytest

from modelwire.testing.server import ProviderServer


@pytest.fixture
def server():
    """A local HTTP server on 127.0.0.1 that answers like a provider (see modelwire.testing)."""
    with ProviderServer() as srv:
        yield srv
