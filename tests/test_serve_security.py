"""Serving on a network: each attack a review found, on real sockets (uvicorn on
127.0.0.1) and, for the cross-site ones, in headless Chromium from a second origin."""

from __future__ import annotations

import base64
import os
import json
import logging
import shutil
import threading
import time

import httpx2 as httpx
import pytest

from modelwire._ids import new_id
from modelwire.agent import Tool
from modelwire.event import parse_event
from modelwire.serve import Conflict, EventStreamApp, MemoryStore, Parked
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body

from test_serve import Served, agent_app, events_of, weather

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def asking_app(provider, made, **kw):
    app = agent_app(provider, Tool(weather, requires_confirmation=True), made=made)
    for key, value in kw.items():
        setattr(app, key, value)
    return app


def park(client, url, city="Paris"):
    """Start a reply that parks on a confirmation; its events and its resume token."""
    events = events_of(client.post(url + "/reply", json={"input": f"Weather in {city}?"}).content)
    return events, events[-1].value["resume_token"]


def tool_turns(n):
    return [sse_reply(body("anthropic", ("tool", f"toolu_{i}", "weather", '{"city": "Paris"}'))) for i in range(n)]


def test_another_client_cannot_take_over_a_parked_reply_by_guessing():
    made: list = []
    with ProviderServer() as provider:
        provider.replies = [*tool_turns(2), sse_reply(body("anthropic", ("text", "Sunny.")))]
        with Served(asking_app(provider, made)) as url, httpx.Client() as client:
            victim_events, victim_token = park(client, url)
            attacker_events, attacker_token = park(client, url, "Oslo")
            victim_rid = victim_events[0].reply_id
            # The attacker knows ids from its own stream; the victim's reply id was guessed.
            approve = {
                "type": "USER_CONFIRM_RESULT",
                "reply_id": victim_rid,
                "confirm_results": [
                    {
                        "confirmed": True,
                        "tool_call": {"type": "tool_call", "id": "toolu_0", "name": "weather", "input": "{}"},
                    }
                ],
            }
            tries = [
                client.post(url + "/reply", json={"resume": approve, "resume_token": attacker_token}),
                client.post(url + "/reply", json={"resume": approve}),
                client.post(
                    url + "/reply",
                    json={"resume": {"type": "USER_INTERRUPT", "reply_id": victim_rid}, "resume_token": attacker_token},
                ),
                # AG-UI names calls only: the attacker's token with the victim's call id
                client.post(
                    url + "/reply",
                    json={
                        "threadId": "t",
                        "runId": "r",
                        "messages": [],
                        "resume": [
                            {
                                "interruptId": f"{attacker_token}.toolu_0",
                                "status": "resolved",
                                "payload": {"approved": True},
                            }
                        ],
                    },
                ),
            ]
            owner = events_of(
                client.post(
                    url + "/reply",
                    json={
                        "resume": {
                            **approve,
                            "confirm_results": [
                                {"confirmed": True, "tool_call": victim_events[-2].tool_calls[0].to_dict()}
                            ],
                        },
                        "resume_token": victim_token,
                    },
                ).content
            )
    assert [t.status_code for t in tries] == [409] * 4 and len({t.text for t in tries}) == 1
    assert (
        owner[-1].type == "REPLY_END" and owner[-1].finished_reason == "completed"
    )  # the victim's reply was untouched
    resumed = made[-1].context[-1]  # the victim's reply, taken up by a fresh agent
    assert (
        resumed.id == victim_rid
        and resumed.content[1].state == "success"
        and made[1].context[-1].finished_reason is None
    )


def test_ids_tell_nothing_about_other_ids():
    ids = [new_id() for _ in range(1000)]
    assert len(set(ids)) == 1000 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    prefixes = {i[:8] for i in ids}
    assert len(prefixes) > 990  # no shared process prefix and no counter to step along


def test_a_wrong_reply_id_and_a_right_one_without_its_token_look_the_same():
    made: list = []
    with ProviderServer() as provider:
        provider.replies = tool_turns(1)
        with Served(asking_app(provider, made)) as url, httpx.Client() as client:
            events, _ = park(client, url)
            real = client.post(
                url + "/reply",
                json={"resume": {"type": "USER_INTERRUPT", "reply_id": events[0].reply_id}, "resume_token": "x" * 43},
            )
            guessed = client.post(
                url + "/reply",
                json={"resume": {"type": "USER_INTERRUPT", "reply_id": new_id()}, "resume_token": "x" * 43},
            )
    assert (real.status_code, real.text) == (guessed.status_code, guessed.text) == (409, guessed.text)


