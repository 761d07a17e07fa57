"""Cassettes that recheck themselves: a cassette is recorded against the local provider
server, then the server changes (a new field, a new stop reason, a 400, a new block kind)
and ``recheck`` says so, with the severity each deserves; an unchanged server reports
nothing. The live requests carry the key from the environment, which no cassette ever
holds; a budget or a call limit stops the run; ``update`` rewrites a live cassette and
never a derived one; ``pytest --cassette-recheck`` reports per test."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest

from modelwire.agent import UsageLimits
from modelwire.cassettes import Cassette, recheck, use_cassette
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.testing import ProviderServer, error_reply
from modelwire.testing.sse import body, stream_reply

KEY = "sk-ant-recheck-secret-0123456789"
TOOL_TURN = body("anthropic", ("text", "Let me look."), ("tool", "toolu_01", "lookup", '{"city": "Paris"}'))


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return KEY


def record(path, *answers):
    """A cassette of one call per answer, recorded from the local server."""
    with ProviderServer() as server:
        server.script(*(stream_reply("anthropic", a) for a in answers))
        with use_cassette(path, "all"):
            model = load_model("anthropic:claude-test", base_url=server.url)
            for n in range(len(answers)):
                asyncio.run(model.complete([UserMsg("u", f"question {n}")]))
    return path


def live(path, *replies, **options):
    """``recheck`` against a server answering ``replies``; the report and what it was sent."""
    with ProviderServer() as server:
        server.script(*replies)
        report = recheck([path], base_url=server.url, **options)
        return report, server.requests


def test_an_unchanged_provider_reports_nothing_and_the_key_comes_from_the_environment(tmp_path, key):
    path = record(tmp_path / "c.json", TOOL_TURN)
    report, sent = live(path, stream_reply("anthropic", TOOL_TURN))
    assert report.drifts == [] and report.exit_status == 0 and report.calls == 1
    recorded = Cassette.load(path).interactions[0].request
    assert sent[0]["json"] == recorded["json"] and sent[0]["path"] == "/v1/messages"
    assert sent[0]["headers"]["x-api-key"] == key  # the credential is the environment's ...
    assert key not in path.read_text()  # ... and never the cassette's
    provenance = json.loads(path.read_text())["provenance"]
    assert (
        provenance["kind"] == "live"
        and provenance["models"] == ["claude-test"]
        and provenance["endpoints"][0].startswith("http://127.0.0.1:")
    )


def test_a_new_field_is_info(tmp_path, key):
    path = record(tmp_path / "c.json", TOOL_TURN)
    report, _ = live(
        path, stream_reply("anthropic", TOOL_TURN.replace(b'"role"', b'"service_tier": "standard", "role"'))
    )
    assert [(d.severity, d.what) for d in report.drifts] == [
        ("info", "new field(s) in the provider's events: message.service_tier")
    ]
    assert report.exit_status == 0


def test_a_new_stop_reason_is_a_warning(tmp_path, key):
    path = record(tmp_path / "c.json", body("anthropic", ("text", "Four.")))
    report, _ = live(path, stream_reply("anthropic", body("anthropic", ("text", "Four."), stop="refusal")))
    (drift,) = report.drifts
    assert (drift.severity, drift.what, drift.recorded, drift.live) == (
        "warning",
        "the stop reason changed",
        "end_turn",
        "refusal",
    )
    assert report.exit_status == 1


def test_a_400_is_an_error_naming_the_providers_type(tmp_path, key):
    path = record(tmp_path / "c.json", TOOL_TURN)
    refusal = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "`temperature` is deprecated for this model."},
    }
    report, _ = live(path, error_reply(400, refusal))
    (drift,) = report.drifts
    assert (
        drift.severity == "error"
        and drift.recorded == "HTTP 200"
        and drift.live == "HTTP 400 InvalidRequestError (invalid_request_error)"
    )
    assert report.exit_status == 2


def test_a_new_block_kind_is_an_error_and_the_text_may_differ(tmp_path, key):
    path = record(tmp_path / "c.json", body("anthropic", ("text", "Four.")))
    report, _ = live(
        path, stream_reply("anthropic", body("anthropic", ("think", "two and two"), ("text", "It is four, of course.")))
    )
    severities = {(d.severity, d.what) for d in report.drifts}
    assert ("error", "new block kind(s): thinking") in severities
    assert ("warning", "a signature or encrypted reasoning now comes") in severities
    assert not any("text" in d.what for d in report.drifts)  # other words are not drift
    assert report.exit_status == 2


def test_other_tool_arguments_and_a_new_model_snapshot(tmp_path, key):
    path = record(tmp_path / "c.json", TOOL_TURN)
    other = body(
        "anthropic", ("text", "Let me look."), ("tool", "toolu_99", "lookup", '{"city": "Rome", "units": "metric"}')
    )
    report, _ = live(
        path, stream_reply("anthropic", other.replace(b'"model": "claude-test"', b'"model": "claude-test-20261201"'))
    )
    found = {(d.severity, d.what): (d.recorded, d.live) for d in report.drifts}
    assert found[("warning", "the arguments of lookup have other keys")] == (["city"], ["city", "units"])
    assert found[("info", "the model answered as another snapshot")] == ("claude-test", "claude-test-20261201")
    assert report.exit_status == 1  # the ids differ too, and are not drift


def test_no_answer_at_all_is_an_error(tmp_path, key):
    path = record(tmp_path / "c.json", TOOL_TURN)
    with ProviderServer() as server:
        gone = server.url
    report = recheck([path], base_url=gone, timeout=5)
    (drift,) = report.drifts
    assert (
        drift.severity == "error" and drift.what.startswith("no answer: nothing answers at") and report.exit_status == 2
    )


def test_a_budget_and_a_call_limit_stop_the_run_before_the_next_request(tmp_path, key):
    answers = [body("anthropic", ("text", f"answer {n}"), usage=(100, 50)) for n in range(3)]
    path = record(tmp_path / "c.json", *answers)
    report, sent = live(path, *(stream_reply("anthropic", a) for a in answers), limits=UsageLimits(total_tokens=200))
    assert report.calls == 2 and len(sent) == 2 and "total_tokens" in report.stopped and report.exit_status == 2
    report, sent = live(path, *(stream_reply("anthropic", a) for a in answers), max_calls=1)
    assert report.calls == 1 and len(sent) == 1 and report.stopped == "--max-calls 1 reached"


def test_update_rewrites_a_live_cassette_and_never_a_derived_one(tmp_path, key):
    path = record(tmp_path / "c.json", body("anthropic", ("text", "Four.")))
    newer = body("anthropic", ("text", "Four, now."), stop="max_tokens")
    report, _ = live(path, stream_reply("anthropic", newer), update=True)
    assert report.updated == [str(path)]
    again = Cassette.load(path)
    assert again.interactions[0].body_bytes() == newer and again.provenance["kind"] == "live"
    assert key not in path.read_text()
    # A derived cassette (a fault case written by hand) stays as it is.
    data = json.loads(path.read_text())
    data["provenance"] = {"kind": "derived", "why": "a truncated stream, by hand"}
    path.write_text(json.dumps(data))
    before = path.read_text()
    report, _ = live(path, stream_reply("anthropic", body("anthropic", ("text", "Five."))), update=True)
    assert report.updated == [] and path.read_text() == before and "derived" in report.skipped[0]
    # One that says nothing of where it came from is not rewritten either.
    del data["provenance"]
    path.write_text(json.dumps(data))
    report, _ = live(path, stream_reply("anthropic", newer), update=True)
    assert report.updated == [] and "says nothing of where it came from" in report.skipped[0]


def test_a_cassette_with_a_bad_provenance_is_refused(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"version": 1, "provenance": {"kind": "maybe"}, "interactions": []}))
    with pytest.raises(Exception, match="provenance"):
        Cassette.load(path)


def test_the_command_prints_json_and_exits_by_the_worst_finding(tmp_path, key):
    path = record(tmp_path / "c.json", body("anthropic", ("text", "Four.")))
    env = {**os.environ, "MODELWIRE_DEBUG": "0"}
    with ProviderServer() as server:
        server.script(stream_reply("anthropic", body("anthropic", ("text", "Four."), stop="max_tokens")))
        run = subprocess.run(
            [sys.executable, "-m", "modelwire", "cassette", "recheck", str(path), "--base-url", server.url, "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    assert run.returncode == 1, run.stdout + run.stderr
    data = json.loads(run.stdout)
    assert data["exit_status"] == 1 and data["calls"] == 1 and data["drifts"][0]["what"] == "the stop reason changed"


def test_pytest_cassette_recheck_reports_drift_per_test_and_a_normal_run_stays_offline(tmp_path, key):
    project = tmp_path / "project"
    (project / "cassettes").mkdir(parents=True)
    with ProviderServer() as server:
        server.script(stream_reply("anthropic", body("anthropic", ("text", "Four."))))
        with use_cassette(project / "cassettes" / "test_math" / "test_four.json", "all"):
            asyncio.run(load_model("anthropic:claude-test", base_url=server.url).complete([UserMsg("u", "2+2?")]))
        url = server.url
        (project / "test_math.py").write_text(
            textwrap.dedent(
                f"""
                import asyncio, pytest
                from modelwire.message import UserMsg
                from modelwire.models import load_model

                @pytest.mark.cassette
                def test_four():
                    model = load_model("anthropic:claude-test", base_url={url!r})
                    reply = asyncio.run(model.complete([UserMsg("u", "2+2?")]))
                    assert "Four" in reply.get_text_content()
                """
            )
        )
        (project / "pytest.ini").write_text("[pytest]\n")
        env = {**os.environ, "MODELWIRE_DEBUG": "0"}

        def pytest_run(*flags):
            return subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *flags],
                cwd=project,
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )

        offline = pytest_run()
        asked_offline = len(server.requests)
        refused = pytest_run("--cassette-recheck")  # the cassette names a host of no preset or profile
        server.script(stream_reply("anthropic", body("anthropic", ("text", "Four."), stop="max_tokens")))
        rechecked = pytest_run("--cassette-recheck", "--cassette-recheck-allow-host", url.removeprefix("http://"))
        asked = len(server.requests)
    assert offline.returncode == 0 and "modelwire cassette recheck" not in offline.stdout and asked_offline == 1, (
        offline.stdout
    )
    assert "REFUSED" in refused.stdout and url.removeprefix("http://") in refused.stdout, refused.stdout
    assert rechecked.returncode == 0, rechecked.stdout + rechecked.stderr  # the test replayed and passed
    assert "modelwire cassette recheck" in rechecked.stdout and asked == 2
    assert "warning  test_math.py::test_four: 1 call(s); 0 error, 1 warning, 0 info" in rechecked.stdout, (
        rechecked.stdout
    )
    assert "the stop reason changed" in rechecked.stdout


def record_tool_conversation(path):
    """An Anthropic tool conversation recorded through modelwire: the model asks for a
    tool, the (recorded) result goes back, the model answers."""
    from modelwire.message import AssistantMsg, ToolCallBlock, ToolResultBlock

    lookup = {
        "name": "lookup",
        "description": "the weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
    first = [UserMsg("u", "Weather in Paris?")]
    second = first + [
        AssistantMsg(
            "a",
            [
                ToolCallBlock(id="toolu_01", name="lookup", input='{"city": "Paris"}'),
                ToolResultBlock(id="toolu_01", name="lookup", output="sunny, 21 C", state="success"),
            ],
        ),
    ]
    with ProviderServer() as server:
        server.script(
            stream_reply("anthropic", TOOL_TURN),
            stream_reply("anthropic", body("anthropic", ("text", "It is sunny in Paris."))),
        )
        with use_cassette(path, "all"):
            model = load_model("anthropic:claude-sonnet-4-5", base_url=server.url)
            asyncio.run(model.complete(first, tools=[lookup]))
            asyncio.run(model.complete(second, tools=[lookup]))
    return path


@pytest.mark.parametrize(
    "target, protocol",
    [("openai:gpt-4.1", "openai-chat"), ("google:gemini-2.5-flash", "gemini")],
)
def test_transpose_sends_a_recorded_tool_conversation_to_another_model_and_reports_both(
    tmp_path, key, monkeypatch, target, protocol
):
    import sdk_params
    from modelwire.cassettes import transpose

    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-0123456789")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test-0123456789")
    source = record_tool_conversation(tmp_path / "weather.json")
    assert "conversation" in json.loads(source.read_text())["interactions"][1]["request"]
    out = tmp_path / "weather.on-target.json"
    with ProviderServer() as server:
        server.script(
            stream_reply(protocol, body(protocol, ("tool", "call_1", "lookup", '{"city": "Paris"}'))),
            stream_reply(protocol, body(protocol, ("text", "Sunny, 21 degrees, in Paris today."))),
        )
        base = server.url + ("/v1" if protocol == "openai-chat" else "")
        report = transpose(source, target, out=out, base_url=base)
        sent = [r["json"] for r in server.requests]
    assert len(sent) == 2
    for request in sent:  # valid per the SDK's own request types
        sdk_params.streaming_request(protocol, request)
    # The second request carries the recorded tool call and its recorded result.
    assert "sunny, 21 C" in json.dumps(sent[1])
    first, second = report.rows
    assert first.recorded.tools == [("lookup", '{"city":"Paris"}')] and first.target.tools == [
        ("lookup", '{"city":"Paris"}')
    ]
    assert (
        second.recorded.text_chars == len("It is sunny in Paris.")
        and second.target.text_chars > 0
        and second.target.tools == []
    )
    assert first.recorded.model == "claude-sonnet-4-5" and first.target.model == target
    assert first.target.first_token is not None and first.recorded.input_tokens == 10
    shown = "\n".join(report.lines())
    assert "call [0]" in shown and 'lookup({"city":"Paris"})' in shown and target in shown
    recorded_out = Cassette.load(out)
    assert len(recorded_out.interactions) == 2 and recorded_out.provenance["kind"] == "live"
    assert "sk-openai-test" not in out.read_text() and "g-test-0123456789" not in out.read_text()


def test_transpose_skips_what_was_recorded_without_its_conversation(tmp_path, key):
    from modelwire.cassettes import transpose

    path = record(tmp_path / "c.json", body("anthropic", ("text", "Four.")))
    data = json.loads(path.read_text())
    del data["interactions"][0]["request"]["conversation"]
    path.write_text(json.dumps(data))
    report = transpose(path, "openai:gpt-4.1", out=tmp_path / "o.json", base_url="http://127.0.0.1:9")
    assert report.rows == [] and "recorded without its conversation" in report.skipped[0]
    with pytest.raises(Exception, match="overwrite its source"):
        transpose(path, "openai:gpt-4.1", out=path)


AIMOCK = (
    __import__("pathlib").Path(__file__).parent / "js" / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
)


class Aimock:
    """CopilotKit's aimock (from npm), serving the fixtures it is given on a free local port."""

    def __init__(self, tmp_path, fixtures: list[dict]):
        import shutil
        import socket

        if shutil.which("node") is None or not AIMOCK.is_file():
            pytest.skip("needs node and tests/js/node_modules (npm ci --prefix tests/js)")
        self.file = tmp_path / f"fixtures-{id(fixtures)}.json"
        self.file.write_text(json.dumps({"fixtures": fixtures}))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        import socket
        import time

        self.process = subprocess.Popen(
            ["node", str(AIMOCK), "-p", str(self.port), "-f", str(self.file), "--log-level", "silent"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"aimock exited: {self.process.stderr.read().decode()[:500]}")
                time.sleep(0.1)
        raise RuntimeError("aimock did not listen within 30 s")

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(10)


def test_recheck_against_aimock_with_its_fixtures_swapped(tmp_path, key):
    """An independent server: a cassette recorded from aimock's Anthropic route while its
    fixture answers with a tool call; rechecked against the same fixture (nothing above
    info) and against one that now answers in text (the tool call gone: an error)."""
    calls_a_tool = [
        {
            "match": {"userMessage": "weather"},
            "response": {"toolCalls": [{"name": "lookup", "arguments": {"city": "Paris"}}]},
        }
    ]
    answers_in_text = [{"match": {"userMessage": "weather"}, "response": {"content": "It is sunny in Paris."}}]
    lookup = {
        "name": "lookup",
        "description": "the weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    path = tmp_path / "aimock.json"
    with Aimock(tmp_path, calls_a_tool) as server:
        with use_cassette(path, "all"):
            reply = asyncio.run(
                load_model("anthropic:claude-sonnet-4-5", base_url=server.url).complete(
                    [UserMsg("u", "weather in Paris?")], tools=[lookup]
                )
            )
        assert [b.name for b in reply.content if b.type == "tool_call"] == ["lookup"]
        same = recheck([path], base_url=server.url)
    with Aimock(tmp_path, answers_in_text) as server:
        changed = recheck([path], base_url=server.url)
    assert same.calls == 1 and same.exit_status == 0 and all(d.severity == "info" for d in same.drifts), [
        str(d) for d in same.drifts
    ]
    found = {(d.severity, d.what) for d in changed.drifts}
    assert ("error", "block kind(s) gone: tool_call") in found and ("warning", "the stop reason changed") in found, [
        str(d) for d in changed.drifts
    ]
    assert changed.exit_status == 2


def test_update_never_writes_an_error_over_a_recorded_answer(tmp_path, key):
    path = record(tmp_path / "c.json", body("anthropic", ("text", "Four.")))
    before = Cassette.load(path).interactions[0].response
    refusal = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "`temperature` is deprecated for this model."},
    }
    report, _ = live(path, error_reply(400, refusal), update=True)
    assert report.exit_status == 2 and report.updated == []
    assert Cassette.load(path).interactions[0].response == before


