"""The expanded determinant ``det(Xᵀ ⊙ Y)`` (SymPy), its file format and its check (docs/model.md).

Contract: :func:`expand_determinant` expands the Khatri–Rao determinant for ``m ≤ 4`` over the
explicit domain ``ZZ[X, Y]`` of ``sympy.polys`` (24 terms of degree 8 at d = 2, one per perfect
matching, every coefficient ±1) with a nonzero integer witness; :func:`detpoly_document` /
:func:`save_detpoly` write it as an ``exactnorm.detpoly`` document whose terms are structured
(``coefficient`` integer, ``monomial`` list of ``[name, exponent]``); :func:`parse_detpoly` /
:func:`load_detpoly` rebuild it with integer arithmetic only (never ``eval``/``sympify``) and
:func:`check_detpoly` re-checks it.

Correctness of the check: the term list must equal the independent plain-Python Leibniz expansion
(:func:`~exactnorm.analysis.detsystem.leibniz_expansion`) term by term, and the witness value must
equal both the polynomial at the point and FLINT's determinant of ``Xᵀ ⊙ Y`` there. A nonzero
value at one point proves the polynomial nonzero (Lemmas 5 and 6 of [1]_).

Ground domains: SymPy's ground types (``python`` or ``flint``) are fixed by
``SYMPY_GROUND_TYPES`` at import; :func:`sympy_ground_types` reports the active one and it is
recorded in every document (docs/model.md). This module is not on the numeric hot path.

References
----------
.. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
   Normalization Layers", COLT 2023, arXiv:2302.07937.

>>> p = expand_determinant(2, 2)
>>> p.degree, p.term_count, sorted(set(p.terms.values()))
(8, 24, [-1, 1])
>>> p.terms == leibniz_expansion(2, 2)
True
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sympy
from flint import fmpz_mat
from sympy.polys.domains import ZZ
from sympy.polys.matrices import DomainMatrix

from exactnorm.analysis.detsystem import (
    EXPANSION_LIMIT,
    check_dims,
    check_expandable,
    leibniz_expansion,
    numeric_system,
    variable_names,
    x_index,
    y_index,
)
from exactnorm.errors import (
    InputError,
    InvalidCertificateError,
    InvariantError,
    LimitExceededError,
    SingularSystemError,
)
from exactnorm.exact.files import atomic_write
from exactnorm.exact.linalg import khatri_rao
from exactnorm.exact.rationals import strict_json_loads, unlimited_int_digits
from exactnorm.exact.sampling import layer_rng, sample_matrix
from exactnorm.version import __version__

__all__ = [
    "DETPOLY_FORMAT",
    "DETPOLY_VERSION",
    "sympy_ground_types",
    "DetPolynomial",
    "expand_determinant",
    "detpoly_witness",
    "detpoly_document",
    "save_detpoly",
    "DetPolyCertificate",
    "DetPolyCheck",
    "parse_detpoly",
    "check_detpoly",
    "load_detpoly",
    "read_detpoly_document",
    "check_detpoly_file",
]

DETPOLY_FORMAT = "exactnorm.detpoly"
DETPOLY_VERSION = 1


_MAX_DETPOLY_BYTES = 1_000_000
_MAX_WITNESS_BITS = 4096



def sympy_ground_types() -> str:
    """SymPy's active ground types (``"python"``, ``"gmpy"`` or ``"flint"``), fixed at import."""
    from sympy.external.gmpy import GROUND_TYPES

    return str(GROUND_TYPES)


