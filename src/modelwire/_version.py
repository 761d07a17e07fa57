"""modelwire's version, written once (the package's metadata reads it from here)."""

__version__ = "0.1.0"
