"""The checker's accelerated arithmetics with python-flint: the default of ``exactnorm check``
(``--pure`` runs the standard-library reference, :mod:`exactnorm.checker`).

* :mod:`exactnorm.checker_flint.arithmetic`: :class:`FlintArithmetic`, the walk's arithmetic
  (affine maps as ``fmpz_mat`` pieces; the contract is the protocol
  :class:`exactnorm.checker.protocol.Arithmetic`);
* :mod:`exactnorm.checker_flint.linear`: :class:`FlintLinear`, the impossibility rules' linear
  algebra (determinants modulo a prime, exact products).

The entry points below run the one walk of :mod:`exactnorm.checker.walk` with this arithmetic: the
same verdicts and messages as :func:`exactnorm.checker.check_certificate` (tests compare them
document by document).
"""

from __future__ import annotations

from collections.abc import Callable

from exactnorm.checker.files import check_file_with, check_text_with, check_with
from exactnorm.checker.numbers import Verdict
from exactnorm.checker.vocabulary import DEFAULT_MAX_BYTES, DEFAULT_MAX_DIGITS, DEFAULT_MAX_WORK
from exactnorm.checker_flint.arithmetic import FlintArithmetic
from exactnorm.checker_flint.linear import FlintLinear

__all__ = ["FlintArithmetic", "FlintLinear", "Verdict", "check_certificate",
           "check_certificate_text", "check_file"]


def check_certificate(doc: object, *, max_digits: int = DEFAULT_MAX_DIGITS,
                      progress: Callable[[int, int], None] | None = None,
                      max_work: int | None = DEFAULT_MAX_WORK) -> Verdict:
    """Same contract and verdicts as :func:`exactnorm.checker.check_certificate`."""
    return check_with(FlintArithmetic(), doc, max_digits=max_digits, progress=progress,
                      max_work=max_work)


def check_certificate_text(text: str | bytes | bytearray, *,
                           max_digits: int = DEFAULT_MAX_DIGITS,
                           max_work: int | None = DEFAULT_MAX_WORK) -> Verdict:
    return check_text_with(FlintArithmetic(), text, max_digits=max_digits, max_work=max_work)


def check_file(path: str, *, max_digits: int = DEFAULT_MAX_DIGITS,
               max_bytes: int = DEFAULT_MAX_BYTES,
               progress: Callable[[int, int], None] | None = None,
               max_work: int | None = DEFAULT_MAX_WORK) -> Verdict:
    """Check a ``.json`` or ``.json.gz`` certificate file (unreadable: rule ``format``)."""
    return check_file_with(FlintArithmetic(), path, max_digits=max_digits, max_bytes=max_bytes,
                           progress=progress, max_work=max_work)
