"""audit: regrade, diff and release LLM evaluation results as verifiable artifacts."""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("audit")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
