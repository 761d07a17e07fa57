"""Metadata hook: the classifiers (from the Python versions modelwire takes), and, on a
Python older than that, modelwire's own message before pip looks for the dependencies
(whose "No matching distribution found for httpx2" would hide the reason: pip does not
check ``requires-python`` of the project it installs from a folder)."""

import sys

from hatchling.metadata.plugin.interface import MetadataHookInterface

REQUIRED = (3, 11)
TESTED = ("3.11", "3.12", "3.13")


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata: dict) -> None:
        if sys.version_info < REQUIRED:
            found = ".".join(map(str, sys.version_info[:3]))
            raise RuntimeError(
                f"modelwire needs Python {REQUIRED[0]}.{REQUIRED[1]} or newer, and this is Python {found}:"
                f" make the environment with a newer one, e.g. python3.{REQUIRED[1]} -m venv .venv"
            )
        metadata["classifiers"] = [
            "Programming Language :: Python :: 3",
            *(f"Programming Language :: Python :: {version}" for version in TESTED),
            "Typing :: Typed",
        ]
