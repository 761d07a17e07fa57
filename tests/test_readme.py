"""The README as a new user reads it: every Python block runs as written (against the local
provider server, with the key and base-URL variables the README tells the reader to set), and
the command line answers each common mistake with one line on stderr."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from modelwire.testing import ProviderServer, Reply, json_reply
from modelwire.testing.sse import body

from docs_blocks import ROOT, blocks

README = ROOT / "README.md"
# The README's and the docs pages' Python blocks, as a reader finds them.
BLOCKS = [code for _, code in blocks("python")]
SHELL = blocks("bash")


def answer(request):
    """A short text answer in the protocol the request was sent in; an upload answered with
    Anthropic's file object (https://docs.anthropic.com/en/api/files-create)."""
    path = request["path"]
    if path.endswith("/v1/files"):
        return json_reply(
            {
                "id": "file_011CNha8iCJcU1wXNR6q4V8w",
                "type": "file",
                "filename": "report.pdf",
                "mime_type": "application/pdf",
                "size_bytes": 28,
                "created_at": "2026-12-07T00:00:00Z",
                "downloadable": False,
            }
        )
    protocol = (
        "anthropic"
        if path.endswith("/messages")
        else "openai-responses"
        if path.endswith("/responses")
        else "gemini"
        if "generateContent" in path
        else "openai-chat"
    )
    return Reply(
        body=body(protocol, ("text", "Hello from the test server")), headers={"content-type": "text/event-stream"}
    )


def user_env(server, tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MODELWIRE_DEBUG" and not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(
        ANTHROPIC_API_KEY="sk-ant-readme",
        ANTHROPIC_BASE_URL=server.url,
        OPENAI_API_KEY="sk-readme",
        OPENAI_BASE_URL=server.url + "/v1",
        GEMINI_API_KEY="g-readme",
        GOOGLE_GEMINI_BASE_URL=server.url,
        PYTHONPATH=os.pathsep.join(sys.path),
    )
    return env


def test_the_readme_has_its_blocks():
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("n", range(len(BLOCKS)))
def test_every_python_block_runs_as_written(n, tmp_path):
    code = BLOCKS[n]
    if "def test_" in code:
        pytest.skip("a pytest file: see test_the_pytest_block_records_and_replays")
    with ProviderServer() as server:
        server.respond = answer
        script = tmp_path / "block.py"
        script.write_text(code)
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=user_env(server, tmp_path),
        )
    assert done.returncode == 0, f"README block {n} failed:\n{code}\n--- stderr:\n{done.stderr[-2000:]}"


def test_the_pytest_block_records_and_replays(tmp_path):
    (code,) = [b for b in BLOCKS if "@pytest.mark.cassette" in b and "def test_weather_agent" in b]
    (tmp_path / "test_readme_block.py").write_text(code)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    with ProviderServer() as server:
        server.respond = answer
        env = user_env(server, tmp_path)
        first = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--record-mode=once"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=env,
        )
        assert first.returncode == 0, first.stdout + first.stderr
    env.pop("ANTHROPIC_API_KEY")  # replay needs no key, and the server is gone
    again = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert list((tmp_path / "cassettes").rglob("*.json"))


def test_the_testing_section_is_a_test_file_that_passes_with_no_network_and_no_key(tmp_path):
    (code,) = [b for b in BLOCKS if "FakeModel" in b and "def test_" in b]
    (tmp_path / "test_my_agent.py").write_text(code)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "MODELWIRE_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0 and " passed" in done.stdout, done.stdout + done.stderr


