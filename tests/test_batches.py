"""Batches: Anthropic's Message Batches and OpenAI's Batch API against a local server on
127.0.0.1 that implements those endpoints as the official SDKs' types describe them (the
requests it gets checked strictly against the SDKs' request types, its answers validated by
the SDKs' response types), with a batch of mixed successes and failures: one message per
request in the order submitted, a typed error where one failed, usage and the batch price."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest

import sdk_params
from modelwire import load_model
from modelwire.errors import ProviderError, UnsupportedOptionError
from modelwire.message import Msg, UserMsg
from modelwire.testing import ProviderServer, Reply

from test_files import _json, parts


class _Gemini:
    """The Gemini API's batch mode, as google-genai reads it (its BatchJob)."""

    def gemini_create(self: Any, request: dict[str, Any], path: str) -> Reply:
        model = path.removeprefix("/v1beta/models/").removesuffix(":batchGenerateContent")
        requests = request["json"]["batch"]["inputConfig"]["requests"]["requests"]
        for item in requests:
            assert "model" not in item["request"] and set(item["metadata"]) == {"key"}
            sdk_params.gemini_request(item["request"])
        batch_id = uuid.uuid4().hex[:12]
        self.batches[batch_id] = {"requests": requests, "model": model, "canceled": False}
        return _json(self.gemini_state(batch_id, asked=False))

    def gemini_state(self: Any, batch_id: str, asked: bool = True) -> dict[str, Any]:
        from google.genai import batches as genai_batches
        from google.genai import types

        batch, ended = self.asked_for(batch_id, False, asked)
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
            "name": f"batches/{batch_id}",
            "model": f"models/{batch['model']}",
            "displayName": "modelwire",
        }
        meta["state"] = (
            "BATCH_STATE_SUCCEEDED"
            if ended
            else "BATCH_STATE_CANCELLED"
            if batch["canceled"]
            else "BATCH_STATE_PENDING"
        )
        if ended:
            answers = []
            for item in reversed(batch["requests"]):  # in any order: the key says which
                key = item["metadata"]["key"]
                if "FAIL" in json.dumps(item["request"]["contents"][-1]):
                    answers.append(
                        {
                            "error": {
                                "code": 400,
                                "message": "The input token count exceeds the maximum number of tokens allowed.",
                                "status": "INVALID_ARGUMENT",
                            },
                            "metadata": {"key": key},
                        }
                    )
                else:
                    response = {
                        "candidates": [
                            {
                                "content": {"role": "model", "parts": [{"text": f"answer to {key}"}]},
                                "finishReason": "STOP",
                            }
                        ],
                        "usageMetadata": {
                            "promptTokenCount": 1000,
                            "candidatesTokenCount": 100,
                            "totalTokenCount": 1100,
                        },
                    }
                    answers.append({"response": response, "metadata": {"key": key}})
            meta["output"] = {"inlinedResponses": {"inlinedResponses": answers}}
        state = {"name": f"batches/{batch_id}", "metadata": meta, "done": ended}
        types.BatchJob._from_response(
            response=genai_batches._BatchJob_from_mldev(state), kwargs={}
        )  # google-genai reads it
        return state