@dataclass(frozen=True)
class DetPolynomial:
    """det(Xᵀ ⊙ Y) as an exact term dictionary over :func:`variable_names`.

    ``terms`` maps an exponent vector (one entry per variable, canonical order) to its integer
    coefficient; zero coefficients are never stored.
    """

    d_in: int
    d_out: int
    terms: dict[tuple[int, ...], int]

    @property
    def m(self) -> int:
        return self.d_in * self.d_out

    @property
    def variables(self) -> tuple[str, ...]:
        return variable_names(self.d_in, self.d_out)

    @property
    def degree(self) -> int:
        """Total degree (``2m`` for the determinant: two variables per column)."""
        return max((sum(e) for e in self.terms), default=0)

    @property
    def term_count(self) -> int:
        return len(self.terms)

    def monomial(self, exponents: tuple[int, ...]) -> list[list[Any]]:
        """``[[name, exponent], …]`` of the nonzero exponents, in canonical order."""
        names = self.variables
        return [[names[i], e] for i, e in enumerate(exponents) if e]

    def evaluate(self, point: Mapping[str, int]) -> int:
        """Exact value at an integer point (plain Python integers, no SymPy)."""
        values = [int(point[name]) for name in self.variables]
        total = 0
        for exps, coeff in self.terms.items():
            term = coeff
            for v, e in zip(values, exps):
                if e:
                    term *= v**e
            total += term
        return total

    def to_sympy(self) -> sympy.Expr:
        """The polynomial as a SymPy expression built from ``sympy.Symbol`` and integers only.

        Symbol names come from :func:`variable_names`, never from a file.
        """
        symbols = [sympy.Symbol(n) for n in self.variables]
        total = sympy.Integer(0)
        for exps, coeff in sorted(self.terms.items(), reverse=True):
            term = sympy.Integer(coeff)
            for s, e in zip(symbols, exps):
                if e:
                    term *= s ** sympy.Integer(e)
            total += term
        return total


def _symbolic_system(d_in: int, d_out: int) -> tuple[list[sympy.Symbol], sympy.Matrix]:
    names = variable_names(d_in, d_out)
    symbols = [sympy.Symbol(n) for n in names]
    m = d_in * d_out

    def entry(r: int, k: int) -> sympy.Expr:
        a, b = divmod(r, d_out)
        return symbols[x_index(k, a, d_in)] * symbols[y_index(b, k, d_in, d_out)]

    return symbols, sympy.Matrix(m, m, entry)


def expand_determinant(d_in: int, d_out: int) -> DetPolynomial:
    """Expand ``det(Xᵀ ⊙ Y)`` with SymPy over the explicit domain ``ZZ[X, Y]`` (Lemma 6).

    Parameters
    ----------
    d_in, d_out : int
        Target layer sizes; ``m = d_in·d_out ≤ 4`` (:data:`EXPANSION_LIMIT`).

    Returns
    -------
    DetPolynomial
        ``m!`` terms of total degree ``2m``, coefficients ``±1``: column ``k`` contributes one
        variable of row ``k`` of X and one of column ``k`` of Y, so each permutation gives its own
        monomial and nothing cancels (docs/sparse.md).

    Raises
    ------
    LimitExceededError
        For ``m > 4`` (9! = 362,880 terms at d = 3; docs/model.md).

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Lemma 6).

    See Also
    --------
    exactnorm.analysis.detsystem.leibniz_expansion : the independent expansion it must equal.
    exactnorm.analysis.witnesses.matching_certificate : any size, without expanding.

    Examples
    --------
    >>> p = expand_determinant(1, 2)
    >>> p.term_count, p.degree
    (2, 4)
    """
    d_in, d_out = check_dims(d_in, d_out)
    check_expandable(d_in, d_out)
    symbols, K = _symbolic_system(d_in, d_out)
    ring = ZZ[tuple(symbols)]
    det = DomainMatrix.from_Matrix(K).convert_to(ring).det()
    terms = {tuple(int(e) for e in exps): int(c) for exps, c in det.items() if c}
    return DetPolynomial(d_in, d_out, terms)


def detpoly_witness(d_in: int, d_out: int, *, seed: int = 0, distribution: str = "int:3",
                    max_attempts: int = 50) -> tuple[dict[str, int], int, int]:
    """An integer point where ``det(Xᵀ ⊙ Y) ≠ 0`` (Lemma 5: a nonzero polynomial has one).

    Draws ``X``, ``Y`` from ``layer_rng(seed, 0, attempt)`` until FLINT's exact determinant is
    nonzero. Returns ``(point, value, attempts)``.
    """
    d_in, d_out = check_dims(d_in, d_out)
    m = d_in * d_out
    for attempt in range(max_attempts):
        rng = layer_rng(seed, 0, attempt)
        X = sample_matrix(rng, m, d_in, distribution)
        Y = sample_matrix(rng, d_out, m, distribution)
        if not isinstance(X, fmpz_mat) or not isinstance(Y, fmpz_mat):
            raise InputError(f"the witness needs an integer distribution, got {distribution!r}")
        det = int(khatri_rao(X.transpose(), Y).det())
        if det:
            point = {f"X[{k}][{a}]": int(X[k, a]) for k in range(m) for a in range(d_in)}
            point.update({f"Y[{b}][{k}]": int(Y[b, k]) for b in range(d_out) for k in range(m)})
            return {n: point[n] for n in variable_names(d_in, d_out)}, det, attempt + 1
    raise SingularSystemError(f"no nonsingular draw in {max_attempts} attempts",
                              rank=-1, size=m)