def test_the_conformance_block_is_a_test_file_that_passes(tmp_path):
    (code,) = [b for b in BLOCKS if "conformance.CHECKS" in b]
    (tmp_path / "test_my_protocol.py").write_text(code)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "MODELWIRE_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0 and " passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_the_pytest_plugin_lives_beside_pytest_recording(tmp_path):
    pytest.importorskip("pytest_recording", reason="the dev extra installs pytest-recording")
    (code,) = [b for b in BLOCKS if "@pytest.mark.cassette" in b and "def test_weather_agent" in b]
    (tmp_path / "test_readme_block.py").write_text(code)
    with ProviderServer() as server:
        server.respond = answer
        env = user_env(server, tmp_path)
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--modelwire-record-mode=once"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=env,
        )
    assert run.returncode == 0, run.stdout + run.stderr
    help_text = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    ).stdout
    assert "--modelwire-record-mode" in help_text and "--record-mode" in help_text


# -- the shell blocks -------------------------------------------------------------------------------

# Steps of a shell block that set up the reader's machine rather than use modelwire: CI runs
# the README's install-and-test command itself, test_the_pytest_block_records_and_replays runs
# the cassette commands on the README's test file, test_serve_redis runs a real redis-server.
SETUP = re.compile(r"^(python3 -m venv |export |source |redis-server |(\S+=\S+ )*(\.venv/bin/python -m )?pytest\b)")
PIP = re.compile(r"^(\.venv/bin/)?pip install (-q )?-e '?\.(\[([a-z,]+)\])?'?$")


def commands(code: str) -> list[str]:
    """The commands of a shell block: one per line, ``&&`` chains split, comments dropped."""
    out = []
    for line in code.splitlines():
        line = line.split("  #")[0].strip() if not line.lstrip().startswith("#") else ""
        out += [step.strip() for step in line.split("&&") if step.strip()]
    return out


def test_the_docs_have_their_shell_blocks():
    assert len(SHELL) >= 8 and sum(len(commands(code)) for _, code in SHELL) >= 15


def _serving(out: str, err: str) -> bool:
    return "serving" in (out + err).lower() or "on http://" in err


def run_shell(command: str, env: dict[str, str], tmp_path: Path, server: bool) -> tuple[int | None, str, str]:
    """(exit status, stdout, stderr) of ``command``; for a server, None once it says it serves
    (it is then stopped): waited for, however long a loaded machine takes to start it."""
    import signal
    import time

    with (tmp_path / "out").open("w+") as out, (tmp_path / "err").open("w+") as err:
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        said = ("", "")
        while proc.poll() is None and time.monotonic() < deadline:
            said = (Path(out.name).read_text(), Path(err.name).read_text())
            if server and _serving(*said):
                break
            time.sleep(0.05)
        running = proc.poll() is None
        if running:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        said = (Path(out.name).read_text(), Path(err.name).read_text())
    if running:
        assert server, f"{command!r} did not end within 120 s"
        assert _serving(*said), f"{command!r} did not say it serves within 120 s\n{said[1][-2000:]}"
        return None, *said
    return proc.returncode, *said


@pytest.mark.parametrize("where,code", SHELL, ids=[w for w, _ in SHELL])
def test_every_shell_block_runs_or_fails_with_one_clear_error(where, code, tmp_path):
    """Each command, as written, from the repository's root, with no API key: it runs (a
    server is still serving after a few seconds), or it stops with one modelwire error
    on stderr and no traceback. Setup steps are checked for what they name."""
    import pyproject_extras

    bin_dir = str(Path(sys.executable).parent)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_BASE_URL")) and k not in ("MODELWIRE_DEBUG", "MODELWIRE_MODEL")
    }
    env.update(
        PATH=bin_dir + os.pathsep + env.get("PATH", ""), MODELWIRE_CACHE_DIR=str(tmp_path / "cache"), HOME=str(tmp_path)
    )
    for command in commands(code):
        pip = PIP.match(command)
        if pip:
            for extra in filter(None, (pip.group(4) or "").split(",")):
                assert extra in pyproject_extras.EXTRAS, (
                    f"{where}: {command!r} names an extra pyproject.toml does not have"
                )
            continue
        if SETUP.match(command):
            continue
        server = command.endswith("&") or " serve" in command
        command = command.rstrip("&").strip().replace(".venv/bin/modelwire", "modelwire")
        returncode, out, err = run_shell(command, env, tmp_path, server)
        if returncode is None:  # a server, stopped once it said it serves
            assert "Traceback" not in err, f"{where}: {command!r}\n{err[-2000:]}"
            continue
        if returncode == 0:
            continue
        lines = [line for line in err.splitlines() if line.strip()]
        assert "Traceback" not in err and lines, f"{where}: {command!r} failed with nothing to say\n{out[-1000:]}"
        # A failure is fine only where a provider is needed (no key here), or where the
        # command's own exit status says what it found (modelwire check: 1 = findings).
        needs_provider = lines[-1].startswith("modelwire") and re.search(
            r"needs an API key|_API_KEY|cannot connect|could not connect|nothing answers at", lines[-1]
        )
        assert needs_provider or re.match(r"^\d+ finding", lines[-1]), (
            f"{where}: {command!r} ended with {returncode}:\n{err[-2000:]}"
        )


