"""``detpoly``: ``det(Xᵀ ⊙ Y) ≢ 0`` by expansion or by matching witnesses (SymPy, imported
inside the functions so that the other verbs never pay for it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from exactnorm.errors import InputError, require_integer

if TYPE_CHECKING:
    from exactnorm.analysis.detpoly import DetPolyCheck
    from exactnorm.analysis.witnesses import (
        MatchingCertificate,
        StructuredSymbolicProof,
        StructuredWitness,
    )

__all__ = ["DetpolyResult", "detpoly", "check_detpoly"]


@dataclass(frozen=True)
class DetpolyResult:
    """What :func:`detpoly` established.

    Expansion mode: ``document`` (the ``exactnorm.detpoly`` document), ``checked`` (its
    re-check) and ``written`` (bytes, with ``out``). Matching mode: ``matching``, ``structured``
    and, for sides ``≤ 3``, ``symbolic``.
    """

    d_in: int
    d_out: int
    document: dict[str, Any] | None = None
    checked: DetPolyCheck | None = None
    written: int | None = None
    matching: MatchingCertificate | None = None
    structured: StructuredWitness | None = None
    symbolic: StructuredSymbolicProof | None = None

    def __repr__(self) -> str:
        # short: the document holds the whole expansion
        mode = "matching" if self.matching is not None else "expansion"
        return (f"DetpolyResult(d_in={self.d_in}, d_out={self.d_out}, mode={mode}, "
                f"verified={self.verified})")

    @property
    def verified(self) -> bool:
        """Every witness computed here checks (the expansion's check raises instead)."""
        if self.matching is None:
            return self.checked is not None
        return bool(self.matching.verified and self.structured is not None
                    and self.structured.verified
                    and (self.symbolic is None or self.symbolic.proved))


def detpoly(d_in: int, d_out: int, *, seed: int = 0, matching: bool = False,
            layout: str = "interleaved",
            out: str | os.PathLike[str] | None = None) -> DetpolyResult:
    """``det(Xᵀ ⊙ Y) ≢ 0``: expansion with its document, or the matching witnesses (``detpoly``).

    Parameters
    ----------
    d_in, d_out : int
        Target layer sizes; the expansion needs ``d_in·d_out ≤ 4``.
    seed : int
        Seed of the evaluation witness.
    matching : bool
        Any size: the matching certificate and the Theorem 5 structured witness (proved with
        symbols for sides ``≤ 3``) instead of the expansion.
    layout : {"blocked", "interleaved"}
        Neuron order of the structured witness.
    out : path-like, optional
        Write the expansion's document there (not with ``matching``).

    Returns
    -------
    DetpolyResult

    Raises
    ------
    InputError
        Non-positive sizes or seed, ``out`` with ``matching`` (naming the parameter).
    LimitExceededError
        Expansion beyond ``d_in·d_out = 4``.

    References
    ----------
    A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
    Normalization Layers", COLT 2023, arXiv:2302.07937 (Lemmas 5, 6; Theorem 5).

    See Also
    --------
    check_detpoly : re-check a written document.

    Examples
    --------
    >>> detpoly(2, 2).document["term_count"]
    24
    >>> detpoly(3, 3, matching=True).verified
    True
    """
    from exactnorm.analysis.detpoly import check_detpoly as check_detpoly_document
    from exactnorm.analysis.detpoly import detpoly_document, save_detpoly
    from exactnorm.analysis.witnesses import (
        SYMBOLIC_SIDE_LIMIT,
        matching_certificate,
        prove_structured_symbolic,
        structured_witness,
    )

    require_integer(d_in, "d_in", minimum=1)
    require_integer(d_out, "d_out", minimum=1)
    require_integer(seed, "seed")
    if matching:
        if out is not None:
            raise InputError("out writes the expanded polynomial; not with matching",
                             parameter="out")
        proof = (prove_structured_symbolic(d_in, d_out, layout)
                 if max(d_in, d_out) <= SYMBOLIC_SIDE_LIMIT else None)
        return DetpolyResult(d_in, d_out,
                             matching=matching_certificate(d_in, d_out, seed=seed),
                             structured=structured_witness(d_in, d_out, layout=layout, seed=seed),
                             symbolic=proof)
    doc = detpoly_document(d_in, d_out, seed=seed)
    checked = check_detpoly_document(doc)
    written = save_detpoly(doc, out) if out is not None else None
    return DetpolyResult(d_in, d_out, document=doc, checked=checked, written=written)


def check_detpoly(path: str | os.PathLike[str]) -> DetPolyCheck:
    """Re-check an ``exactnorm.detpoly`` file (``detpoly --check``).

    Raises
    ------
    InvalidCertificateError
        On the first failed rule (one line; nothing in the file is evaluated).
    """
    from exactnorm.analysis.detpoly import check_detpoly_file

    return check_detpoly_file(path)
