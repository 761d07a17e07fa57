"""The command line, run as a user runs it: a real subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

import pytest

from modelwire import event as E
from modelwire.message import Msg

from paths import ROOT  # noqa: E402


def user_env(**extra: str) -> dict[str, str]:
    """The environment a person has: no MODELWIRE_DEBUG (the tests set it for themselves)."""
    env = {k: v for k, v in os.environ.items() if k != "MODELWIRE_DEBUG"}
    env.update(extra)
    return env


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "modelwire.cli", *args], input=stdin, capture_output=True, timeout=60, env=user_env()
    )


def test_demo_streams_a_tool_call_and_an_answer():
    out = run("demo")
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert "REPLAY" in text and "no API key" in text  # it says plainly what it is
    assert '-> calculate({"expression": "(1234 * 5678) + 42"})' in text
    assert "<- calculate [success] 7006694" in text  # the real tool's result
    assert "(1234 × 5678) + 42 = 7,006,694." in text
    assert "[completed | stop: end_turn | tokens in 950" in text
    assert "modelwire chat --model anthropic:claude-sonnet-4-5" in text  # how to run it for real
    assert not [line for line in text.splitlines() if line != line.rstrip()]  # no line ends in a space


def test_the_demos_closing_command_runs_the_same_agent_for_real():
    """The command the demo suggests, run as printed (against a local server standing in for
    the provider), sends the calculator tool: without --tool it would ask without one."""
    import shlex

    from modelwire.testing import ProviderServer, sse, sse_reply

    hint = [line for line in run("demo").stdout.decode().splitlines() if line.strip().startswith("modelwire chat")]
    assert len(hint) == 1
    with ProviderServer() as server:
        server.script(sse_reply(sse.body("anthropic", ("text", "7,006,694."), usage=(10, 5))))
        args = shlex.split(hint[0])[1:]
        out = run_env(*args, env_extra={"ANTHROPIC_API_KEY": "sk-x", "ANTHROPIC_BASE_URL": server.url})
        assert out.returncode == 0, out.stderr
        assert [t["name"] for t in server.requests[0]["json"]["tools"]] == ["calculate"]


def test_demo_events_and_json():
    events_out = run("demo", "--events")
    lines = events_out.stdout.decode().splitlines()
    assert (
        lines[0] == "[00] REPLY_START"
        and lines[-1].startswith("[")
        and "REPLY_END" in lines[-1]
        and "finished_reason='completed'" in lines[-1]
    )
    assert any("TOOL_CALL_START" in line and "tool_call_name='calculate'" in line for line in lines)
    json_out = run("demo", "--json")
    events = E.loads_jsonl(json_out.stdout)
    assert E.check_stream(events) == len(events)
    assert b"REPLAY" in json_out.stderr and b"REPLAY" not in json_out.stdout


@pytest.mark.skipif(not ROOT.is_dir(), reason="../shared/recorded-streams is not present")
def test_decode_prints_the_rebuilt_message():
    path = ROOT / "anthropic-sdk-python" / "tool_use_response.txt"
    out = run("decode", "--protocol", "anthropic", str(path))
    assert out.returncode == 0, out.stderr
    msg = Msg.from_dict(json.loads(out.stdout))
    assert msg.role == "assistant" and msg.finished_reason == "completed"
    text, call = msg.content
    assert text.text == "I'll check the current weather in Paris for you."
    assert (call.name, json.loads(call.input)) == ("get_weather", {"location": "Paris"})
    assert msg.usage.input_tokens == 377


@pytest.mark.skipif(not ROOT.is_dir(), reason="../shared/recorded-streams is not present")
def test_decode_events_from_stdin_are_a_valid_stream():
    body = (
        ROOT / "openai-python" / "f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin"
    ).read_bytes()
    out = run("decode", "--protocol", "openai-chat", "--events", "-", stdin=body)
    assert out.returncode == 0, out.stderr
    events = E.loads_jsonl(out.stdout)
    assert E.check_stream(events) == len(events)
    assert [e.tool_call_name for e in events if e.type == "TOOL_CALL_START"] == ["GetWeatherArgs", "get_stock_price"]


def test_decode_of_a_broken_stream_prints_what_it_could_and_fails():
    body = (
        b'data: {"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1}}}\n\n'
        b'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Par"}}\n\n'
        b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tial"}}\n\n'
        b"data: {broken\n\n"
    )
    out = run("decode", "--protocol", "anthropic", "-", stdin=body)
    assert out.returncode == 1
    msg = Msg.from_dict(json.loads(out.stdout))
    assert msg.get_text_content() == "Partial" and msg.finished_reason == "error"
    assert msg.error.type == "upstream"
    assert b"StreamProtocolError" in out.stderr and b"invalid JSON" in out.stderr


def test_decode_with_the_wrong_protocol_names_the_right_one():
    body = sse.body("anthropic", ("text", "Hello."))
    out = run("decode", "--protocol", "openai-chat", "-", stdin=body)
    assert out.returncode == 1
    assert b"this looks like the stream of another protocol, anthropic: use --protocol anthropic" in out.stderr


def test_decode_usage_errors():
    assert run("decode", "--protocol", "nope", "-").returncode == 2
    missing = run("decode", "--protocol", "anthropic", "/nonexistent/file.sse")
    assert missing.returncode == 2 and b"cannot read" in missing.stderr


def test_format_prints_the_payload(tmp_path):
    from modelwire.message import AssistantMsg, ToolCallBlock, ToolResultBlock, UserMsg

    conv = [
        UserMsg("u", "Weather?"),
        AssistantMsg(
            "a",
            [
                ToolCallBlock(id="c1", name="get_weather", input='{"city": "Oslo"}'),
                ToolResultBlock(id="c1", name="get_weather", output="snow", state="success"),
            ],
        ),
    ]
    msgs = tmp_path / "conv.json"
    msgs.write_text(json.dumps([m.to_dict() for m in conv]))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "get_weather", "description": "w", "parameters": {"type": "object"}}]))
    out = run("format", "--protocol", "anthropic", "--tools", str(tools), "--tool-choice", "auto", str(msgs))
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Oslo"}}
    ]
    assert payload["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "c1", "content": "snow"}]
    assert payload["tool_choice"] == {"type": "auto"}
    chat = json.loads(run("format", "--protocol", "openai-chat", "-", stdin=msgs.read_bytes()).stdout)
    assert chat["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": "snow"}


def test_format_errors_name_the_message(tmp_path):
    from modelwire.message import AssistantMsg, ToolResultBlock, UserMsg

    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            [
                UserMsg("u", "x").to_dict(),
                AssistantMsg("a", [ToolResultBlock(id="ghost", name="f", output="", state="success")]).to_dict(),
            ]
        )
    )
    out = run("format", "--protocol", "openai-responses", str(bad))
    assert out.returncode == 2 and b"message [1]" in out.stderr and b"ghost" in out.stderr
    notjson = tmp_path / "x.json"
    notjson.write_text("{")
    assert b"is not JSON" in run("format", "--protocol", "anthropic", str(notjson)).stderr


# -- chat and models, against the local provider server -------------------------------------------


import pty  # noqa: E402
import select  # noqa: E402
import time  # noqa: E402

from modelwire.testing import sse  # noqa: E402
from modelwire.testing.server import ProviderServer, sse_reply  # noqa: E402


def run_env(*args, env_extra=None, stdin=None):
    env = user_env(**(env_extra or {}))
    return subprocess.run(
        [sys.executable, "-m", "modelwire.cli", *args], input=stdin, capture_output=True, timeout=60, env=env
    )


def test_chat_one_shot_renders_tool_calls_usage_and_first_token_time():
    with ProviderServer() as server:
        server.script(
            sse_reply(
                sse.body(
                    "openai-chat",
                    ("think", "Need to compute."),
                    ("tool", "call_1", "calculate", '{"expression": "6 * 7"}'),
                    usage=(100, 20),
                )
            ),
            sse_reply(sse.body("openai-chat", ("text", "It is 42."), usage=(130, 5))),
        )
        out = run_env(
            "chat",
            "--model",
            "deepseek:deepseek-chat",
            "--base-url",
            server.url + "/v1",
            "--tool",
            "modelwire.demo:calculate",
            "What is 6 * 7?",
            env_extra={"DEEPSEEK_API_KEY": "sk-x"},
        )
        assert out.returncode == 0, out.stderr
        text, side = out.stdout.decode(), out.stderr.decode()
        # Piped, stdout holds the answer only; thinking and tool lines go to stderr.
        assert text.strip() == "It is 42."
        assert "thinking: Need to compute." in side
        assert '-> calculate({"expression": "6 * 7"})' in side and "<- calculate [success] 42" in side
        assert (
            "[completed | stop: end_turn | tokens in 230 (cache read 0, cache write 0) out 25 | first token "
            in out.stderr.decode()
        )  # stats on stderr
        assert '"content": "42"' in json.dumps(server.requests[1]["json"]) or "42" in json.dumps(
            server.requests[1]["json"]["messages"][-1]
        )


def test_chat_thinking_and_effort_flags_reach_the_request_for_that_model():
    with ProviderServer() as server:
        server.script(sse_reply(sse.body("anthropic", ("think", "Summarized thinking."), ("text", "Four."))))
        base = ["chat", "--model", "anthropic:claude-opus-4-7", "--base-url", server.url]
        out = run_env(*base, "--thinking", "--effort", "xhigh", "2+2?", env_extra={"ANTHROPIC_API_KEY": "sk-x"})
        assert out.returncode == 0, out.stderr
        sent = server.requests[0]["json"]
        # Opus 4.7 omits its thinking unless asked: the CLI asks for it summarized, and shows it.
        assert sent["thinking"] == {"type": "adaptive", "display": "summarized"} and sent["output_config"] == {
            "effort": "xhigh"
        }
        assert "thinking: Summarized thinking." in out.stderr.decode() and out.stdout.decode().strip() == "Four."
        refused = run_env(*base, "--effort", "minimal", "2+2?", env_extra={"ANTHROPIC_API_KEY": "sk-x"})
        assert refused.returncode != 0 and "'minimal' is not a level the model has" in refused.stderr.decode()
        assert len(server.requests) == 1  # refused before sending


def test_models_capabilities_shows_each_field_and_its_source():
    out = run("models", "--capabilities", "bedrock:global.anthropic.claude-opus-4-7")
    assert out.returncode == 0, out.stderr
    lines = {
        line.split()[0]: line
        for line in out.stdout.decode().splitlines()[1:]
        if line.strip() and not line.startswith("not known")
    }
    assert "adaptive" in lines["thinking"] and "table: Claude Opus 4.8, Opus 4.7" in lines["thinking"]
    assert "low, medium, high, xhigh, max" in lines["effort"] and "false" in lines["sampling"]
    assert "not known" in lines["thinking_off"]


def test_chat_events_and_json_and_hidden_thinking():
    with ProviderServer() as server:
        for _ in range(3):
            server.script(sse_reply(sse.body("openai-chat", ("think", "Hmm hmm."), ("text", "Hi there."))))
        base = ["chat", "--model", "openai:gpt-test", "--base-url", server.url + "/v1"]
        env = {"OPENAI_API_KEY": "sk-x"}
        events = run_env(*base, "--events", "hello", env_extra=env).stdout.decode().splitlines()
        assert (
            events[0] == "[00] REPLY_START"
            and "TEXT_BLOCK_DELTA" in events[-6]
            or any("TEXT_BLOCK_DELTA" in line for line in events)
        )
        as_json = E.loads_jsonl(run_env(*base, "--json", "hello", env_extra=env).stdout)
        assert E.check_stream(as_json) == len(as_json)
        hidden = run_env(*base, "--no-show-thinking", "hello", env_extra=env)
        side = hidden.stderr.decode()
        assert "(thought for 8 characters" in side and "Hmm hmm." not in side + hidden.stdout.decode()
        assert hidden.stdout.decode().strip() == "Hi there."


def test_chat_without_a_model_says_what_to_set(tmp_path):
    env = {k: v for k, v in user_env().items() if k != "MODELWIRE_MODEL"}
    out = subprocess.run(
        [sys.executable, "-m", "modelwire.cli", "chat", "hi"], capture_output=True, timeout=60, env=env, cwd=tmp_path
    )
    assert out.returncode == 2 and b"MODELWIRE_MODEL" in out.stderr


def test_models_lists_presets_and_whether_their_key_is_set():
    out = run_env("models", env_extra={"GROQ_API_KEY": "g", "OPENAI_API_KEY": ""})
    table = out.stdout.decode().split("\n\n")[0].splitlines()[1:]
    lines = {line.split()[0]: line for line in table if line.strip()}
    assert "GROQ_API_KEY" in lines["groq"] and " yes " in lines["groq"]
    assert " no " in lines["openai"] and "optional" in lines["ollama"]
    from modelwire.models import all_presets

    assert set(lines) == set(all_presets())


def _read_until(fd, needle: bytes, timeout: float = 60.0) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    while needle not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out waiting for {needle!r}; got {buf[-500:]!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


@contextlib.contextmanager
def _on_a_terminal(args: list[str], env: dict[str, str]):
    """``modelwire ARGS`` on a real terminal (a pty): its pid and the terminal's fd; killed and
    closed on the way out."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI on a real terminal
        os.execvpe(sys.executable, [sys.executable, "-m", "modelwire.cli", *args], env)
    try:
        yield pid, fd
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.close(fd)


