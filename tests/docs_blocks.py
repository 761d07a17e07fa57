"""The code blocks a user reads: the README's and the docs/ pages', in order."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(language: str) -> list[tuple[str, str]]:
    """``(where, code)`` for every fenced block of ``language``: ``where`` is the page and
    the block's number on it."""
    found = []
    for page in PAGES:
        for n, code in enumerate(re.findall(rf"```{language}\n(.*?)```", page.read_text(), re.S)):
            found.append((f"{page.relative_to(ROOT)}#{n}", code))
    return found
