"""A protocol from outside modelwire, with its own NDJSON framing, installed the way pip
installs one (a module and an entry point) and checked by the same conformance suite as
the built-in protocols, with nothing edited outside its package."""

from __future__ import annotations

import sys
import textwrap

import pytest

from modelwire import protocols
from modelwire.testing import conformance

PLUGIN = '''
"""ndtoy: a toy chat protocol streamed as NDJSON (one JSON object per line)."""
import json

from modelwire.adapters import OPTIONAL, BaseAdapter, Delta, error_object, shape_problem
from modelwire.errors import FormatError, StreamProtocolError, UnsupportedOptionError
from modelwire.formatters import (MessagesFormatter, origin_replays, parse_arguments, result_blocks, sent_source,
                                  tool_choice_name, tool_specs)
from modelwire.message import origin
from modelwire.protocols import Capabilities, Preset, WireProtocol

NAME = "ndtoy"
SHAPES = {
    "think": {"text": (str,)},
    "text": {"text": (str,)},
    "call": {"id": (str,), "name": (str,), "arguments": (dict,)},
    "done": {"reason": (str,), "usage": (list,), "usage[]": (int,)},
}


class ToyAdapter(BaseAdapter):
    protocol = NAME
    deltas = (Delta("text", key="kind", kinds=("text", "thinking")),)  # a piece of what is open
    is_error_frame = staticmethod(error_object)  # a proxy's error object is its only one

    def handle(self, data, event):
        kind = data.get("kind")
        if kind == "think":
            block = self.blocks.get("think") or self.open_block("think", "thinking")
            block.extras["provider_metadata"] = self.origin
            self.delta(block, data["text"])
        elif kind == "text":
            self.close_block("think")
            block = self.blocks.get("text") or self.open_block("text", "text")
            self.delta(block, data["text"])
        elif kind == "call":
            self.close_all()
            self.whole_call(data["name"], data["id"], json.dumps(data["arguments"]))
        elif kind == "done":
            if len(data["usage"]) != 2:
                raise StreamProtocolError("an ndtoy usage that is not [input, output]", body=data)
            self.input_tokens, self.output_tokens = data["usage"]
            self.provider_stop_reason = data["reason"]
            self.stop_reason = {"stop": "end_turn", "calls": "tool_use"}.get(data["reason"], "other")
            self.finish()
        else:
            raise StreamProtocolError(f"an ndtoy line of kind {kind!r}", body=data)

    def shape_problem(self, data, event):
        return shape_problem(data, SHAPES.get(data.get("kind"), {}))


class ToyFormatter(MessagesFormatter):
    protocol = NAME

    @staticmethod
    def needs_inline(media_type):
        return True

    def finish(self, acc, tools, tool_choice):
        specs = tool_specs(tools)
        mode, _ = tool_choice_name(tool_choice, specs)
        if mode in ("required", "tool"):
            raise FormatError(None, "ndtoy cannot force a tool", NAME, code="unsupported-option")
        tools = [{"name": s.name, "schema": s.parameters} for s in specs] if mode != "none" else []
        return {"turns": acc.turns, "tools": tools}

    def _user(self, seg):
        images = []
        for b in seg.blocks:
            if b.type == "data":
                _, data, media_type = sent_source(b, seg.index_of(b), NAME, urls=())
                if not media_type.startswith("image/"):
                    raise FormatError(seg.index_of(b), f"ndtoy takes images, not {media_type}", NAME)
                images.append(data)
        return {"role": "user", "text": "".join(b.text for b in seg.blocks if b.type == "text"), "images": images}

    def _assistant(self, seg):
        return {
            "role": "assistant",
            "text": "".join(b.text for b in seg.blocks if b.type == "text"),
            "thinking": "".join(b.thinking for b in seg.blocks if b.type == "thinking"
                                and origin_replays(origin(b), NAME, self.provider, scope="protocol")),
            "calls": [{"id": b.id, "name": b.name, "arguments": parse_arguments(b)}
                      for b in seg.blocks if b.type == "tool_call"],
        }

    def _result(self, result, index):
        text = "".join(b.text for b in result_blocks(result) if b.type == "text")
        return {"role": "tool", "id": result.id, "text": text}


ToyFormatter.payload_turns = "turns"


class ToyProtocol(WireProtocol):
    name = NAME
    description = "a toy NDJSON protocol from a plugin"
    adapter = "ndtoy_protocol:ToyAdapter"
    formatter = "ndtoy_protocol:ToyFormatter"
    path = "/v1/chat"
    framing = "ndjson"
    content_type = "application/x-ndjson"
    replay_scope = "protocol"
    capabilities = Capabilities(thinking=True, parallel_tool_calls=True)
    presets = (Preset(NAME, NAME, "http://127.0.0.1:1", None, "NDTOY_BASE_URL", key_required=False, auth="none",
                      example="toy-1"),)

    def apply_options(self, body, options, preset, model="", caps=None):
        taken = {"max_tokens": "limit", "temperature": "temperature"}
        for name, field in taken.items():
            if getattr(options, name) is not None:
                body[field] = getattr(options, name)
        for name in ("top_p", "stop", "thinking", "thinking_budget", "reasoning_effort", "reasoning_summary",
                     "thinking_display", "parallel_tool_calls", "json_schema"):
            if getattr(options, name) is not None:
                raise UnsupportedOptionError(name, preset.name, "ndtoy takes only max_tokens and temperature")
        if options.json_schema_name != "output":
            raise UnsupportedOptionError("json_schema_name", preset.name, "ndtoy has no structured output")

    def answer_events(self, answer):
        return [(None, line) for line in answer["lines"]]  # a whole answer: its lines in one JSON list

    def fake_stream(self, *blocks, usage=(10, 5), **_):
        lines = []
        for block in blocks:
            if block[0] in ("think", "text"):
                lines += [{"kind": block[0], "text": piece} for piece in block[1].split(" ")]
                lines = [{**line, "text": line["text"] + " "} if i < len(lines) - 1 else line
                         for i, line in enumerate(lines)]
            elif block[0] == "tool":
                lines.append({"kind": "call", "id": block[1], "name": block[2], "arguments": json.loads(block[3])})
        reason = "calls" if any(b[0] == "tool" for b in blocks) else "stop"
        lines.append({"kind": "done", "reason": reason, "usage": list(usage)})
        return b"".join(json.dumps(line).encode() + b"\\n" for line in lines)


PROTOCOL = ToyProtocol()
'''


