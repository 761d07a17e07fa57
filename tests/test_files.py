"""Files uploaded once and referred to by id: Anthropic's and OpenAI's Files APIs and the
Gemini API's resumable upload, against a local server on 127.0.0.1 that implements those
endpoints as the official SDKs' types describe them (its answers validated by those types).
Each upload is compared, part by part and byte for byte, with what the official SDK itself
sends to the same server for the same file; each request that refers to a file is checked
against the SDK's request types; a conversation that attaches a PDF once and switches
provider sends the bytes there and the reference back at the origin."""

from __future__ import annotations

import asyncio
import email.parser
import email.policy
import json
import uuid
from typing import Any

import pytest

import sdk_params
from modelwire import load_model
from modelwire.errors import FormatError, UnsupportedOptionError
from modelwire.message import AssistantMsg, DataBlock, Msg, TextBlock, UserMsg
from modelwire.testing import ProviderServer, Reply, sse_reply
from modelwire.testing.sse import body

PDF = b"%PDF-1.4\n" + bytes(range(256)) * 40 + b"\n%%EOF\n"  # every byte value, as binary files hold


def parts(request: dict[str, Any]) -> dict[str, tuple[str | None, str, bytes]]:
    """A multipart request's parts: name -> (filename, content type, bytes)."""
    head = f"Content-Type: {request['headers']['content-type']}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + request["body"])
    out = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[name] = (part.get_filename(), part.get_content_type(), part.get_payload(decode=True))
    return out


class FilesServer:
    """The Files endpoints of the three APIs, and their model endpoints answering a short text
    (every file a request refers to must be one this server holds)."""

    def __init__(self, server: ProviderServer) -> None:
        self.server = server
        self.held: dict[str, dict[str, Any]] = {}
        self.uploads: list[dict[str, Any]] = []
        self.referred: list[str] = []
        server.respond = self.respond

    def respond(self, request: dict[str, Any]) -> Reply:
        path, method = request["path"].split("?")[0], request["method"]
        if path in ("/v1/files", "/upload/v1beta/files") or path.startswith("/upload/v1beta/files/"):
            if method == "POST":
                return self.upload(request, path)
            return self.listing(path)
        if path.startswith(("/v1/files/", "/v1beta/files/")) and method == "DELETE":
            file_id = path.rsplit("/", 1)[1]
            del self.held[file_id]
            answer = (
                {"id": file_id, "type": "file_deleted"}
                if not file_id.startswith("file-")
                else {"id": file_id, "object": "file", "deleted": True}
            )
            return _json(answer)
        if path == "/v1beta/files":
            return self.listing(path)
        return self.answer(request, path)

    def upload(self, request: dict[str, Any], path: str) -> Reply:
        self.uploads.append(request)
        if path == "/upload/v1beta/files" and request["headers"].get("x-goog-upload-command") == "start":
            session = uuid.uuid4().hex
            self.held["pending:" + session] = request["json"]["file"]
            return Reply(
                body=b"",
                headers={
                    "x-goog-upload-url": f"{self.server.url}/upload/v1beta/files/{session}",
                    "x-goog-upload-status": "active",
                },
            )
        if path.startswith("/upload/v1beta/files/"):
            from google.genai import types

            started = self.held.pop("pending:" + path.rsplit("/", 1)[1])
            file_id = uuid.uuid4().hex[:12]
            made = {
                "name": f"files/{file_id}",
                "displayName": started.get("display_name"),
                "mimeType": started["mime_type"],
                "sizeBytes": str(len(request["body"])),
                "uri": f"{self.server.url}/v1beta/files/{file_id}",
                "state": "ACTIVE",
            }
            types.File.model_validate(made)
            self.held[file_id] = {**made, "bytes": request["body"]}
            return _json({"file": made}, {"x-goog-upload-status": "final"})
        form = parts(request)
        filename, media_type, data = form["file"]
        if "purpose" in form:  # OpenAI
            from openai.types import FileObject

            made = {
                "id": "file-" + uuid.uuid4().hex[:12],
                "object": "file",
                "bytes": len(data),
                "created_at": 1,
                "filename": filename,
                "purpose": form["purpose"][2].decode(),
                "status": "processed",
            }
            FileObject.model_validate(made)
        else:
            from anthropic.types import FileMetadata

            made = {
                "id": "file_" + uuid.uuid4().hex[:12],
                "type": "file",
                "filename": filename,
                "mime_type": media_type,
                "size_bytes": len(data),
                "created_at": "2026-12-05T00:00:00Z",
                "downloadable": False,
            }
            FileMetadata.model_validate(made)
        self.held[made["id"]] = {**made, "bytes": data}
        return _json(made)

    def listing(self, path: str) -> Reply:
        files = [
            {k: v for k, v in f.items() if k != "bytes"} for k, f in self.held.items() if not k.startswith("pending:")
        ]
        if path == "/v1beta/files":
            return _json({"files": [f for f in files if "uri" in f]})
        openai = [f for f in files if f.get("object") == "file"]
        if openai:
            return _json({"object": "list", "data": openai, "has_more": False})
        return _json(
            {
                "data": [f for f in files if f.get("type") == "file"],
                "has_more": False,
                "first_id": None,
                "last_id": None,
            }
        )

    def answer(self, request: dict[str, Any], path: str) -> Reply:
        sent = json.dumps(request["json"])
        for file_id in self.held:
            if file_id in sent:
                self.referred.append(file_id)
        protocol = (
            "anthropic"
            if path.endswith("/messages")
            else "openai-responses"
            if path.endswith("/responses")
            else "gemini"
            if "generateContent" in path
            else "openai-chat"
        )
        return sse_reply(body(protocol, ("text", "It is a PDF.")))