def detpoly_document(d_in: int, d_out: int, *, seed: int = 0) -> dict[str, Any]:
    """The ``exactnorm.detpoly`` version-1 certificate for ``det(Xᵀ ⊙ Y)`` (docs/model.md).

    Terms are structured (``coefficient`` integer, ``monomial`` list of ``[name, exponent]``) so
    that reading them back needs no expression parser.
    """
    poly = expand_determinant(d_in, d_out)
    point, value, attempts = detpoly_witness(poly.d_in, poly.d_out, seed=seed)
    if poly.evaluate(point) != value:  # two independent evaluations must agree
        raise InvariantError("expanded polynomial disagrees with the FLINT determinant")
    return {
        "format": DETPOLY_FORMAT,
        "version": DETPOLY_VERSION,
        "statement": "det(K) for K = X^T ⊙ Y, K[a*d_out+b][k] = X[k][a]*Y[b][k] "
                     "(X = V_in is m×d_in, Y = V_out is d_out×m, m = d_in*d_out)",
        "d_in": poly.d_in,
        "d_out": poly.d_out,
        "m": poly.m,
        "degree": poly.degree,
        "term_count": poly.term_count,
        "variables": list(poly.variables),
        "terms": [{"coefficient": c, "monomial": poly.monomial(e)}
                  for e, c in sorted(poly.terms.items(), reverse=True)],
        "witness": {"point": point, "value": value},
        "provenance": {"exactnorm": __version__, "sympy": sympy.__version__,
                       "sympy_ground_types": sympy_ground_types(), "seed": seed,
                       "distribution": "int:3", "attempts": attempts},
    }


def save_detpoly(doc: dict[str, Any], path: str | os.PathLike[str]) -> int:
    """Write a detpoly document atomically; returns the number of bytes."""
    with unlimited_int_digits():
        text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    return atomic_write(path, text)


# --------------------------------------------------------------------- reading it back


@dataclass(frozen=True)
class DetPolyCertificate:
    """A parsed detpoly document: the polynomial, the witness point and its claimed value."""

    poly: DetPolynomial
    point: dict[str, int]
    value: int
    claimed_degree: int
    claimed_term_count: int

    def sympy_expr(self) -> sympy.Expr:
        return self.poly.to_sympy()


@dataclass(frozen=True)
class DetPolyCheck:
    """What :func:`check_detpoly` verified."""

    d_in: int
    d_out: int
    degree: int
    term_count: int
    witness_value: int

    @property
    def message(self) -> str:
        return (f"det(Xᵀ ⊙ Y) at d_in={self.d_in}, d_out={self.d_out}: {self.term_count} terms "
                f"of degree {self.degree}, coefficients ±1, equal to the Leibniz expansion; "
                f"witness value {self.witness_value} ≠ 0 (FLINT det agrees)")


def _short(x: Any, limit: int = 60) -> str:
    s = repr(x)
    return s if len(s) <= limit else s[:limit] + "…"


def _bad(msg: str) -> InvalidCertificateError:
    return InvalidCertificateError(f"detpoly certificate rejected: {msg}")


def _int_field(obj: Mapping[str, Any], key: str, where: str) -> int:
    if key not in obj:
        raise _bad(f"{where} has no {key!r}")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(f"{where}.{key} must be a JSON integer, got {_short(v)}")
    if v.bit_length() > _MAX_WITNESS_BITS:
        raise _bad(f"{where}.{key} has more than {_MAX_WITNESS_BITS} bits")
    return v


_TOP_KEYS = {"format", "version", "statement", "d_in", "d_out", "m", "degree", "term_count",
             "variables", "terms", "witness", "provenance"}


