"""Media a client names in ``serve`` is read only as the app's SourcePolicy allows: no file
of the server's, no address of its network (each dialect, on real sockets: uvicorn, a local
provider, a local service that must see nothing), while a script keeps reading its own files."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2 as httpx
import pytest

from modelwire.errors import ConfigError, SourceRefusedError
from modelwire.message import DataBlock, TextBlock, URLSource, UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.serve import EventStreamApp
from modelwire.sources import TRUSTED, SourcePolicy, not_public, use_source_policy
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body

from test_serve import Served, agent_app

SECRET = "MW-SECRET-7f3a9c"


class LocalService:
    """An HTTP service on 127.0.0.1 that keeps every request it gets; ``routes`` maps a path
    to (status, headers, body)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.routes: dict[str, tuple[int, dict[str, str], bytes]] = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                owner.requests.append({"path": self.path, "host": self.headers.get("host")})
                status, headers, content = owner.routes.get(self.path, (200, {}, SECRET.encode()))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if "content-length" not in {k.lower() for k in headers} and "no-length" not in headers:
                    self.send_header("content-length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "LocalService":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def resolver(table: dict[str, list[str]], calls: list[str] | None = None):
    """The network's DNS, as a table (a resolver seam: the names are the test's own)."""

    async def resolve(host: str, port: int) -> list[str]:
        if calls is not None:
            calls.append(host)
        return table.get(host, [])

    return resolve


def bodies(url: str, media_type: str = "text/plain") -> dict[str, dict]:
    """The same user turn, a text and a media source at ``url``, in each of serve's dialects."""
    return {
        "events": {
            "messages": [
                {
                    "role": "user",
                    "name": "user",
                    "content": [
                        {"type": "text", "text": "Repeat this file."},
                        {"type": "data", "source": {"type": "url", "url": url, "media_type": media_type}},
                    ],
                }
            ]
        },
        "ui-message": {
            "id": "chat-1",
            "messages": [
                {
                    "id": "m1",
                    "role": "user",
                    "parts": [
                        {"type": "text", "text": "Repeat this file."},
                        {"type": "file", "url": url, "mediaType": media_type},
                    ],
                }
            ],
        },
        "ag-ui": {
            "threadId": "t1",
            "runId": "r1",
            "state": {},
            "tools": [],
            "context": [],
            "forwardedProps": {},
            "messages": [
                {
                    "id": "m1",
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Repeat this file."},
                        {"type": "document", "source": {"type": "url", "value": url, "mimeType": media_type}},
                    ],
                }
            ],
        },
    }


def post_each_dialect(app: EventStreamApp, url: str, media_type: str = "text/plain") -> dict[str, str]:
    """Each dialect's stream for a turn naming ``url``, as text."""
    out = {}
    with Served(app) as served, httpx.Client(timeout=30) as client:
        for dialect, data in bodies(url, media_type).items():
            resp = client.post(served + "/reply", json=data)
            assert resp.status_code == 200, (dialect, resp.text)
            out[dialect] = resp.text
    return out


def sent_to(provider: ProviderServer) -> str:
    return json.dumps([r["json"] for r in provider.requests])


def times_sent(provider: ProviderServer, text: str) -> int:
    """How many times ``text`` reached the provider, as text (a plain-text document) or base64."""
    sent = sent_to(provider)
    return sent.count(text) + sent.count(base64.b64encode(text.encode()).decode())


def app_with(provider: ProviderServer, policy: SourcePolicy | None = SourcePolicy()) -> EventStreamApp:
    app = agent_app(provider)
    app.source_policy = policy
    return app


ENDINGS = {"events": '"REPLY_END"', "ui-message": '"type":"error"', "ag-ui": '"RUN_ERROR"'}


def assert_refused(streams: dict[str, str], rule: str, *absent: str) -> None:
    for dialect, text in streams.items():
        assert f"refused ({rule})" in text, (dialect, text[-600:])
        assert ENDINGS[dialect] in text, (dialect, text[-600:])
        for word in (SECRET, *absent):
            assert word not in text, (dialect, word)


def test_a_clients_file_url_is_not_read_in_any_dialect(tmp_path):
    secret = tmp_path / ".env"
    secret.write_text(f"API_KEY={SECRET}\n")
    with ProviderServer() as provider:
        provider.replies = [sse_reply(body("anthropic", ("text", "ok")))] * 3
        streams = post_each_dialect(app_with(provider), secret.as_uri())
    assert_refused(streams, "files")
    assert provider.requests == [] and times_sent(provider, SECRET) == 0