def test_interactive_chat_ctrl_c_stops_the_reply_not_the_program():
    words = " ".join(f"w{i}" for i in range(300))
    with ProviderServer() as server:
        server.script(
            sse_reply(sse.body("openai-chat", ("text", words)), delay=0.02),
            sse_reply(sse.body("openai-chat", ("text", "Second answer."))),
        )
        env = {**os.environ, "OPENAI_API_KEY": "sk-x", "PYTHONUNBUFFERED": "1"}
        with _on_a_terminal(["chat", "--model", "openai:gpt-test", "--base-url", server.url + "/v1"], env) as (pid, fd):
            _read_until(fd, b"you> ")
            os.write(fd, b"talk a lot\n")
            _read_until(fd, b"w20 ")
            os.write(fd, b"\x03")  # Ctrl-C, as the terminal sends it
            after = _read_until(fd, b"you> ")
            assert b"[interrupted" in after
            assert b"w299" not in after
            os.write(fd, b"and now?\n")
            assert b"Second answer." in _read_until(fd, b"you> ")
            os.write(fd, b"exit\n")
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
        # the second request carried the interrupted first reply
        assert len(server.requests) == 2 and "w3" in json.dumps(server.requests[1]["json"]["messages"])


def test_serve_without_the_key_serves_the_demo_and_says_why():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in user_env().items() if not k.endswith("_API_KEY")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelwire.cli", "serve", "-m", "anthropic:claude-sonnet-4-5", "--port", str(port)],
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        config = _served_config(port, proc)
    finally:
        proc.terminate()
        err = proc.communicate(timeout=10)[1].decode()
    assert "the demo replay (ANTHROPIC_API_KEY is not set for anthropic:claude-sonnet-4-5)" in err
    assert config["model"] == "demo replay" and "ANTHROPIC_API_KEY is not set" in config["banner"]