def _json(answer: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return Reply(body=json.dumps(answer).encode(), headers={"content-type": "application/json", **(headers or {})})


@pytest.fixture
def files(tmp_path):
    with ProviderServer() as server:
        yield FilesServer(server)


def _models(url: str) -> dict[str, Any]:
    return {
        "anthropic": load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=url),
        "openai": load_model("openai:gpt-4.1", api_key="k", base_url=url + "/v1"),
        "responses": load_model("openai-responses:gpt-4.1", api_key="k", base_url=url + "/v1"),
        "gemini": load_model("google:gemini-2.5-flash", api_key="k", base_url=url),
    }


def _sdk_upload(kind: str, url: str, path) -> None:
    """The official SDK uploading the same file to the same server."""
    if kind == "anthropic":
        import anthropic

        anthropic.Anthropic(api_key="k", base_url=url, max_retries=0).files.upload(
            file=(path.name, path.read_bytes(), "application/pdf")
        )
    elif kind == "openai":
        import openai

        openai.OpenAI(api_key="k", base_url=url + "/v1", max_retries=0).files.create(
            file=(path.name, path.read_bytes(), "application/pdf"), purpose="user_data"
        )
    else:
        from google import genai

        client = genai.Client(
            api_key="k", http_options={"base_url": url, "api_version": "v1beta"}
        )  # kept: a dropped client closes its connection
        client.files.upload(file=str(path), config={"mime_type": "application/pdf", "display_name": path.name})


@pytest.mark.parametrize("kind", ["anthropic", "openai", "gemini"])
def test_an_upload_is_the_official_sdks_byte_for_byte(kind, files, tmp_path):
    path = tmp_path / "report.pdf"
    path.write_bytes(PDF)
    model = _models(files.server.url)[kind]
    block = asyncio.run(model.upload_file(path))
    ours = files.uploads[:]
    _sdk_upload(kind, files.server.url, path)
    theirs = files.uploads[len(ours) :]
    assert [u["path"].split("?")[0].rsplit("/", 1)[0] for u in ours] == [
        u["path"].split("?")[0].rsplit("/", 1)[0] for u in theirs
    ]
    if kind == "gemini":
        (start, upload), (their_start, their_upload) = ours, theirs
        goog = {k: v for k, v in start["headers"].items() if k.startswith("x-goog-upload")}
        assert goog == {k: v for k, v in their_start["headers"].items() if k.startswith("x-goog-upload")}
        assert start["json"] == their_start["json"]
        assert upload["body"] == their_upload["body"] == PDF
        assert (upload["headers"]["x-goog-upload-command"], upload["headers"]["x-goog-upload-offset"]) == (
            "upload, finalize",
            "0",
        )
    else:
        assert parts(ours[0]) == parts(theirs[0])
        assert parts(ours[0])["file"] == ("report.pdf", "application/pdf", PDF)
    file_id = block.to_dict()["file_id"]
    assert files.held[file_id]["bytes"] == PDF
    assert block.source.media_type == "application/pdf" and block.name == "report.pdf"
    assert block.to_dict()["local_copy"] == path.resolve().as_uri()
    listed = asyncio.run(model.list_files())
    assert file_id in [f.id for f in listed]
    asyncio.run(model.delete_file(block))
    assert file_id not in files.held


