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


def test_an_undeclared_extra_fails_the_suite(monkeypatch):
    """A protocol whose adapter writes an extra it does not declare is told which."""
    from modelwire.protocols import get_protocol

    wire = get_protocol("anthropic")
    monkeypatch.setattr(type(wire), "extras_keys", tuple(k for k in wire.extras_keys if k != "signature"))
    monkeypatch.setattr(type(wire), "replay_keys", ())
    with pytest.raises(
        conformance.ConformanceError, match=r"anthropic: its adapter writes \['signature'\] on a thinking block"
    ):
        conformance.extras_are_declared("anthropic")
    monkeypatch.setattr(type(wire), "replay_keys", ("signature",))
    with pytest.raises(
        conformance.ConformanceError, match=r"replay_keys \['signature'\] are not among its extras_keys"
    ):
        conformance.extras_are_declared("anthropic")


def test_an_undeclared_extra_no_generated_stream_reaches_fails_the_suite(monkeypatch):
    """An extra only a provider's real stream brings (Anthropic's text citations: generated
    streams never cite) is read from the adapter's code, and must be declared too."""
    from modelwire.protocols import get_protocol

    wire = get_protocol("anthropic")
    monkeypatch.setattr(type(wire), "extras_keys", tuple(k for k in wire.extras_keys if k != "citations"))
    conformance.extras_are_declared("anthropic")  # the generated streams carry no citation
    with pytest.raises(conformance.ConformanceError, match=r"its adapter can write \['citations'\] on a block"):
        conformance.extras_in_code_are_declared("anthropic")


def test_a_source_sent_as_it_is_fails_the_suite(monkeypatch):
    """A formatter that sends a URL its provider cannot fetch (instead of refusing it) is told."""
    from modelwire.protocols import get_protocol

    formatter = get_protocol("ollama").formatter_class()
    monkeypatch.setattr(formatter, "_user", lambda self, seg: {"role": "user", "content": "sent as it is"})
    with pytest.raises(conformance.ConformanceError, match="an ftp: source was formatted"):
        conformance.sources_it_cannot_send_are_refused("ollama")