def test_serve_with_an_unknown_model_fails_at_once_in_one_line():
    out = run("serve", "-m", "nosuchprovider:x", "--port", "1")
    assert out.returncode == 2 and out.stderr.decode().count("\n") == 1 and "nosuchprovider" in out.stderr.decode()


def test_chat_sends_no_tool_and_no_system_prompt_unless_asked():
    with ProviderServer() as server:
        server.script(
            sse_reply(sse.body("openai-chat", ("text", "Hi."))), sse_reply(sse.body("openai-chat", ("text", "Hi.")))
        )
        base = ["chat", "--model", "openai:gpt-test", "--base-url", server.url + "/v1"]
        plain = run_env(*base, "hello", env_extra={"OPENAI_API_KEY": "sk-x"})
        chosen = run_env(
            *base,
            "--tool",
            "modelwire.demo:calculate",
            "--system",
            "Be terse.",
            "hello",
            env_extra={"OPENAI_API_KEY": "sk-x"},
        )
        bad = run_env(*base, "--tool", "nosuchmodule:f", "hello", env_extra={"OPENAI_API_KEY": "sk-x"})
    assert plain.returncode == 0 and chosen.returncode == 0, plain.stderr + chosen.stderr
    first, second = (r["json"] for r in server.requests)
    assert "tools" not in first and [m["role"] for m in first["messages"]] == ["user"]
    assert [t["function"]["name"] for t in second["tools"]] == ["calculate"] and second["messages"][0] == {
        "role": "system",
        "content": "Be terse.",
    }
    assert bad.returncode == 2 and b"--tool nosuchmodule:f" in bad.stderr


