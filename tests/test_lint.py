"""The project's lint rules (``[tool.ruff]`` in pyproject.toml) hold on every file: what
CI runs, with the README's test command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="the dev extra installs ruff")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_code_is_laid_out_by_ruff_format():
    """One layout everywhere (``ruff format``, lines of 120): a change shows what it changes."""
    pytest.importorskip("ruff", reason="the dev extra installs ruff")
    args = [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_no_function_in_the_package_is_longer_than_60_lines():
    """Long functions are split where they are written (ruff's C901 keeps each one's
    branches to 20); nested functions count within the function that holds them."""
    import ast

    long = []
    for path in sorted((ROOT / "src" / "modelwire").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 60:
                long.append(
                    f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
                )
    assert long == [], "\n".join(long)


def test_no_module_in_the_package_is_longer_than_600_lines():
    """A module a reader can hold: split by what changes together (a CLI by command, a class
    by its parts) before it passes 600 lines."""
    package = ROOT / "src" / "modelwire"
    long = {}
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > 600:
            long[path.relative_to(package).as_posix()] = lines
    assert long == {}, f"over 600 lines: {long}; split them"


def test_no_function_in_the_package_ranks_d_or_worse():
    """radon's cyclomatic complexity (every branch and boolean operator counted) stays at
    20 or under for every function and method: rank C or better."""
    pytest.importorskip("radon", reason="the dev extra installs radon")
    from radon.complexity import cc_visit

    ranked = []
    for path in sorted((ROOT / "src" / "modelwire").rglob("*.py")):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            if block.complexity > 20:
                ranked.append(f"{path.relative_to(ROOT)}:{block.lineno} {block.name} ({block.complexity})")
    assert ranked == [], "\n".join(ranked)


def test_every_error_is_exported_and_drawn_in_the_tree():
    """``errors.__all__`` names every error class, and the module's docstring draws the
    tree as the classes make it (a class added or moved without the drawing fails here)."""
    import inspect

    import modelwire.errors as errors

    classes = [c for c in vars(errors).values() if inspect.isclass(c) and issubclass(c, errors.ModelwireError)]
    assert sorted(c.__name__ for c in classes) == sorted(n for n in errors.__all__ if n[0].isupper())

    def parent(cls):
        return next(b for b in cls.__bases__ if issubclass(b, errors.ModelwireError))

    def lines(cls, depth=0):
        first = parent(cls) if cls is not errors.ModelwireError else None
        others = [b.__name__ for b in cls.__bases__ if b is not first and b is not Exception]
        yield "    " + "  " * depth + cls.__name__ + (f" (also {', '.join(others)})" if others else "")
        for sub in sorted(
            (c for c in classes if c is not errors.ModelwireError and parent(c) is cls), key=lambda c: c.__name__
        ):
            yield from lines(sub, depth + 1)

    drawn = "\n".join(lines(errors.ModelwireError))
    assert drawn in errors.__doc__
