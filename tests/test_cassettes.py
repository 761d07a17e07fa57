"""Cassettes: record against the local provider server, replay with it stopped."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import httpx2
import pytest
from paths import HAVE_SHARED, PA

from modelwire.adapters import StreamDecoder
from modelwire.protocols import decode_sse, get_adapter
from modelwire.cassettes import Cassette, import_vcr, use_cassette
from modelwire.errors import CassetteError, CassetteMismatchError, CassetteSecretError, UnusedInteractionsError
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.testing import sse
from modelwire.testing.server import ProviderServer, sse_reply

SENTINEL = "sk-sentinel-0123456789abcdef"
pytest_plugins = ["pytester"]


def run(coro):
    return asyncio.run(coro)


async def call(url, messages=("Weather in Paris?",), spec="openai:gpt-test"):
    model = load_model(spec, base_url=url)
    events = []
    async for ev in model.stream([UserMsg("u", m) for m in messages], reply_id="r"):
        events.append(ev)
    return events


def kinds(events):
    return [(e.type, getattr(e, "delta", None), getattr(e, "tool_call_id", None)) for e in events]


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SENTINEL)


def test_record_then_replay_with_the_server_stopped(tmp_path, key):
    path = tmp_path / "weather.json"
    with ProviderServer() as server:
        server.script(sse_reply(sse.body("openai-chat", ("text", "It is sunny in Paris.")), delay=0.01))
        with use_cassette(path, "once", notes="recorded against the local provider server") as session:
            recorded = run(call(server.url + "/v1"))
        assert session.recorded == 1 and server.requests[0]["headers"]["authorization"] == f"Bearer {SENTINEL}"
        url = server.url
    text = path.read_text()
    assert SENTINEL not in text and "authorization" not in text.lower()
    data = json.loads(text)
    (interaction,) = data["interactions"]
    assert interaction["request"]["json"]["model"] == "gpt-test" and interaction["response"]["status"] == 200
    assert "chunks" not in interaction["response"]  # piece boundaries and timing only with timing=True
    # the server is gone; replay only
    with use_cassette(path) as session:
        replayed = run(call(url + "/v1"))
    assert session.replayed == 1
    assert kinds(replayed) == kinds(recorded)


def test_sdk_clients_are_recorded_and_replayed_too(tmp_path, key):
    import openai

    path = tmp_path / "sdk.json"

    async def ask(url):
        client = openai.AsyncOpenAI(base_url=url + "/v1", max_retries=0)
        stream = await client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        return [
            chunk.choices[0].delta.content
            for chunk in [c async for c in stream]
            if chunk.choices and chunk.choices[0].delta.content
        ]

    with ProviderServer() as server:
        server.script(sse_reply(sse.body("openai-chat", ("text", "Hello from the SDK"))))
        with use_cassette(path, "once"):
            first = run(ask(server.url))
        url = server.url
    with use_cassette(path):
        again = run(ask(url))
    assert first == again and "".join(again).strip() == "Hello from the SDK"
    assert SENTINEL not in path.read_text()


def test_mismatch_shows_a_diff_against_the_nearest(tmp_path, key):
    path = tmp_path / "c.json"
    with ProviderServer() as server:
        server.script(sse_reply(sse.body("openai-chat", ("text", "ok"))))
        with use_cassette(path, "once"):
            run(call(server.url + "/v1", ("Weather in Paris?",)))
        url = server.url
    with pytest.raises(CassetteMismatchError) as info:
        with use_cassette(path):
            run(call(url + "/v1", ("Weather in Rome?",)))
    text = str(info.value)
    assert "no recorded interaction" in text and "-" in text and "Paris" in text and "Rome" in text


def test_ignored_fields_and_unused_interactions(tmp_path, key):
    path = tmp_path / "c.json"
    with ProviderServer() as server:
        server.script(
            sse_reply(sse.body("openai-chat", ("text", "one"))), sse_reply(sse.body("openai-chat", ("text", "two")))
        )
        with use_cassette(path, "once"):
            run(call(server.url + "/v1"))
            run(call(server.url + "/v1", ("Second question",)))
        url = server.url
    with pytest.raises(UnusedInteractionsError, match="1 recorded interaction"):
        with use_cassette(path):
            run(call(url + "/v1"))
    with use_cassette(path, allow_unused=True):
        run(call(url + "/v1"))
    # A field the test does not control can be ignored when matching.
    with use_cassette(path, ignore_fields=["messages.*.content", "stream_options"]):
        run(call(url + "/v1", ("Different words",)))
        run(call(url + "/v1", ("Other words",)))


def test_recording_refuses_to_write_a_secret(tmp_path, key):
    path = tmp_path / "leak.json"
    with ProviderServer() as server:
        server.script(sse_reply(sse.body("openai-chat", ("text", "ok"))))
        with pytest.raises(CassetteSecretError, match="credential"):
            with use_cassette(path, "once"):
                run(call(server.url + "/v1", (f"my key is {SENTINEL}",)))
    assert not path.exists()


def test_record_modes(tmp_path, key):
    path = tmp_path / "m.json"
    with pytest.raises(CassetteError, match="no cassette"):
        with use_cassette(path, "none"):
            pass
    with pytest.raises(CassetteError, match="record_mode"):
        with use_cassette(path, "sometimes"):
            pass
    with ProviderServer() as server:
        url = server.url + "/v1"
        server.script(sse_reply(sse.body("openai-chat", ("text", "first"))))
        with use_cassette(path, "once"):
            run(call(url))
        with use_cassette(path, "once"):  # exists now: replays, the server gets nothing
            run(call(url))
        assert len(server.requests) == 1
        server.script(sse_reply(sse.body("openai-chat", ("text", "new"))))
        with use_cassette(path, "new_episodes") as session:
            run(call(url))  # replayed
            run(call(url, ("A new question",)))  # recorded and added
        assert (session.replayed, session.recorded, len(server.requests)) == (1, 1, 2)
        assert len(Cassette.load(path).interactions) == 2
        server.script(sse_reply(sse.body("openai-chat", ("text", "fresh"))))
        with use_cassette(path, "all"):
            events = run(call(url))
        assert len(Cassette.load(path).interactions) == 1 and len(server.requests) == 3
        assert "fresh" in "".join(e.delta for e in events if e.type == "TEXT_BLOCK_DELTA")


def test_realtime_replay_keeps_the_recorded_timing(tmp_path, key):
    path = tmp_path / "t.json"
    with ProviderServer() as server:
        # 12 pieces, each at least 0.5 s after the last: 5.5 s of gaps recorded.
        server.script(sse_reply(sse.body("openai-chat", ("text", "a b c d e f g h")), delay=0.5))
        with use_cassette(path, "once", timing=True):
            run(call(server.url + "/v1"))
        url = server.url
    t0 = time.monotonic()
    with use_cassette(path):
        run(call(url + "/v1"))
    fast = time.monotonic() - t0
    t0 = time.monotonic()
    with use_cassette(path, realtime=True):
        run(call(url + "/v1"))
    slow = time.monotonic() - t0
    # The recorded gaps kept (less a first read that came late); without realtime, not half of
    # them (a replay of 12 pieces takes milliseconds: seconds are left to a loaded machine).
    assert slow > 4.5 and fast < 2.75, (slow, fast)


@pytest.mark.skipif(not HAVE_SHARED, reason="../shared/recorded-streams is not present")
@pytest.mark.parametrize(
    "name,n,protocol",
    [
        ("test_anthropic_model_thinking_part_stream", 0, "anthropic"),
        ("test_complex_agent_run_in_flow", 1, "openai-chat"),
        ("test_openai_responses_stream", 1, "openai-responses"),
    ],
)
def test_imported_vcr_cassettes_replay_to_the_same_messages(tmp_path, name, n, protocol):
    cassette = import_vcr(PA / f"{name}.yaml", tmp_path / f"{name}.json")
    cassette.save()
    text = (tmp_path / f"{name}.json").read_text()
    assert "authorization" not in text.lower() and "cookie" not in text.lower()
    request = cassette.interactions[n].request

    async def replay():
        events = []
        async with httpx2.AsyncClient() as client:
            async with client.stream(request["method"], request["url"], json=request["json"]) as response:
                decoder = StreamDecoder(get_adapter(protocol)("r"))
                async for chunk in response.aiter_bytes():
                    events += decoder.feed(chunk)
                events += decoder.close()
        return events

    with use_cassette(tmp_path / f"{name}.json", allow_unused=True):
        events = run(replay())
    direct = decode_sse(protocol, (PA / f"{name}.{n}.sse").read_bytes(), "r")
    assert kinds(events) == kinds(direct)


def test_pytest_plugin(pytester, tmp_path):
    with ProviderServer() as server:
        server.script(sse_reply(sse.body("openai-chat", ("text", "plugin works"))))
        pytester.makeini("[pytest]\nmodelwire_cassette_dir = tapes\n")
        pytester.makepyfile(
            test_weather=f"""
            import asyncio, pytest
            from modelwire.models import load_model
            from modelwire.message import UserMsg

            @pytest.mark.cassette
            def test_ask(monkeypatch):
                monkeypatch.setenv("OPENAI_API_KEY", "sk-plugin-secret-123456")
                model = load_model("openai:gpt-test", base_url="{server.url}/v1")
                reply = asyncio.run(model.complete([UserMsg("u", "hi")]))
                assert "plugin works" in reply.get_text_content()
            """
        )
        first = pytester.runpytest("--record-mode=once", "-p", "no:cacheprovider")
        first.assert_outcomes(passed=1)
        tape = pytester.path / "tapes" / "test_weather" / "test_ask.json"
        assert tape.is_file() and "sk-plugin-secret" not in tape.read_text()
    again = pytester.runpytest("-p", "no:cacheprovider")  # the server is gone: replay
    again.assert_outcomes(passed=1)


@pytest.mark.skipif(not HAVE_SHARED, reason="../shared/recorded-streams is not present")
def test_cassette_cli(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "modelwire.cli",
            "cassette",
            "import",
            str(PA / "test_anthropic_model_thinking_part_stream.yaml"),
            "-o",
            str(tmp_path / "t.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    show = subprocess.run(
        [sys.executable, "-m", "modelwire.cli", "cassette", "show", str(tmp_path / "t.json")],
        capture_output=True,
        text=True,
    )
    assert show.returncode == 0, show.stderr
    assert "POST https://api.anthropic.com/v1/messages?beta=true  model=claude-sonnet-4-0  -> HTTP 200" in show.stdout
    raw = (PA / "test_anthropic_model_thinking_part_stream.0.sse").read_text()
    pieces = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]
    thinking = sum(1 for p in pieces if p.get("delta", {}).get("type") == "thinking_delta" and p["delta"]["thinking"])
    assert f"THINKING_BLOCK_DELTA x{thinking}" in show.stdout  # empty pieces make no event
    assert "usage: input 43, output 282" in show.stdout and "stop: end_turn" in show.stdout


def test_plain_httpx_clients_are_covered_too(tmp_path, key):
    import httpx

    path = tmp_path / "httpx.json"

    async def fetch(url):
        async with httpx.AsyncClient() as client:
            response = await client.post(url + "/v1/chat/completions", json={"model": "m", "messages": []})
            return response.status_code, response.text

    with ProviderServer() as server:
        server.script(sse_reply(sse.body("openai-chat", ("text", "via httpx"))))
        with use_cassette(path, "once"):
            first = run(fetch(server.url))
        url = server.url
    with use_cassette(path):
        assert run(fetch(url)) == first and '"content": "httpx"' in first[1]


def test_importing_a_file_that_is_already_a_modelwire_cassette_says_so(tmp_path):
    from modelwire.cassettes import Cassette

    path = tmp_path / "mine.json"
    Cassette(path).save()
    with pytest.raises(CassetteError, match="is a modelwire cassette already; nothing to import"):
        import_vcr(path, tmp_path / "out.json")
    missing = tmp_path / "missing.yaml"
    with pytest.raises(CassetteError, match="cannot read"):
        import_vcr(missing)


def test_a_cassette_recorded_once_replays_outside_pytest_without_the_key(tmp_path, monkeypatch):
    """``use_cassette(path, "once")`` around code that loads its model (the README's AgentScope
    block): recorded with the key, replayed with none set, as in a fresh checkout's CI."""
    import asyncio

    from modelwire.cassettes import use_cassette
    from modelwire.message import UserMsg
    from modelwire.models import load_model
    from modelwire.testing import ProviderServer, sse_reply
    from modelwire.testing.sse import body

    path = tmp_path / "once.json"
    with ProviderServer() as server:
        server.script(sse_reply(body("anthropic", ("text", "Recorded."))))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-recording-key")
        with use_cassette(path, "once"):
            first = asyncio.run(
                load_model("anthropic:claude-sonnet-4-5", base_url=server.url).complete([UserMsg("u", "hi")])
            )
        url = server.url
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with use_cassette(path, "once"):
        again = asyncio.run(load_model("anthropic:claude-sonnet-4-5", base_url=url).complete([UserMsg("u", "hi")]))
    assert first.get_text_content() == again.get_text_content() == "Recorded."


def test_an_upload_matches_whatever_multipart_boundary_it_was_sent_with(tmp_path):
    """Clients draw a multipart boundary at random per request: the same upload recorded with
    one boundary is found with another; another file's bytes are not."""
    from modelwire.cassettes._cassette import Interaction

    def upload(boundary: str, data: str) -> dict:
        part = f'Content-Disposition: form-data; name="file"; filename="map.pdf"\r\n\r\n{data}\r\n'
        return {
            "method": "POST",
            "url": "http://127.0.0.1:1/v1/files",
            "body": f"--{boundary}\r\n{part}--{boundary}--\r\n",
        }

    tape = Cassette(tmp_path / "c.json", [Interaction(upload("modelwire-1f2e", "%PDF-1.4"), {"status": 200})])
    assert tape.find(upload("modelwire-99aa", "%PDF-1.4")).response == {"status": 200}
    tape.interactions[0].played = False
    with pytest.raises(CassetteMismatchError):
        tape.find(upload("modelwire-99aa", "%PDF-1.5"))
