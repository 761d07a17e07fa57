"""Cassettes under faults: two writers, a reader during a write, damaged files, colliding
test names, pytest-recording's modes, and credentials a server echoed."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading

import pytest

from modelwire.cassettes import Cassette, use_cassette
from modelwire.errors import CassetteError, CassetteSecretError
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.testing import sse
from modelwire.testing.server import ProviderServer, Reply, sse_reply

pytest_plugins = ["pytester"]

WRITER = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from pathlib import Path
    from modelwire.cassettes import use_cassette
    from modelwire.message import UserMsg
    from modelwire.models import load_model

    path, url, who, gate = sys.argv[1:5]
    model = load_model("openai:gpt-test", api_key="sk-writer-000", base_url=url)
    with use_cassette(path, "once"):
        for n in range(3):
            asyncio.run(model.complete([UserMsg("u", f"{who} question {n}")]))
        Path(gate, who).touch()
        while len(os.listdir(gate)) < 2:  # both have recorded before either saves
            time.sleep(0.01)
    """
)


def test_two_processes_recording_into_one_file_lose_nothing(tmp_path):
    path, gate = tmp_path / "shared.json", tmp_path / "gate"
    gate.mkdir()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    with ProviderServer() as server:
        server.respond = lambda request: sse_reply(
            sse.body("openai-chat", ("text", request["json"]["messages"][-1]["content"] + " answered"))
        )
        procs = [
            subprocess.Popen([sys.executable, str(script), str(path), server.url + "/v1", who, str(gate)])
            for who in ("a", "b")
        ]
        assert [p.wait(timeout=60) for p in procs] == [0, 0]
    asked = sorted(i.request["json"]["messages"][-1]["content"] for i in Cassette.load(path).interactions)
    assert asked == sorted(f"{who} question {n}" for who in "ab" for n in range(3))


def test_recording_leaves_nothing_beside_the_cassettes(tmp_path):
    """The writers' lock is the folder's own: no ``.json.lock`` file is left next to each cassette."""
    with ProviderServer() as server:
        server.script(
            sse_reply(sse.body("openai-chat", ("text", "a"))), sse_reply(sse.body("openai-chat", ("text", "b")))
        )
        for name in ("one.json", "two.json"):
            with use_cassette(tmp_path / name, "once"):
                asyncio.run(
                    load_model("openai:gpt-test", api_key="k", base_url=server.url + "/v1").complete(
                        [UserMsg("u", name)]
                    )
                )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.json", "two.json"]