# -- where the key may go ----------------------------------------------------------------


def recorded_at(tmp_path, url):
    """A cassette of one recorded call whose URL is ``url`` (as a pull request may edit it)."""
    path = record(tmp_path / "c.json", body("anthropic", ("text", "Four.")))
    data = json.loads(path.read_text())
    for interaction in data["interactions"]:
        interaction["request"]["url"] = url
    path.write_text(json.dumps(data))
    return path


def test_a_cassette_naming_a_host_nothing_of_the_users_names_is_refused_and_that_host_sees_nothing(tmp_path, key):
    with ProviderServer() as listener:
        listener.script(stream_reply("anthropic", body("anthropic", ("text", "Four."))))
        path = recorded_at(tmp_path, f"{listener.url}/v1/messages")
        refused = recheck([path])
        assert listener.requests == []  # no key, no request at all
        port = listener.url.rsplit(":", 1)[1]
        named = recheck([path], allow_hosts=[f"127.0.0.1:{port}"])  # the user names it: it gets the key
        assert [r["headers"].get("x-api-key") for r in listener.requests] == [key]
    assert refused.calls == 0 and refused.exit_status == 2 and len(refused.refused) == 1
    assert f"127.0.0.1:{port}" in refused.refused[0] and f"--allow-host 127.0.0.1:{port}" in refused.refused[0]
    assert any(line.startswith("REFUSED ") for line in refused.lines())
    assert named.calls == 1 and named.refused == [] and named.exit_status == 0