def test_the_servers_own_network_sees_no_request_in_any_dialect():
    with ProviderServer() as provider, LocalService() as service:
        provider.replies = [sse_reply(body("anthropic", ("text", "ok")))] * 9
        app = app_with(provider)
        plain = post_each_dialect(app, service.url + "/secret")  # text/plain: fetched to be inlined
        tls = post_each_dialect(app, f"https://127.0.0.1:{service.port}/secret")
        image = post_each_dialect(app, service.url + "/cat.png", "image/png")  # sent for the provider to fetch
    assert_refused(plain, "scheme")
    assert_refused(tls, "address")
    assert_refused(image, "scheme")
    assert service.requests == [] and provider.requests == []


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "10.0.0.7", "169.254.169.254", "100.100.100.200", "::ffff:127.0.0.1", "fd00:ec2::254"]
)
def test_a_name_that_resolves_to_a_private_address_is_refused_after_resolution(address):
    policy = SourcePolicy(resolver=resolver({"media.example": ["93.184.215.14", address]}))
    with ProviderServer() as provider, LocalService():
        streams = post_each_dialect(app_with(provider, policy), "https://media.example/doc.txt")
    assert_refused(streams, "address", address)
    assert provider.requests == []


def test_a_redirect_from_an_allowed_host_to_a_refused_one_is_checked_again():
    with ProviderServer() as provider, LocalService() as allowed, LocalService() as inner:
        allowed.routes["/doc.txt"] = (302, {"location": f"https://127.0.0.1:{inner.port}/secret"}, b"")
        allowed.routes["/plain"] = (302, {"location": f"{inner.url}/secret"}, b"")
        allowed.routes["/file"] = (307, {"location": "file:///etc/hostname"}, b"")
        policy = SourcePolicy(hosts=("media.test",), resolver=resolver({"media.test": ["127.0.0.1"]}))
        app = app_with(provider, policy)
        streams = post_each_dialect(app, f"http://media.test:{allowed.port}/doc.txt")
        plain = post_each_dialect(app, f"http://media.test:{allowed.port}/plain")
        local = post_each_dialect(app, f"http://media.test:{allowed.port}/file")
    assert_refused(streams, "address")
    assert_refused(plain, "scheme")
    assert_refused(local, "scheme")
    assert len(allowed.requests) == 9 and inner.requests == [] and provider.requests == []


def test_an_allowed_host_is_fetched_at_the_address_checked_with_its_name_kept():
    calls: list[str] = []
    with ProviderServer() as provider, LocalService() as media:
        media.routes["/doc.txt"] = (200, {}, b"the operator's own document")
        provider.replies = [sse_reply(body("anthropic", ("text", "ok")))] * 3
        policy = SourcePolicy(hosts=("*.corp.test",), resolver=resolver({"media.corp.test": ["127.0.0.1"]}, calls))
        streams = post_each_dialect(app_with(provider, policy), f"http://media.corp.test:{media.port}/doc.txt")
    # Resolved once per fetch, by the policy's resolver only (the system's knows no such
    # name): the connection went to the address that was judged.
    assert calls == ["media.corp.test"] * 3
    assert [r["host"] for r in media.requests] == [f"media.corp.test:{media.port}"] * 3
    assert all('"REPLY_END"' in s or "finish" in s for s in streams.values())
    assert times_sent(provider, "the operator's own document") == 3


@pytest.mark.parametrize("declared", [True, False])
def test_a_source_over_the_size_limit_is_refused(declared):
    with ProviderServer() as provider, LocalService() as media:
        headers = {} if declared else {"no-length": "1", "connection": "close"}
        media.routes["/big.txt"] = (200, headers, b"x" * 5000)
        policy = SourcePolicy(hosts=("media.test",), max_bytes=1000, resolver=resolver({"media.test": ["127.0.0.1"]}))
        streams = post_each_dialect(app_with(provider, policy), f"http://media.test:{media.port}/big.txt")
    assert_refused(streams, "size")
    assert provider.requests == []


