"""The documentation site: it builds with ``mkdocs build --strict`` (every link and reference
resolves), every page is in its navigation, every public name has a docstring for the API
reference, the exceptions page draws the tree ``errors.py`` defines, and the README stays a
first screen and a map. (Every code block of the README and the pages runs in test_readme.py.)"""

from __future__ import annotations

import importlib
import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docs_blocks import ROOT

DOCS = ROOT / "docs"
PUBLIC = [
    "modelwire", "modelwire.message", "modelwire.event", "modelwire.models", "modelwire.agent",
    "modelwire.cassettes", "modelwire.testing", "modelwire.serve", "modelwire.errors", "modelwire.conform",
    "modelwire.cost", "modelwire.telemetry", "modelwire.protocols", "modelwire.adapters", "modelwire.formatters",
    "modelwire.integrations.agentscope",
]  # fmt: skip


def test_the_site_builds_strictly(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    assert mkdocs, "the dev extra installs mkdocs-material and mkdocstrings"
    done = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "site" / "reference" / "message" / "index.html").read_text()
    assert "append_event" in page and "ToolCallBlock" in page  # the reference is made from the docstrings


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages and {p for p in pages if p not in nav} == set()


def test_every_public_name_has_a_docstring():
    missing = []
    for name in PUBLIC:
        module = importlib.import_module(name)
        for public in module.__all__:
            obj = getattr(module, public)
            if inspect.isclass(obj) and obj.__module__.startswith("modelwire"):
                doc = obj.__dict__.get("__doc__")
            elif inspect.isfunction(obj):
                doc = obj.__doc__
            else:
                continue  # a constant or an alias: described where it is defined
            if not (doc and doc.strip()):
                missing.append(f"{name}.{public}")
    assert missing == []


def _drawn_tree() -> dict[str, tuple[str | None, list[str]]]:
    """The exceptions page's tree: each class, the class it is drawn under, and the other
    classes it says it also is."""
    text = (DOCS / "exceptions.md").read_text()
    block = re.search(r"```text\n(.*?)```", text, re.S)
    assert block
    drawn: dict[str, tuple[str | None, list[str]]] = {}
    parents: list[str] = []
    for line in block.group(1).splitlines():
        depth = (len(line) - len(line.lstrip())) // 4
        name, _, note = line.strip().partition("  ")
        also = re.findall(r"[\w.]+", note.replace("also", "")) if note else []
        parents[depth:] = [name]
        drawn[name] = (parents[depth - 1] if depth else None, also)
    return drawn


def test_the_exceptions_page_draws_the_tree_errors_py_defines():
    from modelwire import errors

    defined = {
        n: getattr(errors, n)
        for n in errors.__all__
        if inspect.isclass(getattr(errors, n)) and issubclass(getattr(errors, n), BaseException)
    }
    drawn = _drawn_tree()
    assert set(drawn) == set(defined)
    for name, (parent, also) in drawn.items():
        cls = defined[name]
        first, *rest = cls.__bases__
        assert (first.__name__ if first is not Exception else None) == parent, name
        expected = [f"builtins.{b.__name__}" if b.__module__ == "builtins" else b.__name__ for b in rest]
        if first.__module__ == "builtins" and first is not Exception:
            expected.insert(0, f"builtins.{first.__name__}")
        assert also == expected, name


def test_the_readme_is_a_first_screen_and_a_map():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).is_file(), target


@pytest.mark.parametrize("page", sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")))
def test_no_page_names_a_path_that_is_not_there(page):
    """Paths a page names in backticks (``tests/test_x.py``, ``benchmarks/y.py``) exist."""
    text = (DOCS / page).read_text()
    for path in re.findall(r"`((?:tests|benchmarks|scripts|src)/[\w/.-]+\.(?:py|mjs|toml|yaml))`", text):
        assert (ROOT / path).exists(), f"{page} names {path}"
