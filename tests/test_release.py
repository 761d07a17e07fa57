"""The release a project depends on: one source for the version, an sdist and a wheel that
``python -m build`` makes and ``twine check`` passes, and the wheel installed into a clean
virtual environment, where ``import modelwire`` and ``modelwire demo`` run from outside the
source tree."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # the repository

pytest.importorskip("build", reason="the dev extra installs build")
pytest.importorskip("twine", reason="the dev extra installs twine")


def test_the_version_is_written_in_one_place():
    import modelwire
    from importlib.metadata import version

    assert version("modelwire") == modelwire.__version__
    assert not re.search(r"^version\s*=", (ROOT / "pyproject.toml").read_text(), re.M)  # dynamic, from the package
    from modelwire.protocols._protocol import USER_AGENT

    assert USER_AGENT == f"modelwire/{modelwire.__version__}"


def test_no_page_installs_modelwire_by_a_name_no_index_has_for_us():
    """modelwire is published on no package index: an instruction to ``pip install modelwire``
    (or ``uv add modelwire``, a requirement line naming it bare) would install whatever another
    party put under that name, in CI jobs that hold provider keys. Every page says a path, a
    wheel or a pinned git URL instead."""
    bare = re.compile(r"(pip3? install|uv (?:pip install|add)|poetry add)\s+(['\"]?)modelwire(\[[^\]]*\])?\2(\s|$)")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "examples").rglob("*"))]
    found = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for page in pages
        if page.is_file() and page.suffix in (".md", ".py", ".txt", ".toml", ".yml", ".yaml")
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if bare.search(line)
    ]
    assert not found, "install by a name no index holds for modelwire:\n" + "\n".join(found)
    assert bare.search("run: pip install modelwire") and bare.search("pip install 'modelwire[serve]'")
    assert not bare.search("pip install modelwire-0.1.0-py3-none-any.whl")


def test_the_built_wheel_installs_and_runs_outside_the_source_tree(tmp_path):
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], capture_output=True, text=True, timeout=600
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    wheels, sdists = list(dist.glob("*.whl")), list(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, wheels + sdists)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    env_dir = tmp_path / "clean"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheels[0])], capture_output=True, text=True, timeout=600
    )
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MODELWIRE_DEBUG") and not k.endswith("_API_KEY")
    }
    imported = subprocess.run(
        [str(python), "-c", "import modelwire, sys; print(modelwire.__version__, modelwire.__file__)"],
        capture_output=True,
        text=True,
        cwd=outside,
        env=env,
        timeout=120,
    )
    assert imported.returncode == 0, imported.stderr
    version, where = imported.stdout.split()
    assert Path(where).is_relative_to(env_dir) and not Path(where).is_relative_to(ROOT)
    demo = subprocess.run(
        [str(env_dir / "bin" / "modelwire"), "demo"], capture_output=True, text=True, cwd=outside, env=env, timeout=300
    )
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert demo.stdout.strip()