def test_a_second_dns_answer_cannot_rebind_the_fetch():
    """The name is resolved once and the request goes to the address judged; a resolver
    that would answer loopback the second time is never asked again."""
    from modelwire.models._fetch import _pinned, checked_target

    answers = [["93.184.215.14"], ["127.0.0.1"]]
    calls: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return answers[len(calls) - 1]

    def refuse(rule: str, reason: str) -> SourceRefusedError:
        return SourceRefusedError(0, "1", "https://rebind.test/a.txt", rule, reason)

    async def main():
        target = await checked_target("https://rebind.test/a.txt", SourcePolicy(resolver=rebinding), refuse)
        async with httpx.AsyncClient() as client:
            return _pinned(client, target)

    request = asyncio.run(main())
    assert calls == ["rebind.test"]
    assert request.url.host == "93.184.215.14" and request.headers["host"] == "rebind.test"
    assert request.extensions["sni_hostname"] == "rebind.test"


def test_references_to_the_servers_cloud_storage_and_provider_files_are_refused():
    with ProviderServer() as provider:
        app = app_with(provider)
        gs = post_each_dialect(app, "gs://the-servers-bucket/report.pdf", "application/pdf")
        with Served(app) as served, httpx.Client(timeout=30) as client:
            block = {
                "type": "data",
                "source": {"type": "url", "url": "https://api.example/v1/files/file_1", "media_type": "text/plain"},
                "file_id": "file_1",
                "local_copy": "file:///etc/hostname",
            }
            message = {"role": "user", "name": "user", "content": [block]}
            held = client.post(served + "/reply", json={"messages": [message]}).text
    assert_refused(gs, "scheme")
    assert "refused (provider-files)" in held and provider.requests == []


def test_a_script_keeps_reading_its_own_files_and_a_policy_can_say_so(tmp_path):
    secret = tmp_path / "notes.txt"
    secret.write_text(SECRET)
    msg = UserMsg(
        "user", [TextBlock(text="Repeat."), DataBlock(source=URLSource(url=secret.as_uri(), media_type="text/plain"))]
    )
    with ProviderServer() as provider:
        provider.replies = [sse_reply(body("anthropic", ("text", "ok")))] * 3
        model = load_model(
            "anthropic:claude-sonnet-4-5", api_key="sk-test", base_url=provider.url, retry=RetryPolicy(max_retries=0)
        )

        async def main():
            await model.complete([msg])
            with use_source_policy(TRUSTED):
                await model.complete([msg])
            with use_source_policy(SourcePolicy()):
                with pytest.raises(SourceRefusedError) as refused:
                    await model.complete([msg])
            return refused.value

        refused = asyncio.run(main())
    assert len(provider.requests) == 2 and times_sent(provider, SECRET) == 2
    assert (refused.index, refused.block, refused.rule) == (0, "1", "files")