def parse_detpoly(doc: Any) -> DetPolyCertificate:
    """Validate a detpoly document's structure and rebuild it with integer arithmetic only.

    Variable names are looked up in the canonical table of :func:`variable_names`; anything else
    (a code string, an out-of-range index) is refused before any arithmetic happens. Nothing is
    ever passed to ``eval``, ``sympify`` or a parser.

    Raises
    ------
    InvalidCertificateError
        With a one-line message naming the offending field.
    """
    if not isinstance(doc, dict):
        raise _bad("the document is not a JSON object")
    if doc.get("format") != DETPOLY_FORMAT:
        raise _bad(f"format must be {DETPOLY_FORMAT!r}, got {_short(doc.get('format'))}")
    if _int_field(doc, "version", "document") != DETPOLY_VERSION:
        raise _bad(f"unsupported version {doc['version']} (this reader knows {DETPOLY_VERSION})")
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise _bad(f"unknown field {_short(unknown[0])}")
    d_in, d_out = _int_field(doc, "d_in", "document"), _int_field(doc, "d_out", "document")
    if d_in < 1 or d_out < 1:
        raise _bad("d_in and d_out must be positive")
    m = d_in * d_out
    if m > EXPANSION_LIMIT:
        raise _bad(f"d_in·d_out = {m} exceeds the expansion limit {EXPANSION_LIMIT}")
    if _int_field(doc, "m", "document") != m:
        raise _bad(f"m = {doc['m']} but d_in·d_out = {m}")
    names = variable_names(d_in, d_out)
    index = {n: i for i, n in enumerate(names)}
    if doc.get("variables") != list(names):
        raise _bad("variables differ from the canonical list X[k][a], Y[b][k]")
    terms_in = doc.get("terms")
    if not isinstance(terms_in, list):
        raise _bad("terms must be a list")
    if len(terms_in) > 2 * math.factorial(m):
        raise _bad(f"{len(terms_in)} terms, more than any determinant of size {m} has")
    terms: dict[tuple[int, ...], int] = {}
    for t, term in enumerate(terms_in):
        where = f"terms[{t}]"
        if not isinstance(term, dict) or set(term) != {"coefficient", "monomial"}:
            raise _bad(f"{where} must have exactly the keys 'coefficient' and 'monomial'")
        coeff = _int_field(term, "coefficient", where)
        if coeff == 0:
            raise _bad(f"{where} has coefficient 0")
        mono = term["monomial"]
        if not isinstance(mono, list) or len(mono) > len(names):
            raise _bad(f"{where}.monomial must be a list of [name, exponent] pairs")
        exps = [0] * len(names)
        for f, factor in enumerate(mono):
            fw = f"{where}.monomial[{f}]"
            if not isinstance(factor, list) or len(factor) != 2:
                raise _bad(f"{fw} must be a [name, exponent] pair")
            name, e = factor
            if not isinstance(name, str) or name not in index:
                raise _bad(f"{fw} names unknown variable {_short(name)}")
            if isinstance(e, bool) or not isinstance(e, int) or not 1 <= e <= 2 * m:
                raise _bad(f"{fw} exponent must be an integer in [1, {2 * m}], got {_short(e)}")
            if exps[index[name]]:
                raise _bad(f"{fw} repeats variable {name}")
            exps[index[name]] = e
        key = tuple(exps)
        if key in terms:
            raise _bad(f"{where} repeats an earlier monomial")
        terms[key] = coeff
    witness = doc.get("witness")
    if not isinstance(witness, dict) or set(witness) != {"point", "value"}:
        raise _bad("witness must have exactly the keys 'point' and 'value'")
    point_in = witness["point"]
    if not isinstance(point_in, dict) or set(point_in) != set(names):
        raise _bad("witness.point must assign an integer to every variable and nothing else")
    point = {n: _int_field(point_in, n, "witness.point") for n in names}
    value = _int_field(witness, "value", "witness")
    return DetPolyCertificate(DetPolynomial(d_in, d_out, terms), point, value,
                              _int_field(doc, "degree", "document"),
                              _int_field(doc, "term_count", "document"))


