"""Visible checks, one module per lesson: `from headlab.checks import ch00 as check`."""
from .core import CheckFailed

__all__ = ["CheckFailed"]
