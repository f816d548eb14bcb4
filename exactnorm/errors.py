"""The exactnorm error hierarchy.

Every failure the user can cause is an :class:`ExactnormError` with a one-line message. The CLI maps
:class:`InputError` (and its subclasses) to exit code 2 and :class:`InvalidCertificateError` to exit
code 1; anything else is a bug. A missing optional package is a :class:`MissingExtraError`
(:func:`require_extra`), whose message names the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = [
    "ExactnormError",
    "InputError",
    "NumberFormatError",
    "ShapeError",
    "LimitExceededError",
    "SingularSystemError",
    "InvalidCertificateError",
    "MissingExtraError",
    "require_extra",
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


class MissingExtraError(InputError):
    """An optional package is not installed; the message names the extra that provides it
    (exit code 2: the user's environment, not a bug)."""


def require_extra(module: str, extra: str, purpose: str) -> ModuleType:
    """Import an optional dependency or fail with one line naming the extra that installs it.

    The one place where a missing optional package (matplotlib, dask, onnx, onnxruntime, torch,
    scikit-learn) becomes an error, so that every command says the same thing.

    Parameters
    ----------
    module
        Dotted module name to import, e.g. ``"matplotlib.figure"``.
    extra
        The ``pip install 'exactnorm[EXTRA]'`` extra (or, for torch, which has no extra because it
        is large, the package to install by hand: pass ``"torch"`` and the message says so).
    purpose
        What needs it, e.g. ``"the transition plot"``.

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    MissingExtraError
        When the module (or a package it needs) cannot be imported.

    Examples
    --------
    >>> require_extra("json", "none", "a doctest").__name__
    'json'
    >>> try:
    ...     require_extra("exactnorm_no_such_package", "plot", "a plot")
    ... except MissingExtraError as exc:
    ...     print(exc)
    a plot needs exactnorm_no_such_package, which is not installed: pip install 'exactnorm[plot]'
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        how = ("pip install torch (not an extra: it is large; see pytorch.org for your platform)"
               if extra == "torch" else f"pip install 'exactnorm[{extra}]'")
        raise MissingExtraError(f"{purpose} needs {top}, which is not installed: {how}") from None