@pytest.mark.parametrize(
    "url, allowed, words",
    [
        ("https://evil.example/v1/messages", (), "evil.example: no preset, profile or --base-url"),
        ("http://evil.example/v1/messages", ("evil.example",), "evil.example: plain http"),
        ("http://api.anthropic.com/v1/messages", (), "api.anthropic.com: plain http"),
        ("https://api.anthropic.com.evil.example/v1/messages", (), "api.anthropic.com.evil.example: no preset"),
    ],
)
def test_no_key_goes_to_another_host_nor_over_plain_http_off_the_machine(tmp_path, key, url, allowed, words):
    path = recorded_at(tmp_path, url)
    report = recheck([path], allow_hosts=allowed, timeout=5)
    assert report.calls == 0 and report.exit_status == 2, report.lines()
    (why,) = report.refused
    assert words in why and key not in why


def test_the_repositorys_demo_cassette_is_not_posted_to_whatever_listens_on_its_port(key):
    from pathlib import Path

    demo = Path(__file__).resolve().parents[1] / "cassettes" / "demo" / "calculator.json"
    try:
        listener = ProviderServer(port=8765).__enter__()
    except OSError:  # something else holds the port: the refusal is still checked below
        listener = None
    try:
        report = recheck([demo], timeout=5)
    finally:
        if listener is not None:
            listener.__exit__(None, None, None)
    assert report.calls == 0 and report.exit_status == 2
    assert report.refused and all("127.0.0.1:8765" in why for why in report.refused)
    assert listener is None or listener.requests == []