class BatchServer(_Gemini):
    """Both batch APIs; a request whose last user text says FAIL is answered with an error.
    A batch ends on the second time it is asked for."""

    def __init__(self, server: ProviderServer) -> None:
        self.server = server
        self.batches: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        self.asked: dict[str, int] = {}
        server.respond = self.respond

    def respond(self, request: dict[str, Any]) -> Reply:
        path, method = request["path"].split("?")[0], request["method"]
        if path == "/v1/messages/batches" and method == "POST":
            return self.anthropic_create(request)
        if path.startswith("/v1/messages/batches/"):
            rest = path.removeprefix("/v1/messages/batches/").split("/")
            if rest[1:] == ["results"]:
                return Reply(
                    body=self.anthropic_results(rest[0]).encode(), headers={"content-type": "application/binary"}
                )
            return _json(self.anthropic_state(rest[0], cancel=rest[1:] == ["cancel"]))
        if path == "/v1/files" and method == "POST":
            form = parts(request)
            file_id = "file-" + uuid.uuid4().hex[:10]
            self.files[file_id] = form["file"][2]
            assert form["purpose"][2] == b"batch"
            return _json(
                {
                    "id": file_id,
                    "object": "file",
                    "bytes": len(form["file"][2]),
                    "created_at": 1,
                    "filename": form["file"][0],
                    "purpose": "batch",
                    "status": "processed",
                }
            )
        if path.startswith("/v1/files/") and path.endswith("/content"):
            return Reply(body=self.files[path.split("/")[3]], headers={"content-type": "application/jsonl"})
        if path == "/v1/batches" and method == "POST":
            return self.openai_create(request)
        if path.startswith("/v1/batches/"):
            rest = path.removeprefix("/v1/batches/").split("/")
            return _json(self.openai_state(rest[0], cancel=rest[1:] == ["cancel"]))
        if path.endswith(":batchGenerateContent"):
            return self.gemini_create(request, path)
        if path.startswith("/v1beta/batches/"):
            batch_id, _, action = path.removeprefix("/v1beta/batches/").partition(":")
            if action == "cancel":
                self.batches[batch_id]["canceled"] = True
                return _json({})
            return _json(self.gemini_state(batch_id))
        return Reply(
            status=404, body=b'{"error": {"message": "no such route"}}', headers={"content-type": "application/json"}
        )

    def asked_for(self, batch_id: str, cancel: bool, asked: bool) -> tuple[dict[str, Any], bool]:
        """A batch, asked for (or cancelled) once more; whether it has ended (the second ask)."""
        batch = self.batches[batch_id]
        batch["canceled"] |= cancel
        self.asked[batch_id] = self.asked.get(batch_id, 0) + asked
        return batch, self.asked[batch_id] >= 2

    # -- Anthropic ----------------------------------------------------------------------------

    def anthropic_create(self, request: dict[str, Any]) -> Reply:
        from anthropic.types.messages.batch_create_params import BatchCreateParams

        sdk_params.check(request["json"], BatchCreateParams)
        batch_id = "msgbatch_" + uuid.uuid4().hex[:12]
        self.batches[batch_id] = {"requests": request["json"]["requests"], "canceled": False}
        return _json(self.anthropic_state(batch_id, asked=False))

    def anthropic_state(self, batch_id: str, cancel: bool = False, asked: bool = True) -> dict[str, Any]:
        from anthropic.types.messages import MessageBatch

        batch, ended = self.asked_for(batch_id, cancel, asked)
        n = len(batch["requests"])
        counts = {"processing": 0 if ended else n, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if ended:
            failed = sum(_fails(r["params"]["messages"]) for r in batch["requests"])
            counts.update(succeeded=n - failed, errored=failed)
        status = "ended" if ended else "canceling" if batch["canceled"] else "in_progress"
        state = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": counts,
            "created_at": "2026-12-05T00:00:00Z",
            "expires_at": "2026-12-06T00:00:00Z",
            "results_url": f"{self.server.url}/v1/messages/batches/{batch_id}/results" if ended else None,
        }
        MessageBatch.model_validate(state)
        return state

    def anthropic_results(self, batch_id: str) -> str:
        from anthropic.types.messages import MessageBatchIndividualResponse

        lines = []
        for req in reversed(self.batches[batch_id]["requests"]):  # results come in any order
            if "LOSE" in json.dumps(req["params"]["messages"][-1]):
                continue  # a result the provider never wrote
            if _fails(req["params"]["messages"]):
                result: dict[str, Any] = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {
                            "type": "invalid_request_error",
                            "message": "prompt is too long: 250000 tokens > 200000 maximum",
                        },
                    },
                }
            else:
                text = f"answer to {req['custom_id']}"
                message = {
                    "id": "msg_" + uuid.uuid4().hex[:8],
                    "type": "message",
                    "role": "assistant",
                    "model": req["params"]["model"],
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1000, "output_tokens": 100},
                }
                result = {"type": "succeeded", "message": message}
            line = {"custom_id": req["custom_id"], "result": result}
            MessageBatchIndividualResponse.model_validate(line)
            lines.append(json.dumps(line))
        return "\n".join(lines) + "\n"

    # -- OpenAI -------------------------------------------------------------------------------

    def openai_create(self, request: dict[str, Any]) -> Reply:
        from openai.types.batch_create_params import BatchCreateParams

        sdk_params.check(request["json"], BatchCreateParams)
        lines = [json.loads(line) for line in self.files[request["json"]["input_file_id"]].decode().splitlines()]
        for line in lines:
            assert set(line) == {"custom_id", "method", "url", "body"} and line["url"] == request["json"]["endpoint"]
            sdk_params.chat_request(line["body"]) if line[
                "url"
            ] == "/v1/chat/completions" else sdk_params.responses_request(line["body"])
        batch_id = "batch_" + uuid.uuid4().hex[:12]
        self.batches[batch_id] = {"lines": lines, "create": request["json"], "canceled": False}
        return _json(self.openai_state(batch_id, asked=False))

    def openai_state(self, batch_id: str, cancel: bool = False, asked: bool = True) -> dict[str, Any]:
        from openai.types import Batch

        batch, ended = self.asked_for(batch_id, cancel, asked)
        state: dict[str, Any] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": batch["create"]["endpoint"],
            "input_file_id": batch["create"]["input_file_id"],
            "completion_window": "24h",
            "created_at": 1,
            "status": "completed" if ended else "cancelling" if batch["canceled"] else "in_progress",
        }
        if ended:
            good, bad = [], []
            for line in batch["lines"]:
                (bad if _fails(line["body"]["messages"]) else good).append(self.openai_line(line))
            state["output_file_id"], state["error_file_id"] = self._file(good), self._file(bad)
            state["request_counts"] = {"total": len(batch["lines"]), "completed": len(good), "failed": len(bad)}
        Batch.model_validate(state)
        return state

    def openai_line(self, line: dict[str, Any]) -> dict[str, Any]:
        from openai.types.chat import ChatCompletion

        if _fails(line["body"]["messages"]):
            body: dict[str, Any] = {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            }
            return {
                "id": "batch_req_" + uuid.uuid4().hex[:6],
                "custom_id": line["custom_id"],
                "response": {"status_code": 400, "request_id": "req_1", "body": body},
                "error": None,
            }
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": line["body"]["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"answer to {line['custom_id']}", "refusal": None},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
        }
        ChatCompletion.model_validate(body)
        return {
            "id": "batch_req_" + uuid.uuid4().hex[:6],
            "custom_id": line["custom_id"],
            "response": {"status_code": 200, "request_id": "req_1", "body": body},
            "error": None,
        }

    def _file(self, lines: list[dict[str, Any]]) -> str | None:
        if not lines:
            return None
        file_id = "file-" + uuid.uuid4().hex[:10]
        self.files[file_id] = ("\n".join(json.dumps(line) for line in reversed(lines)) + "\n").encode()
        return file_id