def test_a_pdf_attached_once_goes_by_id_at_its_origin_and_as_bytes_elsewhere(files, tmp_path):
    path = tmp_path / "contract.pdf"
    path.write_bytes(PDF)
    models = _models(files.server.url)
    block = asyncio.run(models["anthropic"].upload_file(path))
    file_id = block.to_dict()["file_id"]
    history: list[Msg] = [UserMsg("me", [TextBlock(text="What is this?"), block])]
    history.append(asyncio.run(models["anthropic"].complete(history)))
    sent = files.server.requests[-1]["json"]
    assert {"type": "document", "source": {"type": "file", "file_id": file_id}, "title": "contract.pdf"} in sent[
        "messages"
    ][0]["content"]
    sdk_params.streaming_request("anthropic", sent)
    history.append(UserMsg("me", "And now?"))
    history.append(asyncio.run(models["openai"].complete(history)))  # another provider: the bytes
    sent = files.server.requests[-1]["json"]
    (part,) = [p for p in sent["messages"][0]["content"] if p["type"] == "file"]
    assert part["file"]["file_data"] == "data:application/pdf;base64," + __import__("base64").b64encode(PDF).decode()
    assert file_id not in json.dumps(sent)
    sdk_params.streaming_request("openai-chat", sent)
    history.append(UserMsg("me", "Back to you."))
    asyncio.run(models["anthropic"].complete(history))  # the origin again: the reference
    sent = files.server.requests[-1]["json"]
    assert sent["messages"][0]["content"][1]["source"] == {"type": "file", "file_id": file_id}
    assert files.referred.count(file_id) == 2


@pytest.mark.parametrize(
    "kind,protocol", [("openai", "openai-chat"), ("responses", "openai-responses"), ("gemini", "gemini")]
)
def test_each_api_refers_to_its_own_file_as_its_sdk_says(kind, protocol, files, tmp_path):
    path = tmp_path / "chart.pdf"
    path.write_bytes(PDF)
    model = _models(files.server.url)[kind]
    block = asyncio.run(model.upload_file(path))
    asyncio.run(model.complete([UserMsg("me", [TextBlock(text="Read it."), block])]))
    sent = files.server.requests[-1]["json"]
    file_id = block.to_dict()["file_id"]
    expected = {
        "openai-chat": {"type": "file", "file": {"file_id": file_id}},
        "openai-responses": {"type": "input_file", "file_id": file_id},
        "gemini": {"fileData": {"mimeType": "application/pdf", "fileUri": block.source.url}},
    }[protocol]
    contents = (
        sent["contents"][0]["parts"]
        if protocol == "gemini"
        else sent["input"][0]["content"]
        if protocol == "openai-responses"
        else sent["messages"][0]["content"]
    )
    assert expected in contents, contents
    sdk_params.streaming_request(protocol, sent)


def test_a_file_held_elsewhere_with_no_local_copy_is_refused_saying_what_to_do(files):
    models = _models(files.server.url)
    block = asyncio.run(models["anthropic"].upload_file(PDF, media_type="application/pdf", name="memo.pdf"))
    assert "local_copy" not in block.to_dict()
    with pytest.raises(FormatError, match=r"file_\w+ held by anthropic.*upload it there too") as info:
        asyncio.run(models["gemini"].complete([UserMsg("me", [TextBlock(text="Read it."), block])]))
    assert info.value.code == "file-elsewhere" and info.value.index == 0
    image = asyncio.run(models["openai"].upload_file(b"\x89PNG\r\n\x1a\n", media_type="image/png", name="dot.png"))
    with pytest.raises(FormatError, match="Chat Completions takes uploaded files by id as PDFs only"):
        asyncio.run(models["openai"].complete([UserMsg("me", [image])]))