def test_a_profile_or_the_presets_base_url_variable_names_an_endpoint(tmp_path, key, monkeypatch):
    with ProviderServer() as server:
        server.script(*(stream_reply("anthropic", body("anthropic", ("text", "Four."))) for _ in range(2)))
        path = recorded_at(tmp_path, f"{server.url}/v1/messages")
        project = tmp_path / "project"
        project.mkdir()
        (project / "modelwire.toml").write_text(
            f'[profiles.local]\nmodel = "anthropic:claude-test"\nbase_url = "{server.url}"\n'
            'api_key = "sk-profile-key-0123456789"\n'
        )
        monkeypatch.chdir(project)
        found_here = recheck([path])  # a modelwire.toml in the working directory may come with the cassettes
        by_profile = recheck([path], config=project / "modelwire.toml")
        (project / "modelwire.toml").unlink()
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        by_variable = recheck([path])
        sent = [r["headers"].get("x-api-key") for r in server.requests]
    assert found_here.calls == 0 and found_here.refused and found_here.exit_status == 2
    assert by_profile.refused == [] and by_variable.refused == [] and by_profile.calls == by_variable.calls == 1
    assert sent == ["sk-profile-key-0123456789", key]  # the profile's own key, then the environment's


def test_the_command_refuses_in_one_line_and_sends_to_a_host_named_with_allow_host(tmp_path, key):
    env = {**os.environ, "MODELWIRE_DEBUG": "0"}
    with ProviderServer() as listener:
        listener.script(stream_reply("anthropic", body("anthropic", ("text", "Four."))))
        path = recorded_at(tmp_path, f"{listener.url}/v1/messages")
        host = listener.url.removeprefix("http://")
        runs = [
            subprocess.run(
                [sys.executable, "-m", "modelwire", "cassette", "recheck", str(path), *flags],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            for flags in ([], ["--allow-host", host])
        ]
        seen = [r["headers"].get("x-api-key") for r in listener.requests]
    refused, allowed = runs
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert [line for line in refused.stdout.splitlines() if line.startswith("REFUSED")] == [
        line for line in refused.stdout.splitlines() if host in line
    ] and host in refused.stdout
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert seen == [key]


def test_a_plain_http_base_url_off_the_machine_is_refused_too(tmp_path, key):
    path = record(tmp_path / "c.json", body("anthropic", ("text", "Four.")))
    report = recheck([path], base_url="http://gateway.example:8080", timeout=5)
    assert report.calls == 0 and len(report.refused) == 1 and "gateway.example:8080: plain http" in report.refused[0]


@pytest.mark.parametrize(
    "url, protocol, env, preset",
    [
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream",
            "bedrock-converse",
            {"AWS_REGION": "us-east-1"},
            "bedrock",
        ),
        ("https://bedrock-runtime.eu-west-3.amazonaws.com/model/m/converse-stream", "bedrock-converse", {}, None),
        (
            "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models/m:streamRawPredict",
            "anthropic",
            {"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-east5"},
            "vertex-anthropic",
        ),
        ("https://api.openai.com/v1/chat/completions", "openai-chat", {}, "openai"),
        ("https://api.openai.com:8443/v1/chat/completions", "openai-chat", {}, None),  # another origin
        ("https://api.deepseek.com/anthropic/v1/messages", "anthropic", {}, "deepseek-anthropic"),
        (
            "https://gw.example/v1/chat/completions",
            "openai-chat",
            {"OPENAI_BASE_URL": "https://gw.example/v1"},
            "openai",
        ),
    ],
)
def test_the_endpoint_a_preset_names_is_the_one_this_environment_resolves(tmp_path, url, protocol, env, preset):
    from modelwire.cassettes._bound import Destinations
    from modelwire.errors import UntrustedHostError

    destinations = Destinations(env=env, config_path=tmp_path / "none.toml")
    if preset is None:
        with pytest.raises(UntrustedHostError) as refused:
            destinations.endpoint(url, protocol)
        assert refused.value.host and refused.value.host in str(refused.value)
    else:
        assert destinations.endpoint(url, protocol).preset.name == preset