# -- one line per mistake -------------------------------------------------------------------------


def cli(*args: str, stdin: str | None = None, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "MODELWIRE_DEBUG" and k != "MODELWIRE_MODEL"}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "modelwire.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        cwd=cwd,
    )


def one_line(done: subprocess.CompletedProcess, code: int, *words: str) -> None:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == code, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_mistakes_in_the_command_line_get_one_line_and_a_fix(tmp_path):
    one_line(cli("chta"), 2, "did you mean chat?")
    one_line(cli("chat", "--modle", "x", "hi"), 2, "did you mean --model?")
    one_line(
        cli("chat", "-m", "antropic:claude-sonnet-4-5", "hi", cwd=tmp_path),
        2,
        "did you mean anthropic:claude-sonnet-4-5?",
    )
    one_line(cli("chat", "-m", "Anthropic:claude-x", "hi", cwd=tmp_path), 2, "did you mean anthropic:claude-x?")
    one_line(cli("chat", "-m", "gpt-4o", "hi", cwd=tmp_path), 2, "did you mean openai:gpt-4o?")
    one_line(
        cli("chat", "-m", "anthropic:claude-x", "hi", cwd=tmp_path, ANTHROPIC_API_KEY=""), 2, "set ANTHROPIC_API_KEY"
    )
    one_line(cli("chat", "hi", cwd=tmp_path), 2, "MODELWIRE_MODEL")
    one_line(cli("chat", "-m", "openai:gpt-x", cwd=tmp_path, stdin="   ", OPENAI_API_KEY="k"), 2, "the prompt is empty")
    one_line(cli("decode", "--protocol", "antropic", "-"), 2, "did you mean anthropic?")
    one_line(cli("decode", "--protocol", "anthropic", str(tmp_path / "none.sse")), 2, "cannot read")


def test_a_misspelled_option_in_modelwire_toml_is_named(tmp_path):
    (tmp_path / "modelwire.toml").write_text(
        'default = "fast"\n[profiles.fast]\nmodel = "openai:gpt-4.1"\ntemprature = 0.2\n'
    )
    one_line(
        cli("chat", "hi", cwd=tmp_path, OPENAI_API_KEY="k"),
        2,
        "modelwire.toml",
        "'temprature'",
        "did you mean temperature?",
    )