def _fails(messages: list[dict[str, Any]]) -> bool:
    return "FAIL" in json.dumps(messages[-1])


@pytest.fixture
def batches():
    with ProviderServer() as server:
        yield BatchServer(server)


MODELS = {
    "anthropic": ("anthropic:claude-sonnet-4-5", ""),
    "openai": ("openai:gpt-4.1", "/v1"),
    "gemini": ("google:gemini-2.5-flash", ""),
}


def _model(kind: str, url: str):
    spec, suffix = MODELS[kind]
    return load_model(spec, api_key="k", base_url=url + suffix)


@pytest.mark.parametrize("kind", list(MODELS))
def test_a_batch_of_mixed_results_comes_back_in_order_at_the_batch_price(kind, batches):
    model = _model(kind, batches.server.url)
    requests = [
        [UserMsg("me", "What is 2 + 2?")],
        {"messages": [UserMsg("me", "FAIL: far too long")], "options": {"max_tokens": 50}},
        {"messages": [UserMsg("me", "Name a colour.")], "options": {"max_tokens": 30}},
    ]

    async def run() -> tuple[Any, list[Any]]:
        batch = await model.batch(requests)
        assert not batch.state.ended
        state = await batch.wait(poll=0.01, deadline=5)
        return state, await batch.results()

    state, results = asyncio.run(run())
    assert state.ended and len(results) == 3
    first, failed, third = results
    assert isinstance(first, Msg) and first.get_text_content() == "answer to request-0"
    assert isinstance(third, Msg) and third.get_text_content() == "answer to request-2"
    assert isinstance(failed, ProviderError) and any(
        words in str(failed) for words in ("too long", "context length", "exceeds the maximum")
    )
    assert (first.usage.input_tokens, first.usage.output_tokens) == (1000, 100)
    from modelwire import cost

    if cost.available() and first.cost and first.cost.get("total") is not None:
        spec = MODELS[kind][0]
        full = cost.price(
            type(
                "U",
                (),
                {"input_tokens": 1000, "output_tokens": 100, "cache_input_tokens": 0, "cache_creation_input_tokens": 0},
            )(),
            provider=spec.split(":")[0],
            model=spec.split(":")[1],
        )
        assert full is not None and first.cost["total"] == pytest.approx(full["total"] * 0.5)


