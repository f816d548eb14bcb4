"""The exactnorm error hierarchy.

Every failure the user can cause is an :class:`ExactnormError` with a one-line message. The CLI maps
:class:`InputError` (and its subclasses) to exit code 2 and :class:`InvalidCertificateError` to exit
code 1; anything else is a bug.
"""

from __future__ import annotations

__all__ = [
    "ExactnormError",
    "InputError",
    "NumberFormatError",
    "ShapeError",
    "LimitExceededError",
    "SingularSystemError",
    "InvalidCertificateError",
]


class ExactnormError(Exception):
    """Base class of every error exactnorm raises on purpose."""

    exit_code = 2


class InputError(ExactnormError, ValueError):
    """Bad user input: a file, an option or an argument (exit code 2)."""


class NumberFormatError(InputError):
    """A number that is not an exact rational (JSON float, NaN, ``"1/0"``, too many digits)."""


class ShapeError(InputError):
    """Ragged matrices, mismatched widths, empty networks."""


class LimitExceededError(InputError):
    """A size beyond a stated, overridable limit (width, digits, certificate bytes)."""


class SingularSystemError(ExactnormError):
    """A Khatri–Rao system that is singular for the drawn weights.

    Carries the exact ``rank`` and ``size`` of the system and a nonzero ``kernel`` vector (a list of
    integers) so that the singularity itself is checkable.
    """

    def __init__(self, message: str, *, rank: int, size: int, kernel: list[int] | None = None,
                 layer: int | None = None) -> None:
        super().__init__(message)
        self.rank = rank
        self.size = size
        self.kernel = kernel
        self.layer = layer


class InvalidCertificateError(ExactnormError):
    """A certificate that does not prove what it claims (exit code 1)."""

    exit_code = 1