def test_piped_text_and_a_prompt_are_sent_together():
    with ProviderServer() as server:
        server.script(sse_reply(sse.body("openai-chat", ("text", "A summary."))))
        env = {**os.environ, "OPENAI_API_KEY": "sk-x"}
        env.pop("MODELWIRE_DEBUG", None)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "modelwire.cli",
                "chat",
                "--model",
                "openai:gpt-test",
                "--base-url",
                server.url + "/v1",
                "Summarize this.",
            ],
            input=b"The long text.",
            capture_output=True,
            env=env,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    (message,) = server.requests[0]["json"]["messages"]
    assert (
        message["content"] == "The long text.\n\nSummarize this."
        or message["content"][0]["text"] == "The long text.\n\nSummarize this."
    )
    assert done.stdout.decode().strip() == "A summary."


def test_models_columns_line_up_whatever_their_width():
    out = run_env("models", env_extra={"BEDROCK_BASE_URL": "https://bedrock.example/a/rather/long/base/url"})
    lines = [line for line in out.stdout.decode().split("\n\n")[0].splitlines() if line.strip()]
    header = lines[0]
    starts = [header.index(name) for name in ("protocol", "key variable", "set?", "example model string", "base URL")]
    for line in lines[1:]:
        for start in starts:
            assert line[start - 2 : start] == "  " and line[start] != " ", line  # every cell begins under its heading


