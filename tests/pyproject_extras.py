"""The optional extras pyproject.toml declares (what ``pip install -e '.[X]'`` may name)."""

import tomllib
from pathlib import Path

EXTRAS = set(
    tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
)