def test_a_reader_never_sees_half_a_file(tmp_path):
    path = tmp_path / "big.json"
    cassette = Cassette(path)
    for n in range(200):
        cassette.add(
            {"method": "POST", "url": f"https://x/{n}", "json": {"q": "x" * 2000}},
            {"status": 200, "body": "data: {}\n\n" * 50},
        )
    cassette.save()
    seen, broken, stop = [], [], threading.Event()

    def read():
        while not stop.is_set():
            try:
                seen.append(len(json.loads(path.read_text())["interactions"]))
            except ValueError as exc:
                broken.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(40):
        cassette.save()
    stop.set()
    reader.join()
    assert seen and not broken


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A real cassette (one streamed answer with its chunks) and the URL it was recorded at."""
    path = tmp_path_factory.mktemp("tape") / "good.json"
    with ProviderServer() as server:
        server.script(sse_reply(sse.body("openai-chat", ("text", "a recorded answer"))))
        with use_cassette(path, "once", timing=True):  # with the pieces' times, so chunks can be damaged too
            asyncio.run(
                load_model("openai:gpt-test", api_key="k", base_url=server.url + "/v1").complete([UserMsg("u", "hi")])
            )
        url = server.url + "/v1"
    data = json.loads(path.read_text())
    assert data["interactions"][0]["response"]["chunks"]
    return data, url


def _set(path, value):
    def change(data):
        target = data
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
        return data

    return change


I, REQ, RESP = ("interactions", 0), ("interactions", 0, "request"), ("interactions", 0, "response")
CORRUPTIONS = {
    "interactions not a list": _set(("interactions",), 7),
    "interactions a string": _set(("interactions",), "abc"),
    "notes a number": _set(("notes",), 3),
    "method a number": _set((*REQ, "method"), 1),
    "url a list": _set((*REQ, "url"), ["x"]),
    "request body a dict": _set((*REQ, "body"), {"a": 1}),
    "request headers a list": _set((*REQ, "headers"), ["a"]),
    "status a string": _set((*RESP, "status"), "200"),
    "status a boolean": _set((*RESP, "status"), True),
    "status out of range": _set((*RESP, "status"), 9999),
    "response headers of numbers": _set((*RESP, "headers"), {"content-type": 5}),
    "body a number": _set((*RESP, "body"), 5),
    "body_base64 not base64": _set((*RESP, "body_base64"), "@@@"),
    "body_base64 a number": _set((*RESP, "body_base64"), 12),
    "chunks a dict": _set((*RESP, "chunks"), {"a": 1}),
    "chunks of strings": _set((*RESP, "chunks"), [["0", "10"]]),
    "chunk length negative": _set((*RESP, "chunks"), [[0.0, -1]]),
    "interaction a list": _set(I, []),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_every_kind_of_damaged_cassette_is_a_cassette_error(tmp_path, recorded, name):
    import copy

    data, url = recorded
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(CORRUPTIONS[name](copy.deepcopy(data))))
    with pytest.raises(CassetteError) as caught:
        with use_cassette(path):  # the same call as recorded: it reaches the damaged fields
            asyncio.run(load_model("openai:gpt-test", api_key="k", base_url=url).complete([UserMsg("u", "hi")]))
    assert str(path) in str(caught.value) and "interaction" in str(caught.value) or "notes" in str(caught.value)


def test_the_undamaged_cassette_replays(tmp_path, recorded):
    data, url = recorded
    path = tmp_path / "good.json"
    path.write_text(json.dumps(data))
    with use_cassette(path):
        reply = asyncio.run(load_model("openai:gpt-test", api_key="k", base_url=url).complete([UserMsg("u", "hi")]))
    assert reply.get_text_content().strip() == "a recorded answer"


def test_tests_of_the_same_name_in_two_classes_and_two_folders_get_two_cassettes(pytester):
    with ProviderServer() as server:
        server.respond = lambda request: sse_reply(
            sse.body("openai-chat", ("text", "from " + request["json"]["messages"][-1]["content"]))
        )
        body = f"""
            import asyncio, pytest
            from modelwire.models import load_model
            from modelwire.message import UserMsg

            def ask(who):
                model = load_model("openai:gpt-test", api_key="sk-plugin-000", base_url="{server.url}/v1")
                return asyncio.run(model.complete([UserMsg("u", who)])).get_text_content()

            class TestA:
                @pytest.mark.cassette
                def test_x(self, request):
                    assert "from " + request.node.nodeid in ask(request.node.nodeid)

            class TestB:
                @pytest.mark.cassette
                def test_x(self, request):
                    assert "from " + request.node.nodeid in ask(request.node.nodeid)
            """
        for folder in ("one", "two"):
            pytester.mkpydir(folder)
            (pytester.path / folder / "test_same.py").write_text(textwrap.dedent(body))
        pytester.makeini("[pytest]\npython_files = test_*.py\n")
        pytester.runpytest("--record-mode=once", "-p", "no:cacheprovider").assert_outcomes(passed=4)
    tapes = sorted(
        p.relative_to(pytester.path / "cassettes").as_posix() for p in (pytester.path / "cassettes").rglob("*.json")
    )
    assert tapes == [
        "one/test_same/TestA/test_x.json",
        "one/test_same/TestB/test_x.json",
        "two/test_same/TestA/test_x.json",
        "two/test_same/TestB/test_x.json",
    ]
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=4)  # the server is gone: each replays its own


def test_pytest_recordings_rewrite_mode_records_anew(pytester):
    with ProviderServer() as server:
        answers = iter(["first answer", "second answer"])
        server.respond = lambda request: sse_reply(sse.body("openai-chat", ("text", next(answers))))
        pytester.makepyfile(
            test_rw=f"""
            import asyncio, pytest
            from modelwire.models import load_model
            from modelwire.message import UserMsg

            @pytest.mark.cassette
            def test_ask():
                model = load_model("openai:gpt-test", api_key="sk-plugin-000", base_url="{server.url}/v1")
                print("ANSWER", asyncio.run(model.complete([UserMsg("u", "hi")])).get_text_content())
            """
        )
        pytester.runpytest("--record-mode=once", "-p", "no:cacheprovider").assert_outcomes(passed=1)
        tape = pytester.path / "cassettes" / "test_rw" / "test_ask.json"
        assert "first" in tape.read_text()
        pytester.runpytest("--record-mode=rewrite", "-p", "no:cacheprovider").assert_outcomes(passed=1)
        assert "second" in tape.read_text() and "first" not in tape.read_text() and len(server.requests) == 2


def test_a_key_given_in_code_and_echoed_by_the_server_is_never_written(tmp_path):
    key = "sk-given-in-code-7777777"
    path = tmp_path / "echo.json"
    with ProviderServer() as server:
        server.respond = lambda request: sse_reply(
            sse.body("openai-chat", ("text", "your header was " + request["headers"]["authorization"]))
        )
        with pytest.raises(CassetteSecretError, match="credential"):
            with use_cassette(path, "once"):
                asyncio.run(
                    load_model("openai:gpt-test", api_key=key, base_url=server.url + "/v1").complete(
                        [UserMsg("u", "hi")]
                    )
                )
    assert not path.exists()


def test_aws_secrets_from_the_environment_are_never_written(tmp_path, monkeypatch):
    token = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN"
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    path = tmp_path / "aws.json"
    with ProviderServer() as server:
        server.script(
            Reply(
                body=json.dumps({"error": {"message": f"token {token} expired"}}).encode(),
                status=400,
                headers={"content-type": "application/json"},
            )
        )
        with pytest.raises(CassetteSecretError):
            with use_cassette(path, "once"):
                try:
                    asyncio.run(
                        load_model("openai:gpt-test", api_key="k", base_url=server.url + "/v1").complete(
                            [UserMsg("u", "hi")]
                        )
                    )
                except Exception:  # noqa: BLE001 - the 400 itself is not what is tested
                    pass
    assert not path.exists()


def test_the_signers_debug_log_never_shows_the_session_token(caplog):
    import logging

    from botocore.credentials import Credentials

    from modelwire.protocols.bedrock._credentials import AWSCredentials

    token = "FwoGZXIvYXdzEXAMPLETOKEN0123456789"
    signer = AWSCredentials(region="eu-west-1", credentials=Credentials("AKIDTEST", "secret/key", token))
    with caplog.at_level(logging.DEBUG, logger="botocore"):
        headers = signer.apply(
            "POST",
            "https://bedrock-runtime.eu-west-1.amazonaws.com/model/m/converse-stream",
            {"content-type": "application/json"},
            b"{}",
        )
    assert headers["x-amz-security-token"] == token  # still sent
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "CanonicalRequest" in logged and "x-amz-security-token:<redacted>" in logged
    assert token not in logged


def test_recording_an_unchanged_conversation_again_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "same.json"
    with ProviderServer() as server:
        server.respond = lambda request: Reply(
            body=sse.body("openai-chat", ("text", "one two three four five")),
            headers={"content-type": "text/event-stream"},
            delay=0.01,
        )
        texts = []
        for _ in range(2):
            with use_cassette(path, "all"):
                asyncio.run(
                    load_model("openai:gpt-test", api_key="sk-x", base_url=server.url + "/v1").complete(
                        [UserMsg("u", "hi")]
                    )
                )
            texts.append(path.read_text())
    assert texts[0] == texts[1] and '"chunks"' not in texts[0]  # no timings unless asked (timing=True)


def test_a_failing_cassette_test_is_reported_once(pytester):
    pytester.makepyfile(
        test_once="""
        import asyncio, pytest
        from modelwire.models import load_model
        from modelwire.message import UserMsg

        @pytest.mark.cassette("tape.json")
        def test_ask():
            model = load_model("openai:gpt-test", api_key="sk-x", base_url="http://127.0.0.1:9/v1")
            asyncio.run(model.complete([UserMsg("u", "something never recorded")]))
        """
    )
    (pytester.path / "tape.json").write_text(
        json.dumps(
            {
                "version": 1,
                "interactions": [
                    {
                        "request": {
                            "method": "POST",
                            "url": "http://127.0.0.1:9/v1/chat/completions",
                            "json": {"x": 1},
                        },
                        "response": {"status": 200, "body": ""},
                    }
                ],
            }
        )
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, errors=0)


def test_cassettes_recorded_from_several_threads_at_once_write_each_interaction_once(tmp_path):
    """Eight threads, each with its own cassette, open them at the same moment: the HTTP
    client is patched once, every cassette holds its own two interactions once, and each
    replays strictly (no unused interaction)."""
    import threading

    from modelwire.cassettes import _hook

    n = 8
    gate = threading.Barrier(n)
    errors: list[BaseException] = []
    with ProviderServer() as server:
        server.respond = lambda request: sse_reply(sse.body("openai-chat", ("text", "answer")))
        url = server.url + "/v1"

        def record(k: int) -> None:
            try:
                model = load_model("openai:gpt-test", api_key="k", base_url=url)
                gate.wait()
                with use_cassette(tmp_path / f"t{k}.json", "once"):
                    for q in range(2):
                        asyncio.run(model.complete([UserMsg("u", f"thread {k} question {q}")]))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=record, args=(k,)) for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(server.requests) == 2 * n
    assert not _hook._ORIGINALS and _hook._USERS == 0  # every patch undone
    for k in range(n):
        data = json.loads((tmp_path / f"t{k}.json").read_text())
        asked = [i["request"]["json"]["messages"][0]["content"] for i in data["interactions"]]
        assert asked == [f"thread {k} question 0", f"thread {k} question 1"]
        with use_cassette(tmp_path / f"t{k}.json", "none"):  # strict: all played, none twice
            for q in range(2):
                asyncio.run(
                    load_model("openai:gpt-test", api_key="k", base_url=url).complete(
                        [UserMsg("u", f"thread {k} question {q}")]
                    )
                )


def test_a_cassette_nested_too_deeply_is_a_cassette_error_in_the_api_and_the_cli(tmp_path):
    import os
    import subprocess
    import sys

    from modelwire.cassettes import Cassette, import_vcr

    path = tmp_path / "deep.json"
    path.write_text('{"version": 1, "interactions": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(CassetteError, match="nested too deeply"):
        Cassette.load(path)
    with pytest.raises(CassetteError, match="nested too deeply"):
        with use_cassette(path):
            pass
    env = {**os.environ, "MODELWIRE_DEBUG": "0"}  # as a user runs it: one line, no traceback
    shown = subprocess.run(
        [sys.executable, "-m", "modelwire.cli", "cassette", "show", str(path)], capture_output=True, text=True, env=env
    )
    assert shown.returncode == 2 and "nested too deeply" in shown.stderr and "Traceback" not in shown.stderr
    yaml_path = tmp_path / "deep.yaml"
    yaml_path.write_text("interactions: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(CassetteError, match="nested too deeply"):
        import_vcr(yaml_path)