def test_an_openai_batch_sends_each_request_as_the_same_call_would():
    """The input file's lines are the bodies the same calls would send whole, for Chat and
    Responses alike (``stream`` left out), under the endpoint they go to."""
    with ProviderServer() as server:
        found = BatchServer(server)
        for spec in ("openai:gpt-4.1", "openai-responses:gpt-4.1"):
            model = load_model(spec, api_key="k", base_url=server.url + "/v1")
            asyncio.run(model.batch([[UserMsg("me", "Hello")]]))
            alone = model.build_request([UserMsg("me", "Hello")], None, None, {"stream": False})[0]
            created = list(found.batches.values())[-1]
            (line,) = created["lines"]
            assert line["body"] == {k: v for k, v in alone.items() if k != "stream"}
            assert line["url"] == created["create"]["endpoint"] == "/v1" + model.wire.path


@pytest.mark.parametrize("kind", list(MODELS))
def test_a_batch_is_found_again_by_id_and_cancelled(kind, batches):
    model = _model(kind, batches.server.url)

    async def run() -> tuple[str, str, str]:
        batch = await model.batch([[UserMsg("me", "Hi")]])
        again = await model.batch_by_id(batch.id)
        state = await again.cancel()
        return batch.id, again.id, state.status

    first, again, status = asyncio.run(run())
    assert first == again and status  # (the local server ends a batch the second time it is asked)
    assert batches.batches[first]["canceled"]


@pytest.mark.parametrize(
    "spec",
    [
        "vertex:gemini-2.5-pro",
        "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "ollama:qwen3:8b",
        "vertex-anthropic:claude-sonnet-4-5@20250929",
    ],
)
def test_a_provider_without_a_batch_api_refuses_before_sending(spec, monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    model = load_model(spec, api_key="k", capability_lookup=False)
    with pytest.raises(UnsupportedOptionError, match="batch"):
        asyncio.run(model.batch([[UserMsg("me", "Hi")]]))


def test_the_command_line_submits_says_where_it_stands_and_prints_the_results_in_order(batches, tmp_path):
    import os
    import subprocess
    import sys

    requests = tmp_path / "requests.jsonl"
    lines = [
        [UserMsg("me", "One?").to_dict()],
        {"messages": [UserMsg("me", "FAIL now").to_dict()]},
        [UserMsg("me", "Three?").to_dict()],
    ]
    requests.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "MODELWIRE_DEBUG"}
    env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=batches.server.url)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "modelwire", "batch", *args, "-m", "anthropic:claude-sonnet-4-5"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )

    submitted = cli("submit", str(requests))
    assert submitted.returncode == 0, submitted.stderr
    batch_id = submitted.stdout.strip()
    assert batch_id in batches.batches and "submitted 3 requests: in_progress" in submitted.stderr
    status = cli("status", batch_id)
    assert status.stdout.startswith(f"{batch_id}: in_progress") and "processing 3" in status.stdout
    results = cli("results", batch_id, "--wait", "0.01")
    assert results.returncode == 0, results.stderr
    first, failed, third = [json.loads(line) for line in results.stdout.splitlines()]
    assert first["content"][0]["text"] == "answer to request-0" and third["content"][0]["text"] == "answer to request-2"
    assert "prompt is too long" in failed["error"]["message"]


