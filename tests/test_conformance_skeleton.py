"""The skeleton on docs/extending/adding-a-protocol.md, taken from the page as a reader copies
it, installed the way pip installs a plugin (a module and its entry points): it passes the
conformance suite as written, and modelwire's generic tests take it. Each trap a plugin
author can fall into (a kit name of the adapter's own, a KeyError on a malformed event, a
missing ``answer_events``) fails the suite with a message that names the fix."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from modelwire import protocols
from modelwire.testing import conformance

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "extending" / "adding-a-protocol.md"


def skeleton() -> str:
    (code,) = [b for b in re.findall(r"```py\n(.*?)```", PAGE.read_text(), re.S) if "(WireProtocol)" in b]
    return code


def install(folder: Path, source: str) -> None:
    """``acme_protocol`` in ``folder``, with a dist-info whose entry points name it."""
    (folder / "acme_protocol.py").write_text(source)
    info = folder / "acme_protocol-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-protocol\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[modelwire.protocols]\nacme = acme_protocol:PROTOCOL\n\n[modelwire.presets]\nacme = acme_protocol:PROTOCOL\n"
    )


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """Installs a variant of the skeleton (its source) and gives its name."""

    def installed(source: str = "") -> str:
        install(tmp_path, source or skeleton())
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setattr(protocols, "_entry_points", None)
        monkeypatch.setattr(protocols, "_loaded", {})
        monkeypatch.setattr(protocols, "_presets", {})
        sys.modules.pop("acme_protocol", None)
        assert "acme" in protocols.protocol_names()
        return "acme"

    yield installed
    sys.modules.pop("acme_protocol", None)


def variant(old: str, new: str) -> str:
    """The skeleton with one piece changed, as a plugin author might get it wrong."""
    source = skeleton()
    assert source.count(old) == 1, old
    return source.replace(old, new)


@pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.check_names())
def test_the_skeleton_passes_the_conformance_suite_as_written(plugin, check):
    check(plugin())


def test_a_kit_name_of_the_adapters_own_fails_the_suite_and_the_stream_still_ends_typed(plugin):
    """An ``_on_close`` of the adapter's own (once the kit's end-of-stream hook) is not
    called: a cut stream still ends in IncompleteStreamError, and the suite names the fix."""
    from modelwire.errors import IncompleteStreamError
    from modelwire.protocols import decode_sse

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        name = plugin(
            variant(
                "    def _open(self, kind):",
                "    def _on_close(self):\n        self.finish()\n\n    def _open(self, kind):",
            )
        )
        protocols.get_protocol(name).adapter_class()
    assert any("defines _on_close, which BaseAdapter no longer calls" in str(w.message) for w in caught)
    body = protocols.get_protocol(name).fake_stream(("text", "It is sunny in Paris."))
    with pytest.raises(IncompleteStreamError):
        decode_sse(name, body[: len(body) // 2].rsplit(b"\n\n", 1)[0] + b"\n\n", "r")
    with pytest.raises(conformance.ConformanceError, match=r"defines _on_close, .* use on_close if it is meant"):
        conformance.required_parts_are_written(name)


def test_an_end_of_stream_hook_that_ends_every_call_fails_the_suite(plugin):
    """An ``on_close`` that finishes whatever came: a cut stream would pass for whole."""
    name = plugin(
        variant(
            "    def _open(self, kind):", "    def on_close(self):\n        self.finish()\n\n    def _open(self, kind):"
        )
    )
    with pytest.raises(
        conformance.ConformanceError,
        match=r"a body cut in half decoded without an error: .* calls super\(\).on_close\(\) otherwise",
    ):
        conformance.broken_streams_are_typed(name)


def test_an_adapter_written_for_the_private_hook_still_streams_and_is_told(plugin):
    """``_handle``, the hook every adapter wrote before it was public, is still called (with
    a DeprecationWarning when the class is made); the suite names the public one."""
    from modelwire.protocols import decode_sse

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        name = plugin(variant("    def handle(self, data, event):", "    def _handle(self, data, event):"))
        wire = protocols.get_protocol(name)
        wire.adapter_class()
    assert any("defines _handle" in str(w.message) and "its hook is handle" in str(w.message) for w in caught)
    events = decode_sse(name, wire.fake_stream(("text", "Still here.")), "r")
    assert "".join(e.delta for e in events if e.type == "TEXT_BLOCK_DELTA") == "Still here."
    with pytest.raises(conformance.ConformanceError, match=r"defines _handle, .* use handle if it is meant"):
        conformance.required_parts_are_written(name)


def test_a_key_error_on_a_malformed_event_fails_the_suite(plugin, monkeypatch):
    """Without ``shape_problem``, an event missing a field is a KeyError: InternalError in
    production, whatever MODELWIRE_DEBUG says (the suite turns it off)."""
    monkeypatch.setenv("MODELWIRE_DEBUG", "1")
    name = plugin(variant("    def shape_problem(self, data, event):", "    def not_a_hook(self, data, event):"))
    with pytest.raises(
        conformance.ConformanceError, match=r"ended in InternalError.*give shape_problem\(data, event\)"
    ):
        conformance.mutated_bodies_are_typed(name, seed=0, count=200)
    assert os.environ["MODELWIRE_DEBUG"] == "1"  # given back as it was


def test_a_missing_answer_events_fails_the_suite_first(plugin):
    name = plugin(variant("    def answer_events(self, answer):", "    def whole(self, answer):"))
    assert conformance.CHECKS[0] is conformance.required_parts_are_written
    with pytest.raises(conformance.ConformanceError, match=r"WireProtocol.answer_events: write answer_events"):
        conformance.required_parts_are_written(name)


def test_an_adapter_without_is_error_frame_fails_the_suite_first(plugin):
    """Which frames are errors is the protocol's to say: without its own ``is_error_frame``
    the suite names the hook and the one line that writes the kit's."""
    name = plugin(variant("    def is_error_frame(data):", "    def error_frame(data):"))
    with pytest.raises(conformance.ConformanceError, match=r"write is_error_frame\(data\).*error_object"):
        conformance.required_parts_are_written(name)


