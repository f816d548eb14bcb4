"""The exactnorm error hierarchy.

Every failure the user can cause is an :class:`ExactnormError` with a one-line message. The CLI maps
:class:`InputError` (and its subclasses) to exit code 2 and :class:`InvalidCertificateError` to exit
code 1; a missing optional package is a :class:`MissingExtraError` (:func:`require_extra`),
whose message names the extra to install; :class:`InvariantError` (exit code 3) means exactnorm
itself is wrong; anything else that escapes is a bug too.

Messages name the *parameter* of the library function (``retry must be non-negative``), never a
command-line flag: an API caller has no flags. An error about one parameter carries it in
:attr:`ExactnormError.parameter`, and the CLI renders that parameter as its flag (``--retry must be
non-negative``), so each layer speaks its own vocabulary.

>>> e = InputError("retry must be non-negative, got -1", parameter="retry")
>>> e.parameter, str(e)
('retry', 'retry must be non-negative, got -1')
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
    "NotACertificateError",
    "InvalidCertificateError",
    "InvariantError",
    "PadicUnavailable",
    "require_integer",
    "MissingExtraError",
    "OPTIONAL_MODULES",
    "missing_extra_message",
    "require_extra",
]


class ExactnormError(Exception):
    """Base class of every error exactnorm raises on purpose.

    Parameters
    ----------
    message : str
        One line, in the vocabulary of the function that raised it.
    parameter : str or tuple of str, optional
        The name of the function parameter the message is about (or the names, when it is about
        several); the CLI shows each as its flag.
    """

    exit_code = 2

    def __init__(self, message: str = "", *,
                 parameter: str | tuple[str, ...] | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


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


class NotACertificateError(InputError):
    """A file given as a certificate that is not one at all (not JSON, no ``format``): exit
    code 2, a usage error, unlike an invalid certificate (exit code 1)."""


class InvalidCertificateError(ExactnormError):
    """A certificate that does not prove what it claims (exit code 1)."""

    exit_code = 1


class InvariantError(ExactnormError):
    """An exact identity that exactnorm's own mathematics guarantees failed (exit code 3).

    Raised instead of ``assert`` (which ``python -O`` removes) when an independently computed
    witness does not check itself: the result is withheld rather than reported wrong.
    """

    exit_code = 3


class PadicUnavailable(ExactnormError):
    """The p-adic fast path does not apply (entries beyond 64-bit residuals, singular mod p).

    Internal signal of :mod:`exactnorm.exact.padic`: callers fall back to FLINT's general solver,
    which also decides singularity exactly, so it never reaches a user.
    """


def require_integer(value: object, parameter: str, *, minimum: int = 0) -> int:
    """``value`` if it is an integer ``≥ minimum``, else an :class:`InputError` naming it.

    The one check behind every integer option (``retry``, ``jobs``, ``block``, ``rank``,
    ``width`` …), so that they all refuse ``True``, ``2.0`` and ``-1`` with the same wording.

    Parameters
    ----------
    value : object
    parameter : str
        The name of the parameter, carried by the error (the CLI shows it as a flag).
    minimum : int
        The smallest allowed value.

    Returns
    -------
    int

    Raises
    ------
    InputError
        ``"retry must be non-negative, got -1"``, ``"block must be positive, got 0"``,
        ``"jobs must be an integer, got 2.0"``.

    >>> require_integer(3, "retry")
    3
    >>> require_integer(0, "block", minimum=1)
    Traceback (most recent call last):
    ...
    exactnorm.errors.InputError: block must be positive, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{parameter} must be an integer, got {value!r}", parameter=parameter)
    if value < minimum:
        bound = {0: "non-negative", 1: "positive"}.get(minimum, f"at least {minimum}")
        raise InputError(f"{parameter} must be {bound}, got {value!r}", parameter=parameter)
    return value


class MissingExtraError(InputError):
    """An optional package is not installed; the message names the extra that provides it
    (exit code 2: the user's environment, not a bug)."""


#: The only modules :func:`require_extra` imports, each with the ``exactnorm[EXTRA]`` that
#: installs it (``torch`` has no extra: it is large and installed by hand).
OPTIONAL_MODULES = {
    "matplotlib": "plot",
    "matplotlib.figure": "plot",
    "matplotlib.backends.backend_agg": "plot",
    "distributed": "dask",
    "sklearn.datasets": "sklearn",
    "sklearn.preprocessing": "sklearn",
    "onnx": "onnx",
    "onnxruntime": "onnx",
    "torch": "torch",
}


def missing_extra_message(module: str, purpose: str) -> str:
    """The one-line message for a missing optional module.

    >>> print(missing_extra_message("matplotlib.figure", "the bit-size histograms"))
    the bit-size histograms needs matplotlib, which is not installed: pip install 'exactnorm[plot]'
    >>> print(missing_extra_message("torch", "the PyTorch export"))
    the PyTorch export needs torch, which is not installed: pip install torch (large: no extra)
    """
    extra = OPTIONAL_MODULES[module]
    how = ("pip install torch (large: no extra)" if extra == "torch"
           else f"pip install 'exactnorm[{extra}]'")
    return f"{purpose} needs {module.split('.')[0]}, which is not installed: {how}"


def require_extra(module: str, purpose: str) -> ModuleType:
    """Import an optional dependency or fail with one line naming the extra that installs it.

    The one place where a missing optional package (matplotlib, dask, onnx, onnxruntime, torch,
    scikit-learn) becomes an error, so that every command says the same thing. Only the modules
    of :data:`OPTIONAL_MODULES` are imported: the name never comes from user input.

    Parameters
    ----------
    module
        A key of :data:`OPTIONAL_MODULES`, e.g. ``"matplotlib.figure"``.
    purpose
        What needs it, e.g. ``"the transition plot"``; starts the message.

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    MissingExtraError
        When the module (or a package it needs) cannot be imported.
    KeyError
        For a module outside the registry (a programming error, not a user's).
    """
    message = missing_extra_message(module, purpose)
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(message) from None
