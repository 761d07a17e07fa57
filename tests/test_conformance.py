"""The conformance suite (modelwire.testing.conformance) on every registered protocol: the
registry decides which, no list of protocols is written here."""

from __future__ import annotations

import pytest

from modelwire.protocols import protocol_names
from modelwire.testing import conformance

CASES = [(name, check) for name in protocol_names() for check in conformance.CHECKS]


@pytest.mark.parametrize("protocol,check", CASES, ids=[f"{name}-{check.__name__}" for name, check in CASES])
def test_every_protocol_conforms(protocol, check):
    check(protocol)


def test_the_suite_covers_every_builtin_protocol():
    assert len(protocol_names()) >= 6 and len(CASES) == len(protocol_names()) * len(conformance.CHECKS)