def test_global_flags_work_after_the_subcommand():
    out = run_env("chat", "-m", "nosuchprovider:x", "hi", "--debug")
    assert "did you mean --debug" not in out.stderr.decode()
    assert b"Traceback" in out.stderr  # --debug took effect: the traceback is shown


def test_serve_on_a_port_in_use_says_so_before_any_banner():
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        out = run_env("serve", "--port", str(port))
    err = out.stderr.decode()
    assert (
        out.returncode == 2
        and f"cannot listen on 127.0.0.1:{port}" in err
        and "serving" not in err
        and "on http://" not in err
    )


@pytest.mark.parametrize("view", [[], ["--events"], ["--json"]])
def test_piping_into_head_ends_quietly(view):
    """``modelwire chat ... | head -1``: the reader goes away mid-answer; the stream and its
    HTTP response are closed in the loop (not at exit, where closing them printed a
    traceback), and nothing reaches stderr."""
    text = "\n".join(f"line {i} " + "x" * 80 for i in range(3000))
    with ProviderServer() as server:
        server.respond = lambda request: sse_reply(sse.body("anthropic", ("text", text)))
        env = user_env(
            ANTHROPIC_API_KEY="k",
            ANTHROPIC_BASE_URL=server.url,
            PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
        )
        flags = " ".join(view)
        done = subprocess.run(
            [
                "bash",
                "-c",
                (
                    f"set -o pipefail; {sys.executable} -m modelwire.cli chat -m anthropic:claude-sonnet-4-5 "
                    f"{flags} hi | head -1"
                ),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    assert done.stdout.strip() and len(done.stdout.splitlines()) == 1
    assert done.stderr == "", done.stderr[-3000:]


def test_chat_with_an_mcp_server_calls_its_tools():
    pytest.importorskip("mcp")
    from pathlib import Path

    server_script = Path(__file__).parent / "servers" / "mcp_tools.py"
    with ProviderServer() as server:
        server.script(
            sse_reply(sse.body("anthropic", ("tool", "toolu_1", "add", '{"a": 2, "b": 3}'))),
            sse_reply(sse.body("anthropic", ("text", "It is 5."))),
        )
        env = user_env(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "modelwire.cli",
                "chat",
                "-m",
                "anthropic:claude-sonnet-4-5",
                "--mcp",
                f"{sys.executable} {server_script}",
                "What is 2 + 3?",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0 and len(server.requests) == 2, done.stderr[-3000:]
        first, second = (r["json"] for r in server.requests)
    assert "add" in [t["name"] for t in first["tools"]]
    results = [
        c for m in second["messages"] for c in m["content"] if isinstance(c, dict) and c.get("type") == "tool_result"
    ]
    assert results and "5" in json.dumps(results[0]["content"])
    assert done.stdout.strip() == "It is 5."


def test_a_tool_from_the_users_own_folder_runs_and_python_dash_m_modelwire_works(tmp_path):
    """``--tool mytools:shout`` imports from the folder the command runs in (the README's
    ``--tool mytools:search`` example), as ``python -m`` would; ``python -m modelwire`` is the
    command itself."""
    (tmp_path / "mytools.py").write_text(
        'def shout(text: str) -> str:\n    """Upper-case a text."""\n    return text.upper() + "!"\n'
    )
    with ProviderServer() as server:
        server.script(
            sse_reply(sse.body("openai-chat", ("tool", "call_1", "shout", '{"text": "hi"}'))),
            sse_reply(sse.body("openai-chat", ("text", "Done."))),
        )
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MODELWIRE_DEBUG")}
        env["OPENAI_API_KEY"] = "sk-x"
        cmd = [
            sys.executable,
            "-m",
            "modelwire",
            "chat",
            "--model",
            "openai:gpt-test",
            "--base-url",
            server.url + "/v1",
            "--tool",
            "mytools:shout",
            "Shout hi.",
        ]
        done = subprocess.run(cmd, capture_output=True, env=env, timeout=60, cwd=tmp_path)
        second = server.requests[-1]["json"] if len(server.requests) == 2 else None
    assert done.returncode == 0, done.stderr
    assert second is not None and "HI!" in json.dumps(second["messages"])


def _one_shot_on_a_terminal(server, env_extra: dict) -> bytes:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update({"OPENAI_API_KEY": "sk-x", "PYTHONUNBUFFERED": "1", **env_extra})
    with _on_a_terminal(["chat", "--model", "openai:gpt-test", "--base-url", server.url + "/v1", "hello"], env) as (
        pid,
        fd,
    ):
        out = _read_until(fd, b"first token")
        out += _read_until(fd, b"\n")
        os.waitpid(pid, 0)
    return out


def test_no_color_turns_off_every_style_on_a_terminal():
    """https://no-color.org: with ``NO_COLOR`` set, a terminal gets no escape sequence at
    all (the thinking is not dimmed, the waiting mark not styled); without it, it does."""
    with ProviderServer() as server:
        for _ in range(2):
            server.script(sse_reply(sse.body("openai-chat", ("think", "Hmm."), ("text", "Hi there."))))
        styled = _one_shot_on_a_terminal(server, {})
        plain = _one_shot_on_a_terminal(server, {"NO_COLOR": "1"})
    assert b"\x1b[" in styled
    assert b"Hi there." in plain and b"Hmm." in plain and b"\x1b[" not in plain


def test_help_says_no_default_it_does_not_have():
    out = run("chat", "--help")
    assert out.returncode == 0 and b"(default: None)" not in out.stdout and b"(default: False)" not in out.stdout


def test_every_provider_takes_its_base_url_from_its_variable_and_a_bad_one_is_one_line():
    """``chat --help`` promises ``<PROVIDER>_BASE_URL``: ``DEEPSEEK_BASE_URL`` is honoured (it
    was ignored); a base URL that is no URL and a port that is no port are each one line with
    exit status 2, not a connection failure or an "unexpected OverflowError"."""
    with ProviderServer() as server:
        server.script(sse_reply(sse.body("openai-chat", ("text", "Hi from the local server."))))
        out = run_env(
            "chat",
            "--model",
            "deepseek:deepseek-chat",
            "hello",
            env_extra={"DEEPSEEK_API_KEY": "sk-x", "DEEPSEEK_BASE_URL": server.url},
        )
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode().strip() == "Hi from the local server." and len(server.requests) == 1
    bad_url = run_env(
        "chat", "--model", "openai:gpt-4.1", "--base-url", "not-a-url", "hello", env_extra={"OPENAI_API_KEY": "sk-x"}
    )
    assert (
        bad_url.returncode == 2
        and "not an http(s) URL" in bad_url.stderr.decode()
        and bad_url.stderr.decode().count("\n") == 1
    )
    bad_port = run_env("serve", "--port", "99999")
    assert (
        bad_port.returncode == 2
        and "99999 is not a port" in bad_port.stderr.decode()
        and "OverflowError" not in bad_port.stderr.decode()
    )


def test_an_option_of_another_command_is_said_so_not_suggested_as_itself():
    out = run("check", "x.json", "--model", "anthropic:claude-sonnet-4-5", "--base-url", "http://127.0.0.1:9")
    err = out.stderr.decode()
    assert (
        out.returncode == 2
        and "did you mean --base-url" not in err
        and "--base-url is an option of" in err
        and "chat" in err
    )


def test_chat_asks_a_model_that_thinks_unasked_to_show_its_thinking():
    """Opus 5 and Sonnet 5 think when not asked, with the display omitted, so their thinking
    arrived empty: the chat, which shows thinking, asks it summarized; with
    ``--no-show-thinking`` it asks nothing."""
    with ProviderServer() as server:
        for _ in range(2):
            server.script(sse_reply(sse.body("anthropic", ("think", "Pondering."), ("text", "Hi."))))
        base = ["chat", "--model", "anthropic:claude-sonnet-5", "--base-url", server.url]
        shown = run_env(*base, "hello", env_extra={"ANTHROPIC_API_KEY": "sk-x"})
        hidden = run_env(*base, "--no-show-thinking", "hello", env_extra={"ANTHROPIC_API_KEY": "sk-x"})
    assert shown.returncode == 0 and hidden.returncode == 0, shown.stderr + hidden.stderr
    first, second = (r["json"] for r in server.requests)
    assert first["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert "thinking" not in second


def test_modelwire_serve_sizes_its_provider_pool_for_a_server(monkeypatch):
    """One connection per streaming reply: `serve` opens up to --max-connections (1000 by
    default) where load_model's 20 suit a script; past 20 replies waited for a connection and
    failed after the pool timeout (benchmarks/serve_scale.py at 1,000 streams)."""
    from modelwire.cli import _serve_app, build_parser

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    pools = []
    for extra in ([], ["--max-connections", "7"]):
        args = build_parser().parse_args(["serve", "-m", "anthropic:claude-sonnet-4-5", *extra])
        app, _ = _serve_app(args)
        pools.append(app.make_agent().model.transport._max_connections)
    assert pools == [1000, 7]


@pytest.mark.parametrize("name", ['x]\nmodel = "openai:evil"\n[profiles.y', "a b", "bad.name", "", "é"])
def test_write_profile_refuses_a_name_that_is_not_a_bare_toml_key_before_any_request(tmp_path, name):
    from modelwire.conform import profile_toml
    from modelwire.errors import ConfigError
    from modelwire.testing import ProviderServer

    config = tmp_path / "modelwire.toml"
    config.write_text('[profiles.mine]\nmodel = "anthropic:claude-sonnet-4-5"\n')
    with ProviderServer() as server:
        out = subprocess.run(
            [sys.executable, "-m", "modelwire.cli", "conform", "--base-url", server.url + "/v1", "-m", "m"]
            + ["--write-profile", name, "--file", str(config)],
            capture_output=True,
            timeout=60,
            env=user_env(),
        )
        asked = len(server.requests)
    err = out.stderr.decode()
    assert out.returncode == 2 and err.count("\n") == 1, err
    assert "A-Z" in err and "0-9" in err and "'-' and '_'" in err
    assert asked == 0 and config.read_text() == '[profiles.mine]\nmodel = "anthropic:claude-sonnet-4-5"\n'
    with pytest.raises(ConfigError, match="cannot name a profile"):
        profile_toml(name, {"model": "openai-compatible:m"})


def test_a_good_profile_name_is_written_as_it_is():
    import tomllib

    from modelwire.conform import profile_toml

    assert tomllib.loads(profile_toml("my-server_2", {"model": "openai-compatible:m"})) == {
        "profiles": {"my-server_2": {"model": "openai-compatible:m"}}
    }


SERVE_TOKEN = "serve-token-0123456789-abcdef"


@pytest.mark.parametrize("form", ["variable", "file", "flag"])
def test_serve_takes_its_token_from_the_environment_or_a_file_and_never_prints_it(tmp_path, form):
    import socket

    import httpx2 as httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in user_env().items() if not k.endswith("_API_KEY") and k != "MODELWIRE_SERVE_TOKEN"}
    args = ["serve", "--port", str(port)]
    if form == "variable":
        env["MODELWIRE_SERVE_TOKEN"] = SERVE_TOKEN
    elif form == "file":
        (tmp_path / "token").write_text(SERVE_TOKEN + "\n")
        args += ["--token-file", str(tmp_path / "token")]
    else:
        args += ["--token", SERVE_TOKEN]
    proc = subprocess.Popen([sys.executable, "-m", "modelwire.cli", *args], stderr=subprocess.PIPE, env=env)
    try:
        config = _served_config(port, proc)
        turn = {"messages": [{"role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
        refused = httpx.post(f"http://127.0.0.1:{port}/reply", json=turn)
        wrong = httpx.post(f"http://127.0.0.1:{port}/reply", json=turn, headers={"authorization": "Bearer nope"})
        with httpx.stream(
            "POST", f"http://127.0.0.1:{port}/reply", json=turn, headers={"authorization": f"Bearer {SERVE_TOKEN}"}
        ) as answered:
            status = answered.status_code
    finally:
        proc.terminate()
        err = proc.communicate(timeout=10)[1].decode()
    assert config["auth"] is True and refused.status_code == wrong.status_code == 401 and status == 200
    assert SERVE_TOKEN not in err and SERVE_TOKEN[:-4] not in err and SERVE_TOKEN[4:] not in err, err
    assert f"/reply wants the bearer token from {'MODELWIRE_SERVE_TOKEN' if form == 'variable' else '--token'}" in err
    assert ("visible to anyone who lists this machine's processes" in err) == (form == "flag")


def test_serve_refuses_an_empty_token_file_and_two_tokens_in_one_line(tmp_path):
    (tmp_path / "empty").write_text("\n")
    for extra in (["--token-file", str(tmp_path / "empty")], ["--token-file", str(tmp_path / "t"), "--token", "x"]):
        out = run("serve", "--port", "1", *extra)
        err = out.stderr.decode()
        assert out.returncode == 2 and err.count("\n") == 1 and "token" in err, err


def _served_config(port: int, proc: subprocess.Popen) -> dict:
    """``/config.json`` of the ``serve`` process on ``port``, polled until it answers (within
    60 s, and while the process runs)."""
    import httpx2 as httpx

    deadline = time.monotonic() + 60
    while True:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/config.json").json()
        except httpx.TransportError:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
