"""The package version (one definition, importable from any layer)."""

__version__ = "0.1.0"