def test_update_never_writes_an_answer_that_echoes_the_key_it_was_sent(tmp_path, key, monkeypatch):
    profile_key = "sk-profile-echoed-0123456789"
    with ProviderServer() as server:
        path = recorded_at(tmp_path, f"{server.url}/v1/messages")
        before = path.read_text()
        server.script(stream_reply("anthropic", body("anthropic", ("text", f"Four, {profile_key[:-4]}..."))))
        project = tmp_path / "project"
        project.mkdir()
        (project / "modelwire.toml").write_text(
            f'[profiles.local]\nmodel = "anthropic:claude-test"\nbase_url = "{server.url}"\napi_key = "{profile_key}"\n'
        )
        monkeypatch.chdir(project)
        report = recheck([path], update=True, config=project / "modelwire.toml")
        assert server.requests[-1]["headers"]["x-api-key"] == profile_key
    assert report.calls == 1 and report.updated == []
    assert any("not updated" in why and "credential" in why for why in report.skipped), report.skipped
    assert path.read_text() == before and profile_key[:-4] not in path.read_text()


def test_transpose_sends_no_key_in_plain_http_off_the_machine(tmp_path, key, monkeypatch):
    from modelwire.cassettes import transpose
    from modelwire.errors import UntrustedHostError

    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-0123456789")
    source = record_tool_conversation(tmp_path / "weather.json")
    with pytest.raises(UntrustedHostError, match="gateway.example: plain http"):
        transpose(source, "openai:gpt-4.1", out=tmp_path / "o.json", base_url="http://gateway.example/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gateway.example/v1")  # the preset's variable alike
    with pytest.raises(UntrustedHostError, match="gateway.example: plain http"):
        transpose(source, "openai:gpt-4.1", out=tmp_path / "o.json")
    assert not (tmp_path / "o.json").exists()