def test_an_is_error_frame_that_misses_a_proxys_error_object_fails_the_suite(plugin):
    name = plugin(
        variant(
            "        return error_object(data)",
            '        return data.get("type") == "error"',
        )
    )
    with pytest.raises(conformance.ConformanceError, match=r"is_error_frame\(\{'error'.* is false: a proxy"):
        conformance.required_parts_are_written(name)


def test_an_error_frame_in_the_skeletons_stream_is_its_typed_error(plugin):
    """The kit asks the protocol's hook, then raises the frame's typed error with what came
    before it kept (the closing events of the text already streamed)."""
    from modelwire.adapters import encode_sse
    from modelwire.errors import OverloadedError
    from modelwire.protocols import decode_sse

    name = plugin()
    body = encode_sse(
        [(None, {"type": "text", "text": "Half"}), (None, {"error": {"type": "overloaded_error", "message": "busy"}})]
    )
    with pytest.raises(OverloadedError) as caught:
        decode_sse(name, body, "r")
    events = caught.value.events
    assert [e.delta for e in events if e.type == "TEXT_BLOCK_DELTA"] == ["Half"]
    assert events[-1].type == "MODEL_CALL_END" and "busy" in str(caught.value)


def test_a_formatter_without_drafts_fails_the_suite(plugin):
    name = plugin(
        variant(
            "class AcmeFormatter(MessagesFormatter):",
            "class AcmeFormatter(MessagesFormatter):\n    payload_turns = None",
        )
    )
    with pytest.raises(conformance.ConformanceError, match=r"keeps no drafts: build it on .*MessagesFormatter"):
        conformance.required_parts_are_written(name)


# Tests that read modelwire's own recordings of each built-in protocol's provider: a plugin
# has none in that corpus.
OWN_RECORDINGS = ("test_every_recorded_body_decodes_the_same_on_both_paths",)
# The tests that run on every registered protocol: the files that ask the registry.
GENERIC = sorted(
    path.name
    for path in (ROOT / "tests").glob("test_*.py")
    if "protocol_names()" in path.read_text() and not path.name.startswith(("test_conformance", "test_protocol_plugin"))
)


def test_the_generic_tests_take_the_skeleton(tmp_path):
    """The tests that run on every registered protocol, run with the skeleton installed:
    what passes conformance passes them."""
    install(tmp_path, skeleton())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "acme"]
        + [f"--deselect=tests/test_fast_paths.py::{name}[acme]" for name in OWN_RECORDINGS]
        + [f"tests/{name}" for name in GENERIC],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", done.stdout).group(1))
    assert passed >= 50, done.stdout[-2000:]
