"""The reference regenerator of frozen weights, :mod:`exactnorm.checker.regenerate` (kept at
this name for callers and for the documentation's references)."""

from exactnorm.checker.regenerate import *  # noqa: F403
from exactnorm.checker.regenerate import __all__ as __all__  # noqa: F401