def check_detpoly(doc: Any) -> DetPolyCheck:
    """Check a detpoly document: re-expand independently, compare, re-evaluate the witness.

    1. :func:`parse_detpoly` (structure; integer arithmetic only).
    2. The term list must equal :func:`leibniz_expansion` exactly (plain Python, not SymPy):
       no missing term, no extra term, no changed coefficient.
    3. Every coefficient is ±1, every term has degree ``2m``, and the stated degree and term count
       are the true ones.
    4. The witness value is the polynomial at the point (integers), is nonzero, and equals FLINT's
       determinant of ``Xᵀ ⊙ Y`` at the point.

    Raises
    ------
    InvalidCertificateError
        On the first failed rule, with a one-line message.

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Lemmas 5, 6).

    See Also
    --------
    parse_detpoly : the structural part alone.
    check_detpoly_file : the same on a file.

    Examples
    --------
    >>> doc = detpoly_document(1, 2)
    >>> check_detpoly(doc).term_count
    2
    >>> doc["terms"][0]["coefficient"] *= -1
    >>> check_detpoly(doc)
    Traceback (most recent call last):
    ...
    exactnorm.errors.InvalidCertificateError: detpoly certificate rejected: coefficient of ...
    """
    cert = parse_detpoly(doc)
    poly = cert.poly
    names = poly.variables
    reference = leibniz_expansion(poly.d_in, poly.d_out)

    def show(exps: tuple[int, ...]) -> str:
        return "·".join(n if e == 1 else f"{n}^{e}" for n, e in zip(names, exps) if e)

    for exps, coeff in poly.terms.items():
        if exps not in reference:
            raise _bad(f"extra term {coeff}·{show(exps)} is not in the determinant")
        if reference[exps] != coeff:
            raise _bad(f"coefficient of {show(exps)} is {coeff}, the determinant has "
                       f"{reference[exps]}")
    missing = [e for e in reference if e not in poly.terms]
    if missing:
        raise _bad(f"term {show(missing[0])} of the determinant is missing")
    if any(c not in (1, -1) for c in poly.terms.values()):
        raise _bad("a coefficient is not ±1")
    if any(sum(e) != 2 * poly.m for e in poly.terms):
        raise _bad(f"a term does not have degree 2m = {2 * poly.m}")
    if cert.claimed_degree != poly.degree:
        raise _bad(f"stated degree {cert.claimed_degree}, true degree {poly.degree}")
    if cert.claimed_term_count != poly.term_count:
        raise _bad(f"stated term count {cert.claimed_term_count}, true count {poly.term_count}")
    value = poly.evaluate(cert.point)
    if value != cert.value:
        raise _bad(f"witness value {cert.value} but the polynomial evaluates to {value}")
    if value == 0:
        raise _bad("the witness point is a zero of the determinant")
    flint_value = int(numeric_system(cert.point, poly.d_in, poly.d_out).det())
    if flint_value != value:
        raise _bad(f"FLINT determinant at the witness is {flint_value}, not {value}")
    return DetPolyCheck(poly.d_in, poly.d_out, poly.degree, poly.term_count, value)


def read_detpoly_document(path: str | os.PathLike[str]) -> Any:
    """Read a detpoly file strictly (no floats, no duplicate keys, size-limited); no checking."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(_MAX_DETPOLY_BYTES + 1)
    except OSError as exc:
        raise InvalidCertificateError(f"cannot read detpoly certificate {p}: {exc}") from None
    if len(raw) > _MAX_DETPOLY_BYTES:
        raise LimitExceededError(f"detpoly certificate {p} exceeds {_MAX_DETPOLY_BYTES} bytes")
    try:
        return strict_json_loads(raw, what=f"detpoly certificate {p}")
    except InputError as exc:
        raise InvalidCertificateError(str(exc)) from None


def load_detpoly(path: str | os.PathLike[str], *, verify: bool = True) -> DetPolyCertificate:
    """Read a detpoly file and rebuild the polynomial from its structured term list.

    The polynomial is rebuilt by :func:`parse_detpoly` (canonical names, integer arithmetic);
    with ``verify`` (the default) the document is first checked by :func:`check_detpoly`. Use
    ``DetPolyCertificate.sympy_expr()`` for a SymPy expression made from ``sympy.Symbol`` and
    integers only.

    Raises
    ------
    InvalidCertificateError
        For an unreadable, malformed or tampered file (one line, nothing evaluated).
    """
    doc = read_detpoly_document(path)
    if verify:
        check_detpoly(doc)
    return parse_detpoly(doc)


def check_detpoly_file(path: str | os.PathLike[str]) -> DetPolyCheck:
    """:func:`check_detpoly` on a file read by :func:`read_detpoly_document`."""
    return check_detpoly(read_detpoly_document(path))