def test_a_server_that_trusts_its_clients_can_say_so(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text(SECRET)
    with ProviderServer() as provider:
        provider.replies = [sse_reply(body("anthropic", ("text", "ok")))] * 3
        streams = post_each_dialect(app_with(provider, None), notes.as_uri())
    assert all("refused" not in s for s in streams.values())
    assert times_sent(provider, SECRET) == 3


def test_addresses_are_judged_public_or_not():
    private = [
        "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
        "100.100.100.200", "192.0.0.192", "0.0.0.0", "224.0.0.1", "::1", "::", "fe80::1%eth0",
        "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "64:ff9b::a00:1", "2002:a00:1::", "ff02::1",
    ]  # fmt: skip
    assert [a for a in private if not_public(a) is None] == []
    assert [not_public(a) for a in ("8.8.8.8", "2606:4700::1111", "64:ff9b::808:808")] == [None] * 3


def test_a_policy_says_what_is_wrong_with_it():
    for bad in ({"urls": "some"}, {"references": "maybe"}, {"hosts": "a.example"}, {"max_bytes": 0}):
        with pytest.raises(ConfigError):
            SourcePolicy(**bad)


def test_modelwire_serve_takes_the_policy_from_its_flags(tmp_path, monkeypatch):
    from modelwire.cli import _serve_app, build_parser

    monkeypatch.delenv("MODELWIRE_MODEL", raising=False)
    notes = tmp_path / "notes.txt"
    notes.write_text(SECRET)
    default, _ = _serve_app(build_parser().parse_args(["serve"]))
    args = ["serve", "--media", "hosts", "--media-host", "*.corp.test", "--media-max-bytes", "1000"]
    app, _ = _serve_app(build_parser().parse_args(args))
    assert default.source_policy == SourcePolicy()
    assert app.source_policy == SourcePolicy(urls="hosts", hosts=("*.corp.test",), max_bytes=1000)
    streams = post_each_dialect(default, notes.as_uri())  # the demo replay: refused before any replay
    assert_refused(streams, "files")


def test_a_fetch_that_never_answers_or_redirects_forever_ends_within_the_policys_limits():
    import socket

    with ProviderServer() as provider, LocalService() as media, socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections complete, nothing ever answers
        media.routes["/loop"] = (302, {"location": "/loop"}, b"")
        table = {"media.test": ["127.0.0.1"]}
        hasty = SourcePolicy(hosts=("media.test",), timeout=0.5, max_redirects=2, resolver=resolver(table))
        # The redirects are answered, so their policy leaves a loaded machine time to answer them.
        patient = SourcePolicy(hosts=("media.test",), timeout=30, max_redirects=2, resolver=resolver(table))
        stuck = post_each_dialect(app_with(provider, hasty), f"http://media.test:{silent.getsockname()[1]}/doc.txt")
        looping = post_each_dialect(app_with(provider, patient), f"http://media.test:{media.port}/loop")
    assert_refused(stuck, "timeout")
    assert_refused(looping, "redirects")
    assert len(media.requests) == 3 * 3 and provider.requests == []


@pytest.mark.parametrize(
    "url", ["https://[::1/", "https://a.example:99999/x.txt", "https:///x.txt", "ftp://a.example/"]
)
def test_a_url_that_cannot_be_read_is_refused_as_such(url):
    with ProviderServer() as provider:
        streams = post_each_dialect(app_with(provider, SourcePolicy(resolver=resolver({}))), url)
    for text in streams.values():
        assert "refused (host)" in text or "refused (scheme)" in text
    assert provider.requests == []


def test_a_public_reference_goes_as_given_checked_once_per_request():
    calls: list[str] = []
    policy = SourcePolicy(resolver=resolver({"img.example": ["93.184.215.14"]}, calls))
    image = DataBlock(source=URLSource(url="https://img.example/cat.png", media_type="image/png"))
    with ProviderServer() as provider:
        provider.replies = [sse_reply(body("anthropic", ("text", "ok")))]
        model = load_model(
            "anthropic:claude-sonnet-4-5", api_key="sk-test", base_url=provider.url, retry=RetryPolicy(max_retries=0)
        )

        async def main():
            with use_source_policy(policy):
                await model.complete([UserMsg("user", [image, TextBlock(text="And again:"), image.replace(id="b2")])])

        asyncio.run(main())
    assert calls == ["img.example"]  # resolved, never fetched: the provider fetches it
    assert sent_to(provider).count("https://img.example/cat.png") == 2


def test_a_provider_file_named_beside_an_inline_source_is_refused_too():
    """Formatters send a block by its file id wherever the endpoint holds the file, whatever
    its source: a client's base64 block naming the server's uploaded file (with the
    provenance of the server's own endpoint) must not take that file to the model."""
    with ProviderServer() as provider:
        app = app_with(provider)
        with Served(app) as served, httpx.Client(timeout=30) as client:
            block = {
                "type": "data",
                "source": {"type": "base64", "data": "JVBERi0xLjQK", "media_type": "application/pdf"},
                "file_id": "file-SERVERS",
                "file_api": "anthropic",
                "provider_metadata": {"anthropic": {"protocol": "anthropic", "endpoint": "anthropic"}},
            }
            message = {"role": "user", "name": "user", "content": [block, {"type": "text", "text": "Read it."}]}
            held = client.post(served + "/reply", json={"messages": [message]}).text
    assert "refused (provider-files)" in held
    assert "file-SERVERS" not in str(provider.requests)


def test_ipv6_forms_a_translator_may_take_anywhere_are_not_public():
    from modelwire.sources import not_public

    for address in ("::127.0.0.1", "::ffff:0:7f00:1", "64:ff9b:1::a9fe:a9fe", "fec0::1"):
        assert not_public(address) == "a reserved address", address
    assert not_public("::1") == "a loopback address" and not_public("2606:4700::1111") is None