@pytest.fixture(scope="module")
def ndtoy(tmp_path_factory):
    """Installed as pip would: a module and a dist-info whose entry point names it."""
    folder = tmp_path_factory.mktemp("site")
    (folder / "ndtoy_protocol.py").write_text(textwrap.dedent(PLUGIN))
    info = folder / "ndtoy_protocol-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ndtoy-protocol\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[modelwire.protocols]\nndtoy = ndtoy_protocol:PROTOCOL\n")
    sys.path.insert(0, str(folder))
    saved = protocols._entry_points, protocols._loaded, protocols._presets
    protocols._entry_points, protocols._loaded, protocols._presets = None, {}, {}
    try:
        assert "ndtoy" in protocols.protocol_names()
        yield "ndtoy"
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("ndtoy_protocol", None)
        protocols._entry_points, protocols._loaded, protocols._presets = saved


@pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.check_names())
def test_an_ndjson_plugin_passes_the_conformance_suite(ndtoy, check):
    check(ndtoy)


def test_the_suite_catches_a_plugin_that_drops_an_option(ndtoy):
    wire = protocols.get_protocol(ndtoy)
    original = wire.apply_options

    def careless(body, options, preset, model="", caps=None):
        if options.top_p is not None:
            return  # silently dropped
        original(body, options, preset, model, caps)

    wire.apply_options = careless
    try:
        with pytest.raises(conformance.ConformanceError, match="top_p=0.8 changed nothing in the request"):
            conformance.options_mapped_or_refused(ndtoy)
    finally:
        del wire.apply_options
