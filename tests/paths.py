"""Where the shared recorded streams are (../shared/recorded-streams beside the repository)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1].parent / "shared" / "recorded-streams"
PA = ROOT / "pydantic-ai"
HAVE_SHARED = ROOT.is_dir()
