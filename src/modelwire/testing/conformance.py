"""The conformance suite: what every wire protocol must do, checked on any registered one,
built in or from a plugin. A plugin author runs the same checks modelwire runs on its own:

    import pytest
    from modelwire.testing import conformance

    @pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.check_names())
    def test_conformance(check):
        check("my-protocol")

Each check takes a protocol's name and raises :class:`ConformanceError` (an
``AssertionError``) saying what the protocol did wrong and how to put it right;
``conformance.run(name)`` runs them all and returns the failures. Every check runs in
production mode (``MODELWIRE_DEBUG`` off, whatever the environment says; see
:func:`production`), so what it accepts is what a user's program gets. The checks use only
the protocol's declared parts (its ``fake_stream``, framing, formatter, presets and
options), so they need no network and no recording:

- ``required_parts_are_written`` (first): its ``answer_events`` and ``fake_stream`` (which
  reports the ``usage`` it is given, ``(10, 5)`` by default), its adapter's ``handle`` and
  ``is_error_frame`` and none of the names the adapter kit used to keep private (``_on_close`` ...), a formatter that
  keeps drafts; each missing piece named with its fix;
- ``presets_declare_their_dialects``: the protocol's presets use only the dialect keys it
  declares (``dialect_keys``), with values it takes;
- ``streams_decode``: generated streams (text, tool calls, thinking where the protocol
  has it) decode to grammar-valid events that fold into the blocks that were sent, the
  same whether the body comes whole, event by event or byte by byte;
- ``extras_are_declared``: the extras on the blocks its generated streams decode to are
  its declared ``extras_keys`` or the shared kit's (``COMMON_EXTRAS``), and its
  ``replay_keys`` are among them;
- ``broken_streams_are_typed``: a body cut short, or garbage, ends with a typed
  :class:`~modelwire.errors.ProviderError` (never ``InternalError``) whose closing events keep
  the stream valid; one cut between two events, in ``IncompleteStreamError``;
- ``formatter_pairs_calls``: a conversation with a tool round formats, and a tool call
  with no result (or a result with no call) is refused with a ``FormatError``;
- ``options_mapped_or_refused``: every option changes the request or is refused with an
  ``UnsupportedOptionError`` naming it (never dropped);
- ``switches_in``: replies made by every other registered protocol (thinking, calls,
  results) format for this one;
- ``cassettes_replay``: a call recorded against a local server replays with the server
  gone, giving the same events;
- ``extras_in_code_are_declared``: every extra the adapter's code can write on a block (read
  from its source, not only what generated streams reach) is declared;
- ``whole_answers_decode``: it reads a whole (not streamed) answer, and where it gives a
  ``fake_answer``, that answer folds to the reply its stream of the same blocks folds to;
- ``sources_it_cannot_send_are_refused``: a media source no provider fetches (``ftp:``) is
  refused with a ``FormatError`` naming it;
- ``short_path_agrees``: its ``deltas`` table decodes its fake streams as its ``handle`` does;
- ``mutated_bodies_are_typed`` (``seed=0, count=200``): its fake streams mutated the ways
  real ones go wrong (a field missing or of another type, an event lost, repeated or out of
  place, bytes changed) end in a typed error that is not ``InternalError``, or decode, to
  events that keep the grammar; a failure names the seed and the mutation;
- ``tool_choice_is_kept``: ``"none"`` changes the request against ``"auto"``, and a choice
  naming no tool given is refused naming it;
- ``media_it_cannot_take_is_refused``: media of a type it has no field for is sent or
  refused with a ``FormatError`` naming the type, never dropped;
- ``thinking_replays``: where it declares thinking, a reply's own thinking goes back;
- ``drafts_go_on``: a draft extended turn after turn gives what a full format gives;
- ``speaker_names_are_kept``: ``speaker_names`` puts each speaker's name on their words.
"""

from __future__ import annotations

from ._conformance_kit import OPTION_VALUES, Check, ConformanceError, production
from ._conformance_formatting import (
    drafts_go_on,
    media_it_cannot_take_is_refused,
    speaker_names_are_kept,
    thinking_replays,
    tool_choice_is_kept,
)
from ._conformance_parts import (
    mutated_bodies_are_typed,
    required_parts_are_written,
)
from ._conformance_streams import (
    broken_streams_are_typed,
    cassettes_replay,
    extras_are_declared,
    extras_in_code_are_declared,
    formatter_pairs_calls,
    options_mapped_or_refused,
    presets_declare_their_dialects,
    short_path_agrees,
    sources_it_cannot_send_are_refused,
    streams_decode,
    switches_in,
    whole_answers_decode,
)

__all__ = ["CHECKS", "Check", "ConformanceError", "check_names", "run", "production", "OPTION_VALUES"]


CHECKS: list[Check] = [
    required_parts_are_written,
    presets_declare_their_dialects,
    streams_decode,
    extras_are_declared,
    broken_streams_are_typed,
    formatter_pairs_calls,
    options_mapped_or_refused,
    switches_in,
    cassettes_replay,
    extras_in_code_are_declared,
    whole_answers_decode,
    sources_it_cannot_send_are_refused,
    short_path_agrees,
    mutated_bodies_are_typed,
    tool_choice_is_kept,
    media_it_cannot_take_is_refused,
    thinking_replays,
    drafts_go_on,
    speaker_names_are_kept,
]


def check_names() -> list[str]:
    return [check.__name__ for check in CHECKS]


def run(protocol: str) -> list[str]:
    """Every check on ``protocol``: the failures, as sentences (empty when it conforms)."""
    failures = []
    for check in CHECKS:
        try:
            check(protocol)
        except ConformanceError as exc:
            failures.append(str(exc))
    return failures
