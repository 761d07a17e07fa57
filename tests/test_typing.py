"""modelwire is a typed package: the README's Python examples, written as a user's
scripts, pass ``mypy --strict`` and ``pyright`` (reading modelwire's own annotations
through its ``py.typed``), pyright's strict mode finds no type it does not know in them
or in a user's code over the public API, and ``event.type`` narrows an event to its class."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from docs_blocks import blocks

BLOCKS = [code for _, code in blocks("python")]  # the README's and the docs pages' examples
USER_CODE = Path(__file__).with_name("strict_user_code.py")  # a user's calls across the public API
NARROWING = """
from modelwire.agent import Agent
from modelwire.testing import FakeModel

async def texts() -> list[str]:
    out: list[str] = []
    async for event in Agent("bot", FakeModel([[("text", "Hi.")]])).reply_stream("Hi"):
        if event.type == "TEXT_BLOCK_DELTA":
            out.append(event.delta)          # narrowed: only a delta event has .delta
        elif event.type == "MODEL_CALL_END":
            out.append(str(event.output_tokens))
    return out
"""


def test_the_package_says_it_is_typed():
    assert (resources.files("modelwire") / "py.typed").is_file()


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("user_scripts")
    for n, code in enumerate(BLOCKS):
        # A block that is a file of a project (its first line "# trip.py") is written under its
        # name, so that the project's other files import it as the page shows.
        named = re.fullmatch(r"# (\w+\.py)", code.splitlines()[0]) if code.strip() else None
        (folder / (named.group(1) if named else f"readme_block_{n:02d}.py")).write_text(code)
    (folder / "narrowing.py").write_text(NARROWING)
    shutil.copy(USER_CODE, folder / "user_code.py")
    return folder


def test_the_readme_examples_pass_mypy_strict(scripts):
    pytest.importorskip("mypy", reason="the dev extra installs mypy")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "."],
        cwd=scripts,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"no issues found in {len(BLOCKS) + 2} source files" in done.stdout


def test_the_readme_examples_pass_pyright(scripts):
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("the dev extra installs pyright")
    done = subprocess.run(
        [pyright, "--pythonpath", sys.executable, "."], cwd=scripts, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and "0 errors" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_user_code_passes_pyright_strict(scripts, tmp_path):
    """A project whose own pyright runs in strict mode sees every value that comes from
    modelwire with a known type: no "partially unknown" ``load_model``, ``reply_sync`` or event,
    in the docs' examples or in a user's code over the public API (strict_user_code.py)."""
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("the dev extra installs pyright")
    import json

    project = shutil.copytree(scripts, tmp_path / "strict_project")
    (project / "pyrightconfig.json").write_text('{"typeCheckingMode": "strict"}')
    done = subprocess.run(
        [pyright, "--pythonpath", sys.executable, "--outputjson", "."],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(done.stdout)
    errors = [
        f"{Path(d['file']).name}:{d['range']['start']['line'] + 1}: {d['message']} ({d.get('rule', '')})"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert report["summary"]["filesAnalyzed"] == len(BLOCKS) + 2 and not errors, "\n".join(errors[:40])


def test_pyright_finds_no_errors_in_the_package():
    """``pyright`` over ``src/`` (its configuration is ``[tool.pyright]``) reports no error:
    the events narrow on ``type``, records say their fields, optional values are checked."""
    import json

    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("the dev extra installs pyright")
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [pyright, "--pythonpath", sys.executable, "--outputjson"], cwd=root, capture_output=True, text=True, timeout=900
    )
    report = json.loads(done.stdout)
    errors = [
        f"{d['file'].split('/src/')[-1]}:{d['range']['start']['line'] + 1}: {d['message']}"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert report["summary"]["filesAnalyzed"] > 50 and not errors, "\n".join(errors[:40])


def test_mypy_strict_finds_no_errors_in_the_package(tmp_path):
    """``mypy --strict`` over ``src/modelwire`` (its configuration is ``[tool.mypy]``: the
    files, and the few imports that carry no types) reports no error."""
    pytest.importorskip("mypy", reason="the dev extra installs mypy")
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )
    errors = [line.split("/src/")[-1] for line in done.stdout.splitlines() if ": error: " in line]
    assert not errors and done.returncode == 0, "\n".join(errors[:40]) or done.stdout[-3000:] + done.stderr[-2000:]
    checked = re.search(r"no issues found in (\d+) source files", done.stdout)
    assert checked and int(checked.group(1)) > 100, done.stdout[-2000:]