def test_a_spoofed_host_is_refused():
    with ProviderServer() as provider:
        made: list = []
        with Served(asking_app(provider, made)) as url, httpx.Client() as client:
            rebound = client.post(url + "/reply", json={"input": "hi"}, headers={"host": "attacker.example"})
            page = client.get(url + "/", headers={"host": "attacker.example:8000"})
            fine = client.get(url + "/", headers={"host": "localhost"})
    assert rebound.status_code == 403 and page.status_code == 403 and fine.status_code == 200
    assert not made and not provider.requests


def test_a_body_that_is_not_declared_json_or_from_another_origin_never_runs_the_agent():
    with ProviderServer() as provider:
        made: list = []
        with Served(asking_app(provider, made)) as url, httpx.Client() as client:
            plain = client.post(url + "/reply", content=b'{"input": "hi"}', headers={"content-type": "text/plain"})
            form = client.post(
                url + "/reply",
                content=b'{"input": "hi"}',
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
            other = client.post(url + "/reply", json={"input": "hi"}, headers={"origin": "https://attacker.example"})
            preflight = client.options(
                url + "/reply", headers={"origin": "https://attacker.example", "access-control-request-method": "POST"}
            )
    assert (plain.status_code, form.status_code, other.status_code, preflight.status_code) == (415, 415, 403, 403)
    assert not made and not provider.requests


def test_an_allowed_origin_gets_proper_cors_answers():
    with ProviderServer() as provider:
        provider.replies = [sse_reply(body("anthropic", ("text", "Hello.")))]
        made: list = []
        app = asking_app(provider, made, allowed_origins={"https://app.example"})
        with Served(app) as url, httpx.Client() as client:
            preflight = client.options(
                url + "/reply",
                headers={
                    "origin": "https://app.example",
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "content-type",
                },
            )
            reply = client.post(url + "/reply", json={"input": "hi"}, headers={"origin": "https://app.example"})
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert (
        "content-type" in preflight.headers["access-control-allow-headers"]
        and preflight.headers["access-control-allow-methods"] == "POST"
    )
    assert (
        reply.status_code == 200
        and reply.headers["access-control-allow-origin"] == "https://app.example"
        and "Origin" in reply.headers["vary"]
    )


def test_the_page_is_served_with_a_content_security_policy():
    with Served(EventStreamApp(lambda: None)) as url:
        page = httpx.get(url + "/")
        config = httpx.get(url + "/config.json")
    csp = page.headers["content-security-policy"]
    assert (
        "frame-ancestors 'none'" in csp
        and "img-src 'self' data:" in csp
        and "'unsafe-inline'" not in csp
        and "script-src 'self' 'sha256-" in csp
    )
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["x-frame-options"] == "DENY"
    assert config.headers["x-content-type-options"] == "nosniff"


def test_a_bearer_token_guards_the_reply_endpoint():
    with ProviderServer() as provider:
        provider.replies = [sse_reply(body("anthropic", ("text", "Hello.")))]
        made: list = []
        with Served(asking_app(provider, made, auth_token="s3cret-token")) as url, httpx.Client() as client:
            none = client.post(url + "/reply", json={"input": "hi"})
            wrong = client.post(url + "/reply", json={"input": "hi"}, headers={"authorization": "Bearer nope"})
            right = client.post(url + "/reply", json={"input": "hi"}, headers={"authorization": "Bearer s3cret-token"})
    assert (none.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert none.headers["www-authenticate"] == "Bearer" and len(made) == 1


def test_a_flood_of_large_parked_replies_stays_within_the_byte_bound():
    parked = MemoryStore(limit=1000, max_bytes=3_000_000)
    with ProviderServer() as provider:
        provider.respond = lambda request: sse_reply(
            body("anthropic", ("tool", f"toolu_{len(provider.requests)}", "weather", '{"city": "Paris"}'))
        )
        made: list = []
        with Served(asking_app(provider, made, store=parked)) as url, httpx.Client() as client:
            # Text that does not compress (the store keeps parked JSON compressed): ~380 kB each as kept.
            noise = base64.b64encode(os.urandom(375_000)).decode()
            big = [
                {"role": "user", "name": "u", "content": [{"type": "text", "text": noise}]},
                {"role": "assistant", "name": "a", "content": [{"type": "text", "text": "ok"}]},
            ]
            tokens = []
            for n in range(20):
                events = events_of(
                    client.post(
                        url + "/reply",
                        json={
                            "messages": [
                                *big,
                                {"role": "user", "name": "u", "content": [{"type": "text", "text": f"q{n}"}]},
                            ]
                        },
                    ).content
                )
                tokens.append((events[0].reply_id, events[-1].value["resume_token"]))
                assert parked.bytes <= 3_000_000
            newest = client.post(
                url + "/reply",
                json={"resume": {"type": "USER_INTERRUPT", "reply_id": tokens[-1][0]}, "resume_token": tokens[-1][1]},
            )
            oldest = client.post(
                url + "/reply",
                json={"resume": {"type": "USER_INTERRUPT", "reply_id": tokens[0][0]}, "resume_token": tokens[0][1]},
            )
    assert 1 <= len(parked) + 1 <= 8  # a handful of ~380 kB replies fit in 3 MB
    assert newest.status_code == 200 and oldest.status_code == 409  # the oldest made room


def test_a_refused_answer_does_not_make_a_parked_reply_younger():
    """A reply's age counts from when it parked: an answer refused at 60 s of a 100 s ttl
    does not start it again, so at 110 s it is gone (were it restarted, 50 s old). The
    store's clock is moved on rather than slept: the real seconds a loaded machine adds
    (under 40 here) change no outcome."""
    made: list = []
    shift = [0.0]
    store = MemoryStore(ttl=100.0, clock=lambda: time.time() + shift[0])
    with ProviderServer() as provider:
        provider.replies = tool_turns(1)
        app = asking_app(provider, made, store=store)
        with Served(app) as url, httpx.Client() as client:
            events, token = park(client, url)
            rid = events[0].reply_id
            shift[0] = 60.0
            wrong_call = {
                "type": "USER_CONFIRM_RESULT",
                "reply_id": rid,
                "confirm_results": [
                    {
                        "confirmed": True,
                        "tool_call": {"type": "tool_call", "id": "toolu_9", "name": "weather", "input": "{}"},
                    }
                ],
            }
            refused = client.post(url + "/reply", json={"resume": wrong_call, "resume_token": token})
            still_parked = len(store)
            shift[0] = 110.0
            late = client.post(
                url + "/reply", json={"resume": {"type": "USER_INTERRUPT", "reply_id": rid}, "resume_token": token}
            )
    assert refused.status_code == 409 and still_parked == 1  # refused for what it said, the reply kept
    assert late.status_code == 409 and len(store) == 0  # expired: counted from parking


def test_the_store_takes_a_reply_once_and_only_by_its_token():
    store = MemoryStore()

    async def go():
        await store.put("tok-a", Parked("r1", '{"context": []}', time.time()))
        misses = []
        for token, rid in (("tok-b", "r1"), ("tok-a", "r2"), (None, "r1"), ("", None)):
            try:
                await store.take(token, rid)
            except Conflict:
                misses.append((token, rid))
        taken = await store.take("tok-a", None)  # AG-UI names no reply: the token alone
        try:
            await store.take("tok-a", "r1")
        except Conflict:
            return misses, taken, "gone"
        return misses, taken, "still there"

    import asyncio

    misses, taken, after = asyncio.run(go())
    assert len(misses) == 4 and taken.reply_id == "r1" and after == "gone"
    assert "tok-a" not in repr(store._entries)  # stored under the token's hash, never the token


def test_each_reply_outcome_is_logged_in_one_line_without_content(caplog):
    with ProviderServer() as provider:
        provider.replies = [sse_reply(body("anthropic", ("text", "The secret plan is blue."), usage=(11, 7)))]
        made: list = []
        with caplog.at_level(logging.INFO, logger="modelwire.serve"):
            with Served(asking_app(provider, made)) as url:
                httpx.post(url + "/reply", json={"input": "Tell me the secret plan."})
                deadline = time.monotonic() + 60
                while not caplog.records and time.monotonic() < deadline:
                    time.sleep(0.01)
    (line,) = [r.getMessage() for r in caplog.records if r.name == "modelwire.serve"]
    rid = made[0].context[-1].id
    assert line.startswith(f"reply {rid} model=claude-sonnet-4-5 outcome=completed error=- tokens=11/7 seconds=")
    assert "secret" not in line and "sk-test" not in line


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt-get install chromium; .ci/run installs it)")
def test_a_page_on_another_origin_cannot_make_the_agent_run():
    playwright_api = pytest.importorskip("playwright.sync_api")
    with ProviderServer() as provider:
        provider.replies = [sse_reply(body("anthropic", ("text", "Hello.")))]
        made: list = []
        with (
            Served(asking_app(provider, made)) as target,
            Served(EventStreamApp(lambda: None, allowed_hosts=["*"])) as elsewhere,
        ):
            # The second server is another origin (another port); its page attacks the first.
            attack = f"""async () => {{
                const results = [];
                const modes = [
                    ["no-cors", "text/plain"], ["no-cors", "application/json"], ["cors", "application/json"],
                ];
                for (const [mode, type] of modes) {{
                    try {{
                        const body = JSON.stringify({{ input: "spend the key" }});
                        const headers = {{ "content-type": type }};
                        const r = await fetch("{target}/reply", {{ method: "POST", mode, headers, body }});
                        results.push(mode + ":" + r.status);
                    }} catch (e) {{ results.push(mode + ":blocked"); }}
                }}
                return results;
            }}"""
            with playwright_api.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page()
                page.goto(elsewhere.replace("127.0.0.1", "localhost") + "/")
                results = page.evaluate(attack)
                browser.close()
    assert not made and not provider.requests, results
    assert results[-1] == "cors:blocked"  # the preflight was refused


def test_serving_on_every_interface_says_what_guards_it():
    import os
    import subprocess
    import sys

    from test_page import free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "MODELWIRE_MODEL"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "modelwire.cli",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--allow-host",
            "agents.example",
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [proc.stderr.readline() for _ in range(2)]
    finally:
        proc.terminate()
        proc.wait(10)
    warning = lines[1]
    assert "warning: 0.0.0.0 is not a loopback address" in warning
    assert (
        "agents.example" in warning and "NO token" in warning and "--token" in warning and "--allow-origin" in warning
    )


# -- streams that resume -----------------------------------------------------------------------


def _lines(resp):
    for line in resp.iter_lines():
        yield line


def test_a_client_that_lost_its_connection_takes_up_the_rest_with_last_event_id():
    long = body("anthropic", ("think", "Counting."), ("text", " ".join(f"w{i}" for i in range(300))), usage=(9, 300))
    made: list = []
    with ProviderServer() as provider:
        provider.replies = [sse_reply(long, delay=0.005)]
        with Served(agent_app(provider, made=made)) as url, httpx.Client() as client:
            first, token, last_id = [], None, 0
            with client.stream("POST", url + "/reply", json={"input": "count"}) as resp:
                for line in _lines(resp):
                    if line.startswith("id: "):
                        last_id = int(line[4:])
                    elif line.startswith("data: "):
                        ev = parse_event(json.loads(line[6:]))
                        first.append(ev)
                        if ev.type == "CUSTOM":
                            token = ev.value["resume_token"]
                        if len(first) >= 12:
                            break  # the connection is lost here
            rest, ids = [], []
            with client.stream(
                "GET", url + "/reply", headers={"last-event-id": str(last_id), "x-modelwire-resume-token": token}
            ) as resp:
                assert resp.status_code == 200
                for line in _lines(resp):
                    if line.startswith("id: "):
                        ids.append(int(line[4:]))
                    elif line.startswith("data: "):
                        rest.append(parse_event(json.loads(line[6:])))
            stranger = client.get(
                url + "/reply", headers={"last-event-id": "3", "x-modelwire-resume-token": "not-the-token"}
            )
    assert ids[0] == last_id + 1 and ids == list(range(ids[0], ids[0] + len(ids)))  # no gap, no repeat
    assert rest[-1].type == "REPLY_END" and rest[-1].finished_reason == "completed"
    events = [e for e in first + rest if e.type != "CUSTOM"]
    from modelwire.message import AssistantMsg

    kept = made[0].context[-1]
    folded = AssistantMsg(events[0].name, [], id=events[0].reply_id, created_at=kept.created_at)
    for ev in events:
        folded.append_event(ev)
    assert folded.to_dict() == kept.to_dict() and "w299" in folded.get_text_content()
    assert stranger.status_code == 204  # nothing to take up: the same answer for every miss


def test_a_users_stop_ends_a_running_reply_at_once():
    long = body("anthropic", ("text", " ".join(["word"] * 600)))
    with ProviderServer() as provider:
        provider.replies = [sse_reply(long, delay=0.02)]
        made: list = []
        with Served(agent_app(provider, made=made)) as url, httpx.Client() as client:
            events, token, stop = [], None, None
            with client.stream("POST", url + "/reply", json={"input": "talk"}) as resp:
                for line in _lines(resp):
                    if line.startswith("data: "):
                        ev = parse_event(json.loads(line[6:]))
                        events.append(ev)
                        token = ev.value["resume_token"] if ev.type == "CUSTOM" else token
                        if len(events) == 20:  # in the middle of the model's text
                            stop = client.post(
                                url + "/reply",
                                json={
                                    "resume": {"type": "USER_INTERRUPT", "reply_id": events[0].reply_id},
                                    "resume_token": token,
                                },
                            )
        deadline = time.monotonic() + 60  # a disconnect is noted when the provider's next write fails
        while not provider.disconnects and time.monotonic() < deadline:
            time.sleep(0.01)
    assert stop.status_code == 204
    assert events[-1].type == "REPLY_END" and events[-1].finished_reason == "interrupted"
    said = "".join(e.delta for e in events if e.type == "TEXT_BLOCK_DELTA")
    assert said.count("word") < 600 and provider.disconnects  # ended before the words still to come


class CuttingProxy:
    """A TCP proxy on 127.0.0.1 whose first connection is cut after ``cut`` bytes of the
    answer: a real lost connection, in the middle of a frame."""

    def __init__(self, upstream_port: int, cut: int) -> None:
        import socket

        self.upstream_port, self.cut = upstream_port, cut
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket

        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            limit = self.cut if self.connections == 1 else None
            threading.Thread(target=self._pipe, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, limit), daemon=True).start()

    @staticmethod
    def _pipe(src, dst, limit) -> None:
        import socket

        sent = 0
        try:
            while True:
                data = src.recv(4096)
                if not data:
                    break
                if limit is not None and sent + len(data) >= limit:
                    dst.sendall(data[: limit - sent])
                    break
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.sock.close()