def test_a_submission_is_shaped_as_the_official_sdk_shapes_it():
    """The same one-message batch submitted by modelwire and by the provider's own SDK: the
    same envelope, the same per-request keys, the same conversation."""
    import anthropic
    from google import genai

    with ProviderServer() as server:
        BatchServer(server)
        for spec in ("anthropic:claude-sonnet-4-5", "google:gemini-2.5-flash"):
            asyncio.run(load_model(spec, api_key="k", base_url=server.url).batch([[UserMsg("me", "hi")]]))
        ours_anthropic, ours_gemini = [r["json"] for r in server.requests if r["method"] == "POST"]
        server.respond = lambda request: Reply(
            status=500,
            body=b'{"error": {"code": 500, "message": "x", "status": "INTERNAL"}}',
            headers={"content-type": "application/json"},
        )
        with pytest.raises(anthropic.InternalServerError):
            anthropic.Anthropic(api_key="k", base_url=server.url, max_retries=0).messages.batches.create(
                requests=[{"custom_id": "request-0", "params": ours_anthropic["requests"][0]["params"]}]
            )
        client = genai.Client(api_key="k", http_options={"base_url": server.url, "api_version": "v1beta"})
        with pytest.raises(Exception, match="500"):
            client.batches.create(
                model="gemini-2.5-flash",
                src=[{"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "metadata": {"key": "request-0"}}],
                config={"display_name": "modelwire"},
            )
        theirs_anthropic, theirs_gemini = [r["json"] for r in server.requests[-2:]]
    assert ours_anthropic == theirs_anthropic
    assert (
        set(ours_gemini["batch"]) == set(theirs_gemini["batch"])
        and ours_gemini["batch"]["displayName"] == theirs_gemini["batch"]["displayName"]
    )
    (ours,), (theirs,) = (
        ours_gemini["batch"]["inputConfig"]["requests"]["requests"],
        theirs_gemini["batch"]["inputConfig"]["requests"]["requests"],
    )
    assert (
        set(ours) == set(theirs)
        and ours["metadata"] == theirs["metadata"]
        and ours["request"]["contents"] == theirs["request"]["contents"]
    )


def test_a_request_the_results_leave_out_is_an_error_in_its_place_and_too_many_are_refused(batches):
    model = _model("anthropic", batches.server.url)

    async def run() -> list[Any]:
        batch = await model.batch([[UserMsg("me", "one")], [UserMsg("me", "LOSE this one")], [UserMsg("me", "three")]])
        await batch.wait(poll=0.01, deadline=5)
        again = await model.batch_by_id(batch.id)  # found again: the size comes from the provider's counts
        return [await batch.results(), await again.results()]

    for results in asyncio.run(run()):
        assert len(results) == 3 and isinstance(results[0], Msg) and isinstance(results[2], Msg)
        assert isinstance(results[1], ProviderError) and "holds no result for request 1" in str(results[1])
    from modelwire.errors import ConfigError

    sent = len(batches.server.requests)
    model.wire.batch_limit, kept = 2, model.wire.batch_limit
    try:
        with pytest.raises(ConfigError, match="at most 2 requests in one batch, not 3"):
            asyncio.run(model.batch([[UserMsg("me", "x")]] * 3))
    finally:
        model.wire.batch_limit = kept
    assert len(batches.server.requests) == sent


def _spoiled(lines: list[str]) -> list[str]:
    """The results with request 1's line cut in half, and three lines that name no request of
    the batch: an array, a custom_id that is not a number, and request 99 of a batch of 3."""
    kept = []
    for line in lines:
        custom_id = json.loads(line)["custom_id"]
        kept.append(line[: len(line) // 2] if custom_id == "request-1" else line)
    other = json.loads(kept[-1] if "request-1" not in kept[-1] else kept[0])
    kept += [
        json.dumps([other]),
        json.dumps({**other, "custom_id": "request-abc"}),
        json.dumps({**other, "custom_id": "request-99"}),
    ]
    return kept


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_malformed_results_line_is_its_requests_typed_error_and_the_rest_is_kept(kind, batches):
    from modelwire.errors import StreamProtocolError

    if kind == "anthropic":
        real = batches.anthropic_results
        batches.anthropic_results = lambda batch_id: "\n".join(_spoiled(real(batch_id).splitlines())) + "\n"
    model = _model(kind, batches.server.url)

    async def run() -> tuple[Any, list[Any]]:
        batch = await model.batch([[UserMsg("me", "one")], [UserMsg("me", "two")], [UserMsg("me", "three")]])
        await batch.wait(poll=0.01, deadline=5)
        if kind == "openai":  # the output file's bytes, spoiled as they are served
            (file_id,) = [f for f, raw in batches.files.items() if b'"response"' in raw]
            lines = batches.files[file_id].decode().splitlines()
            batches.files[file_id] = ("\n".join(_spoiled(lines)) + "\n").encode()
        return batch, await batch.results()

    batch, results = asyncio.run(run())
    assert len(results) == 3  # request-99 stretched nothing
    first, broken, third = results
    assert isinstance(first, Msg) and first.get_text_content() == "answer to request-0"
    assert isinstance(third, Msg) and third.get_text_content() == "answer to request-2"
    assert isinstance(broken, StreamProtocolError) and "is not JSON" in str(broken)
    said = [str(e) for e in batch.unplaced]
    assert len(said) == 3 and all(isinstance(e, StreamProtocolError) for e in batch.unplaced)
    assert any("request 99, which batch" in s for s in said)
    assert sum("no request it names" in s for s in said) == 2