def test_the_block_round_trips_and_agentscope_reads_it_as_a_url_source(files, tmp_path):
    agentscope = pytest.importorskip("agentscope", reason="the dev extra installs agentscope==2.0.11")
    del agentscope
    from agentscope.message import Msg as ASMsg

    path = tmp_path / "x.pdf"
    path.write_bytes(PDF)
    block = asyncio.run(_models(files.server.url)["anthropic"].upload_file(path))
    msg = UserMsg("me", [block])
    again = Msg.from_dict(json.loads(msg.to_json()))
    assert again == msg and again.content[0].to_dict()["file_id"] == block.to_dict()["file_id"]
    theirs = ASMsg.model_validate(json.loads(msg.to_json()))
    assert theirs.content[0].source.type == "url" and str(theirs.content[0].source.url) == block.source.url


@pytest.mark.parametrize(
    "spec,words",
    [
        ("vertex:gemini-2.5-pro", "gs:// URL"),
        ("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "Bedrock has no Files API: send an s3:// URL"),
        ("vertex-anthropic:claude-sonnet-4-5@20250929", "Claude on Vertex AI has no Files API"),
        ("bedrock-anthropic:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "Claude on Bedrock has no Files API"),
    ],
)
def test_the_clouds_refuse_an_upload_saying_what_they_take(spec, words, monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    model = load_model(spec, api_key="k")
    with pytest.raises(UnsupportedOptionError, match=words):
        asyncio.run(model.upload_file(PDF, media_type="application/pdf"))


def test_an_assistant_turn_with_a_held_file_formats_offline_too():
    """Without the models layer (``modelwire format``, a FakeModel), a reference goes to the
    endpoint that holds it, and nowhere else."""
    from modelwire.message import URLSource, provenance

    block = DataBlock(
        source=URLSource(url="https://api.anthropic.com/v1/files/file_1", media_type="application/pdf"),
        file_id="file_1",
        file_api="anthropic",
        provider_metadata=provenance("anthropic", "anthropic", "anthropic"),
    )
    model = load_model("anthropic:claude-sonnet-4-5", api_key="k")
    payload = model.build_request([UserMsg("me", [block]), AssistantMsg("a", "ok"), UserMsg("me", "so?")])[0]
    assert payload["messages"][0]["content"][0]["source"] == {"type": "file", "file_id": "file_1"}
    with pytest.raises(FormatError, match="file-elsewhere|held by anthropic"):
        load_model("openai-responses:gpt-4.1", api_key="k").build_request([UserMsg("me", [block])])


def test_check_reports_a_file_sent_where_it_is_not_held(files, tmp_path):
    path = tmp_path / "plan.pdf"
    path.write_bytes(PDF)
    models = _models(files.server.url)
    kept = asyncio.run(models["anthropic"].upload_file(path))
    bare = asyncio.run(models["anthropic"].upload_file(PDF, media_type="application/pdf", name="bare.pdf"))
    conversation = [
        UserMsg("me", [TextBlock(text="Compare."), kept]),
        AssistantMsg("a", "Done."),
        UserMsg("me", [bare]),
    ]
    assert models["anthropic"].preflight(conversation) == []
    found = models["gemini"].preflight(conversation)
    assert [(f.rule, f.index) for f in found] == [("file-elsewhere", 0), ("file-elsewhere", 2)]
    assert found[0].fix == f"its bytes are sent, read from {path.resolve().as_uri()}" and found[1].fix is None
    assert "upload it there too" in found[1].message


def test_bedrock_takes_an_s3_url_as_botocore_describes_it(monkeypatch):
    """What the refusal offers works: an s3:// source goes as an s3Location, valid for botocore."""
    from modelwire.message import URLSource

    monkeypatch.setenv("AWS_REGION", "us-east-1")
    model = load_model("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", api_key="k")
    doc = DataBlock(source=URLSource(url="s3://my-bucket/reports/q3.pdf", media_type="application/pdf"), name="q3.pdf")
    image = DataBlock(source=URLSource(url="s3://my-bucket/chart.png", media_type="image/png"))
    payload = asyncio.run(_built(model, [UserMsg("me", [TextBlock(text="Read these."), doc, image])]))
    content = payload["messages"][0]["content"]
    assert content[1]["document"]["source"] == {"s3Location": {"uri": "s3://my-bucket/reports/q3.pdf"}}
    assert content[2]["image"]["source"] == {"s3Location": {"uri": "s3://my-bucket/chart.png"}}
    sdk_params.bedrock_request(payload)


async def _built(model: Any, messages: list[Msg]) -> dict[str, Any]:
    """The request as a call builds it (sources resolved first: an s3:// URL is left as it is)."""
    from modelwire.models._media import resolve_sources

    resolved = await resolve_sources(messages, model.wire, model.transport, model.max_source_bytes, model.endpoint)
    return model.build_request(resolved)[0]


# A 200 whose answer names no usable file id: what a proxy or a half-compatible server sends.
NO_ID = [{}, {"id": None}, {"id": 7}, {"id": ""}, {"id": ["file-1"]}, {"file": "files/abc"}, {"file": {"name": 3}}]


@pytest.mark.parametrize("answer", NO_ID, ids=lambda a: json.dumps(a))
@pytest.mark.parametrize("kind", ["anthropic", "openai", "gemini"])
def test_an_upload_answered_without_a_usable_id_is_a_typed_error(kind, answer, server):
    from modelwire.errors import UpstreamError

    if kind == "gemini":  # the start of its resumable upload, then the answer to the bytes
        server.script(_json({}, {"x-goog-upload-url": server.url + "/upload/v1beta/files/s1"}))
    server.script(_json(answer))
    model = _models(server.url)[kind]
    with pytest.raises(UpstreamError, match="no usable file id"):
        asyncio.run(model.upload_file(PDF, media_type="application/pdf"))


def test_an_upload_answered_with_a_list_is_a_typed_error(server):
    from modelwire.errors import UpstreamError

    server.script(Reply(body=b'[{"id": "file-1"}]', headers={"content-type": "application/json"}))
    with pytest.raises(UpstreamError, match="no usable file id"):
        asyncio.run(_models(server.url)["openai"].upload_file(PDF, media_type="application/pdf"))


def test_an_upload_from_a_path_reads_the_file_as_it_sends_it(tmp_path):
    """Memory independent of the file's size: a 24 MiB file and a 3 MiB one uploaded to a
    local server that reads each body in pieces (benchmarks/upload_memory.py measures 200 MiB);
    every byte arrives, under the Content-Length sent, and the peak of traced allocations stays
    the same few MiB for both."""
    import importlib.util
    import threading
    from http.server import ThreadingHTTPServer
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "upload_memory", Path(__file__).resolve().parents[1] / "benchmarks" / "upload_memory.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    server = ThreadingHTTPServer(("127.0.0.1", 0), bench._Discard)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        bench.measure(1, url, str(tmp_path))  # imports and the connection, not counted
        small, big = (bench.measure(size, url, str(tmp_path)) for size in (3, 24))
    finally:
        server.shutdown()
        server.server_close()
    assert big["traced_peak_mib"] < 8 and big["traced_peak_mib"] < small["traced_peak_mib"] + 1


def test_a_file_that_shrinks_while_it_is_uploaded_is_a_config_error(tmp_path):
    from modelwire.errors import ConfigError
    from modelwire.models._body import file_pieces
    from modelwire.protocols import FileBody

    path = tmp_path / "report.pdf"
    path.write_bytes(PDF)
    body = FileBody(str(path), len(PDF) + 10, b"<", b">")
    with pytest.raises(ConfigError, match="changed while it was uploaded"):
        b"".join(file_pieces(body))