def test_format_and_cassette_mistakes_are_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    one_line(cli("format", "--protocol", "openai-chat", str(bad)), 2, "message [0]", "name")
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps([{"name": "u", "role": "user", "content": "hi"}]))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"name": "f"}))
    one_line(cli("format", "--protocol", "openai-chat", "--tools", str(tools), str(ok)), 2, "list of tool definitions")
    listed = tmp_path / "list.json"
    listed.write_text("[]")
    one_line(cli("cassette", "show", str(listed)), 2, "list.json", "not a modelwire cassette")
    yaml_file = tmp_path / "tape.yaml"
    yaml_file.write_text("interactions:\n- request: {}\n")
    one_line(cli("cassette", "show", str(yaml_file)), 2, "tape.yaml", "modelwire cassette import")
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"version": 1, "interactions": [{}]}))
    one_line(cli("cassette", "show", str(empty)), 2, "interaction 0", "request")
    not_yaml = tmp_path / "x.yaml"
    not_yaml.write_text("{{{ not yaml")
    one_line(cli("cassette", "import", str(not_yaml)), 2, "x.yaml", "not a VCR.py cassette")
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"version": 1, "notes": "", "interactions": []}))
    before = mine.read_text()
    one_line(cli("cassette", "import", str(mine), "-o", str(mine)), 2, "already")
    assert mine.read_text() == before


def test_decode_names_the_protocol_a_body_looks_like(tmp_path):
    chat_body = tmp_path / "chat.sse"
    chat_body.write_bytes(body("openai-chat", ("text", "hi")))
    done = cli("decode", "--protocol", "anthropic", str(chat_body))
    assert done.returncode == 1 and "use --protocol openai-chat" in done.stderr
    good = cli("decode", "--protocol", "openai-chat", str(chat_body))
    assert good.returncode == 0 and "stop: end_turn" in good.stderr


def test_chat_against_a_server_of_another_protocol_says_so():
    with ProviderServer() as server:
        server.script(Reply(body=body("openai-chat", ("text", "hi")), headers={"content-type": "text/event-stream"}))
        done = cli("chat", "-m", "anthropic:claude-x", "--base-url", server.url, "hi", ANTHROPIC_API_KEY="k")
    assert done.returncode == 1 and "answered in another protocol (openai-chat)" in done.stderr


def test_chat_takes_a_piped_prompt_and_keeps_stdout_for_the_answer():
    with ProviderServer() as server:
        server.respond = answer
        done = cli(
            "chat",
            "-m",
            "openai:gpt-x",
            "--base-url",
            server.url + "/v1",
            "--max-tokens",
            "50",
            "--temperature",
            "0.1",
            stdin="Hello?\n",
            OPENAI_API_KEY="k",
        )
        sent = server.requests[0]["json"]
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello from the test server" and "tokens in" in done.stderr
    assert (
        sent["messages"][-1]["content"] == "Hello?"
        and sent["max_completion_tokens"] == 50
        and sent["temperature"] == 0.1
    )


def test_help_teaches():
    top = cli("--help").stdout
    assert "modelwire demo" in top and "ANTHROPIC_API_KEY" in top and "_BASE_URL" in top
    chat = cli("chat", "--help").stdout
    assert "-m MODEL, --model MODEL" in chat and "(default: 8)" in chat and "--max-tokens" in chat
    models = cli("models").stdout
    assert "anthropic:claude-sonnet-4-5" in models and "google:gemini-2.5-flash" in models


def test_a_broken_pipe_is_quiet():
    done = subprocess.run(
        f"{sys.executable} -m modelwire.cli models | head -1", shell=True, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stderr == ""


def test_an_older_python_gets_modelwires_own_message(tmp_path):
    """pip does not check requires-python of a project installed from its folder: without
    modelwire's hook, Python 3.10 says only "No matching distribution found for httpx2"."""
    import glob
    import shutil

    candidates = [
        *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10*/bin/python3.10"))),
        shutil.which("python3.10"),
    ]
    older = next(
        (c for c in candidates if c and subprocess.run([c, "--version"], capture_output=True).returncode == 0), None
    )
    if older is None:
        pytest.skip("no Python 3.10 on this machine")
    subprocess.run([older, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=120)
    done = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "pip"), "install", "-q", "-e", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0
    assert "modelwire needs Python 3.11 or newer, and this is Python 3.10" in done.stdout + done.stderr, (
        done.stdout + done.stderr
    )[-3000:]
    assert "No matching distribution" not in done.stdout + done.stderr