def test_fold_mjs_reads_a_reply_through_a_lost_connection_and_folds_it_whole():
    import subprocess
    from pathlib import Path

    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node")
    fold = (Path(__file__).resolve().parents[1] / "src" / "modelwire" / "js" / "fold.mjs").as_uri()
    long = body("anthropic", ("think", "Counting."), ("text", " ".join(f"w{i}" for i in range(300))), usage=(9, 300))
    made: list = []
    with ProviderServer() as provider:
        provider.replies = [sse_reply(long, delay=0.004)]
        with Served(agent_app(provider, made=made)) as url:
            port = int(url.rsplit(":", 1)[1])
            proxy = CuttingProxy(port, cut=2500)
            script = f"""
                import {{ readReply, appendEvent, messageFor }} from "{fold}";
                let msg = null, custom = 0, seen = new Set(), repeats = 0;
                const url = "http://127.0.0.1:{proxy.port}/reply";
                for await (const event of readReply(url, {{ body: {{ input: "count" }}, delay: 50 }})) {{
                    if (event.type === "CUSTOM") {{ custom += 1; continue; }}
                    if (seen.has(event.id)) repeats += 1;
                    seen.add(event.id);
                    msg = event.type === "REPLY_START" ? messageFor(event) : appendEvent(msg, event);
                }}
                process.stdout.write(JSON.stringify({{ msg, custom, repeats }}));
            """
            proc = subprocess.run(
                [node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
            )
            proxy.close()
            connections = proxy.connections
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    kept = made[0].context[-1].to_dict()
    assert connections == 2 and got["repeats"] == 0  # cut once, taken up once, nothing twice
    assert got["msg"]["content"] == kept["content"] and got["msg"]["finished_reason"] == "completed"
