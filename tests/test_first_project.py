"""A newcomer's project built from the docs alone: the files of docs/guides/first-project.md
(a modelwire.toml with three profiles, an agent with two tools, a pytest file) written as the
page shows them, recorded once against a local server standing in for Anthropic, OpenAI and
Google, then replayed with no key and no server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from modelwire.testing import ProviderServer, json_reply, sse_reply
from modelwire.testing.sse import body

from docs_blocks import ROOT

PAGE = ROOT / "docs" / "guides" / "first-project.md"


def files() -> dict[str, str]:
    """Each block of the page that starts with ``# <file name>``, by that name."""
    out = {}
    for code in re.findall(r"```(?:python|toml)\n(.*?)```", PAGE.read_text(), re.S):
        first = code.splitlines()[0]
        if re.fullmatch(r"# [\w.]+\.(py|toml)", first):
            out[first[2:]] = code
    return out


def _protocol(request) -> str:
    path = request["path"]
    if path.endswith("/messages"):
        return "anthropic"
    return "gemini" if "generatecontent" in path.lower() else "openai-chat"


def _wants_schema(request) -> bool:
    sent = request["json"]
    return bool(
        (sent.get("output_config") or {}).get("format")
        or sent.get("response_format")
        or "responseJsonSchema" in str(sent.get("generationConfig"))
        or "responseSchema" in str(sent.get("generationConfig"))
    )


def respond(request):
    """What each provider would answer: its file object to an upload, the plan as JSON when a
    schema is asked for, both tools on the first turn, then a short answer."""
    if request["path"].endswith("/v1/files"):
        return json_reply(
            {
                "id": "file_011CNha8iCJcU1wXNR6q4V8w",
                "type": "file",
                "filename": "map.pdf",
                "mime_type": "application/pdf",
                "size_bytes": 27,
                "created_at": "2026-12-07T00:00:00Z",
                "downloadable": False,
            }
        )
    protocol = _protocol(request)
    sent = json.dumps(request["json"])
    if _wants_schema(request):
        return sse_reply(body(protocol, ("text", '{"city": "Lisbon", "advice": "Walk now, it is sunny."}')))
    if "weather" in sent and "21 degrees" not in sent:
        return sse_reply(
            body(
                protocol,
                ("tool", "call_w", "weather", '{"city": "Lisbon"}'),
                ("tool", "call_t", "local_time", '{"city": "Lisbon"}'),
            )
        )
    return sse_reply(body(protocol, ("text", "Yes: sunny, 21 degrees, and it is 14:05.")))


def test_the_first_project_records_once_and_replays_with_no_key(tmp_path):
    made = files()
    assert set(made) == {"modelwire.toml", "trip.py", "test_trip.py"}
    for name, code in made.items():
        (tmp_path / name).write_text(code)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "MODELWIRE_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    with ProviderServer() as server:
        server.respond = respond
        recording = dict(
            env,
            ANTHROPIC_API_KEY="sk-ant-first",
            OPENAI_API_KEY="sk-first",
            GEMINI_API_KEY="g-first",
            ANTHROPIC_BASE_URL=server.url,
            OPENAI_BASE_URL=server.url + "/v1",
            GOOGLE_GEMINI_BASE_URL=server.url,
        )
        first = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--record-mode=once"],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=tmp_path,
            env=recording,
        )
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
        paths = [r["path"] for r in server.requests]
    assert any(p.endswith("/messages") for p in paths) and any(p.endswith("/chat/completions") for p in paths)
    assert any("generatecontent" in p.lower() for p in paths) and any(p.endswith("/v1/files") for p in paths)
    cassettes = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "cassettes").rglob("*.json"))
    assert cassettes == [
        "cassettes/test_trip/test_a_map_goes_in_a_message_as_an_uploaded_file.json",
        "cassettes/test_trip/test_the_planner_uses_its_tools_then_another_provider_sums_up.json",
    ]
    # The same base URLs as when recording (a cassette matches the whole URL), but no key and no server.
    replaying = {k: v for k, v in recording.items() if not k.endswith("_API_KEY")}
    again = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env=replaying,
    )
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert "2 passed" in again.stdout
