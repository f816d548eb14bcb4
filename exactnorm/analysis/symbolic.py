"""Symbolic certificates (SPEC §4): det(Xᵀ ⊙ Y) is not the zero polynomial, and what follows.

The measure-zero lemmas (Lemma 5, Lemma 6 of the source) rest on one fact: for the frozen pair
``X = V_in`` (m×d_in) and ``Y = V_out`` (d_out×m) with ``m = d_in·d_out``, the determinant of the
Khatri–Rao system ``K = Xᵀ ⊙ Y`` (entry ``(a·d_out + b, k)`` is ``X[k][a]·Y[b][k]``, so that
``vec(Y diag(γ) X) = K γ`` column-major) is a nonzero polynomial in the entries. This module turns
that fact into artifacts anyone can check:

* :func:`expand_determinant` — the expanded polynomial with SymPy for ``m ≤ 4`` (24 terms of degree
  8 at d = 2, one per perfect matching, every coefficient ±1), with a nonzero integer witness;
  :func:`detpoly_document` / :func:`load_detpoly` / :func:`check_detpoly` write, rebuild (from a
  structured term list, never ``eval``/``sympify``) and re-check it against an independent pure
  Python Leibniz expansion (:func:`leibniz_expansion`).
* :func:`matching_certificate` — any size: one monomial with coefficient ±1 (the identity-like
  perfect matching) and an exact nonzero evaluation (FLINT determinant and rank modulo a prime).
* :func:`structured_witness` / :func:`prove_structured_symbolic` — Theorem 5: with the neurons in
  d_in groups whose input rows are ``e_kᵀ`` and whose output columns form an invertible ``B``,
  ``K = (I ⊗ B)·P`` for a permutation matrix ``P`` and ``det K = sign(P)·det(B)^{d_in}``.
* :func:`exhaustive_singularity` — the exact probability that a uniform draw from ``S`` is
  singular, by exhaustive enumeration, beside the Schwartz–Zippel bound ``2m/|S|`` (Lemma 5).
* :func:`cramer_gamma` — the closed-form Γ of Lemma 8 (Cramer's rule) for a symbolic target W.
* :func:`decide_realizable` — below width d_in·d_out: W is reachable iff
  ``rank K = rank [K | vec W]`` (Rouché–Capelli, Theorem 7); the reachable W form a linear subspace
  of dimension ``rank K``. Both answers come with an exact witness.

Ground domains: SymPy computations run over the explicit domains ``ZZ[...]``/``QQ[...]`` of
``sympy.polys``; numeric checks use ``fmpz_mat`` from python-flint; the witness evaluation and the
Leibniz expansion are plain Python integers. SymPy's ground types (``python`` or ``flint``) are
fixed by ``SYMPY_GROUND_TYPES`` at import; :func:`sympy_ground_types` reports the active one and it
is recorded in every document (SPEC §8). This module is not on the numeric hot path.

>>> p = expand_determinant(2, 2)
>>> p.degree, p.term_count, sorted(set(p.terms.values()))
(8, 24, [-1, 1])
>>> p.terms == leibniz_expansion(2, 2)
True
>>> w = structured_witness(3, 2, layout="interleaved", B=[[2, 1], [1, 1]])
>>> w.sign, w.det_B, w.det_K, w.verified
(-1, 1, -1, True)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import sympy
from flint import fmpq, fmpq_mat, fmpz_mat
from sympy.polys.domains import QQ, ZZ
from sympy.polys.matrices import DomainMatrix

from exactnorm import __version__
from exactnorm.errors import (
    InputError,
    InvalidCertificateError,
    LimitExceededError,
    ShapeError,
    SingularSystemError,
)
from exactnorm.exact.linalg import (
    FlintMatrix,
    exact_rank,
    khatri_rao,
    kronecker,
    random_prime,
    rank_mod_prime,
    to_fmpq_mat,
    to_fractions,
    vec,
)
from exactnorm.exact.rationals import strict_json_loads, unlimited_int_digits
from exactnorm.exact.sampling import layer_rng, sample_matrix

__all__ = [
    "DETPOLY_FORMAT",
    "DETPOLY_VERSION",
    "EXPANSION_LIMIT",
    "sympy_ground_types",
    "variable_names",
    "DetPolynomial",
    "expand_determinant",
    "leibniz_expansion",
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
    "permutation_sign",
    "MatchingCertificate",
    "matching_certificate",
    "structured_frozen",
    "interleaved_sign_formula",
    "StructuredWitness",
    "structured_witness",
    "StructuredSymbolicProof",
    "prove_structured_symbolic",
    "SingularityCount",
    "exhaustive_singularity",
    "CramerSolution",
    "cramer_gamma",
    "Realizability",
    "decide_realizable",
    "reachable_target",
]

DETPOLY_FORMAT = "exactnorm.detpoly"
DETPOLY_VERSION = 1

#: Largest m = d_in·d_out whose determinant is expanded (m! terms; SPEC §8: 9! = 362,880 at d = 3).
EXPANSION_LIMIT = 4

#: Largest m for the matching certificate's exact FLINT determinant (overridable).
MATCHING_LIMIT = 1024

#: Largest d_in, d_out for the symbolic Theorem 5 proof and m for the symbolic Cramer solution.
SYMBOLIC_SIDE_LIMIT = 3
CRAMER_LIMIT = 9

#: Exhaustive enumeration refuses more assignments than this.
EXHAUSTIVE_LIMIT = 60_000_000

_MAX_DETPOLY_BYTES = 1_000_000
_MAX_WITNESS_BITS = 4096
_LAYOUTS = ("blocked", "interleaved")


def sympy_ground_types() -> str:
    """SymPy's active ground types (``"python"``, ``"gmpy"`` or ``"flint"``), fixed at import."""
    from sympy.external.gmpy import GROUND_TYPES

    return str(GROUND_TYPES)


def _check_dims(d_in: Any, d_out: Any) -> tuple[int, int]:
    for name, d in (("d_in", d_in), ("d_out", d_out)):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise InputError(f"{name} must be a positive integer, got {d!r}")
    return int(d_in), int(d_out)


def _check_expandable(d_in: int, d_out: int) -> int:
    m = d_in * d_out
    if m > EXPANSION_LIMIT:
        raise LimitExceededError(
            f"expanding det(Xᵀ ⊙ Y) is limited to d_in·d_out ≤ {EXPANSION_LIMIT} (got "
            f"{d_in}·{d_out} = {m}: {math.factorial(m):,} terms); use the matching certificate "
            f"(exactnorm detpoly --matching) instead")
    return m


def variable_names(d_in: int, d_out: int) -> tuple[str, ...]:
    """Canonical variable order: ``X[k][a]`` (k < m, a < d_in), then ``Y[b][k]`` (b < d_out).

    >>> variable_names(1, 1)
    ('X[0][0]', 'Y[0][0]')
    """
    d_in, d_out = _check_dims(d_in, d_out)
    m = d_in * d_out
    xs = [f"X[{k}][{a}]" for k in range(m) for a in range(d_in)]
    ys = [f"Y[{b}][{k}]" for b in range(d_out) for k in range(m)]
    return tuple(xs + ys)


def _x_index(k: int, a: int, d_in: int) -> int:
    return k * d_in + a


def _y_index(b: int, k: int, d_in: int, d_out: int) -> int:
    m = d_in * d_out
    return m * d_in + b * m + k


def permutation_sign(perm: Sequence[int]) -> int:
    """Sign of a permutation of ``0..n-1`` from its cycle decomposition: ``(-1)^(n − #cycles)``.

    >>> permutation_sign([1, 0, 2]), permutation_sign([1, 2, 0])
    (-1, 1)
    """
    n = len(perm)
    if sorted(perm) != list(range(n)):
        raise InputError("not a permutation of 0..n-1")
    seen = [False] * n
    cycles = 0
    for start in range(n):
        if not seen[start]:
            cycles += 1
            j = start
            while not seen[j]:
                seen[j] = True
                j = perm[j]
    return -1 if (n - cycles) % 2 else 1


# --------------------------------------------------------------------- the expanded polynomial


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
        return symbols[_x_index(k, a, d_in)] * symbols[_y_index(b, k, d_in, d_out)]

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
        monomial and nothing cancels (SPEC §2.4).

    Raises
    ------
    LimitExceededError
        For ``m > 4`` (9! = 362,880 terms at d = 3; SPEC §8).

    Examples
    --------
    >>> p = expand_determinant(1, 2)
    >>> p.term_count, p.degree
    (2, 4)
    """
    d_in, d_out = _check_dims(d_in, d_out)
    _check_expandable(d_in, d_out)
    symbols, K = _symbolic_system(d_in, d_out)
    ring = ZZ[tuple(symbols)]
    det = DomainMatrix.from_Matrix(K).convert_to(ring).det()
    terms = {tuple(int(e) for e in exps): int(c) for exps, c in det.items() if c}
    return DetPolynomial(d_in, d_out, terms)


def leibniz_expansion(d_in: int, d_out: int) -> dict[tuple[int, ...], int]:
    """``det(Xᵀ ⊙ Y)`` by the Leibniz formula in plain Python (independent of SymPy).

    ``det K = Σ_π sgn(π) ∏_k K[π(k), k]`` with ``K[a·d_out + b, k] = X[k][a]·Y[b][k]``; the sign is
    the parity of the inversion count (not the cycle count used elsewhere).
    """
    d_in, d_out = _check_dims(d_in, d_out)
    m = _check_expandable(d_in, d_out)
    nvars = m * d_in + d_out * m
    terms: dict[tuple[int, ...], int] = {}
    for perm in itertools.permutations(range(m)):
        inversions = sum(1 for i in range(m) for j in range(i + 1, m) if perm[i] > perm[j])
        exps = [0] * nvars
        for k, row in enumerate(perm):
            a, b = divmod(row, d_out)
            exps[_x_index(k, a, d_in)] += 1
            exps[_y_index(b, k, d_in, d_out)] += 1
        key = tuple(exps)
        terms[key] = terms.get(key, 0) + (-1 if inversions % 2 else 1)
    return {k: c for k, c in terms.items() if c}


def _numeric_system(point: Mapping[str, int], d_in: int, d_out: int) -> fmpz_mat:
    m = d_in * d_out
    X = fmpz_mat([[int(point[f"X[{k}][{a}]"]) for a in range(d_in)] for k in range(m)])
    Y = fmpz_mat([[int(point[f"Y[{b}][{k}]"]) for k in range(m)] for b in range(d_out)])
    return khatri_rao(X.transpose(), Y)


def detpoly_witness(d_in: int, d_out: int, *, seed: int = 0, distribution: str = "int:3",
                    max_attempts: int = 50) -> tuple[dict[str, int], int, int]:
    """An integer point where ``det(Xᵀ ⊙ Y) ≠ 0`` (Lemma 5: a nonzero polynomial has one).

    Draws ``X``, ``Y`` from ``layer_rng(seed, 0, attempt)`` until FLINT's exact determinant is
    nonzero. Returns ``(point, value, attempts)``.
    """
    d_in, d_out = _check_dims(d_in, d_out)
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
    """The ``exactnorm.detpoly`` version-1 certificate for ``det(Xᵀ ⊙ Y)`` (SPEC §4).

    Terms are structured (``coefficient`` integer, ``monomial`` list of ``[name, exponent]``) so
    that reading them back needs no expression parser.
    """
    poly = expand_determinant(d_in, d_out)
    point, value, attempts = detpoly_witness(poly.d_in, poly.d_out, seed=seed)
    if poly.evaluate(point) != value:  # two independent evaluations must agree
        raise AssertionError("expanded polynomial disagrees with the FLINT determinant")
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


def save_detpoly(doc: dict[str, Any], path: str | Path) -> int:
    """Write a detpoly document atomically; returns the number of bytes."""
    import json

    from exactnorm.exact.files import atomic_write_bytes

    with unlimited_int_digits():
        data = (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode()
    atomic_write_bytes(path, lambda fh: fh.write(data))
    return len(data)


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
    flint_value = int(_numeric_system(cert.point, poly.d_in, poly.d_out).det())
    if flint_value != value:
        raise _bad(f"FLINT determinant at the witness is {flint_value}, not {value}")
    return DetPolyCheck(poly.d_in, poly.d_out, poly.degree, poly.term_count, value)


def read_detpoly_document(path: str | Path) -> Any:
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


def load_detpoly(path: str | Path, *, verify: bool = True) -> DetPolyCertificate:
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


def check_detpoly_file(path: str | Path) -> DetPolyCheck:
    """:func:`check_detpoly` on a file read by :func:`read_detpoly_document`."""
    return check_detpoly(read_detpoly_document(path))


# --------------------------------------------------------------------- matching certificate


@dataclass(frozen=True)
class MatchingCertificate:
    """det(Xᵀ ⊙ Y) ≢ 0 at any size: one monomial with coefficient ±1 and a nonzero evaluation.

    ``coefficient`` is FLINT's determinant at the 0/1 point that sets exactly the monomial's
    variables to 1 (which isolates that coefficient, see :func:`matching_certificate`);
    ``det_value`` is the exact determinant at a seeded integer point, and ``rank_mod_prime = m``
    modulo the checked prime ``prime`` proves it nonzero a second, independent way.
    """

    d_in: int
    d_out: int
    rows_of_columns: tuple[int, ...]
    monomial: tuple[str, ...]
    coefficient: int
    permutation_sign: int
    seed: int
    distribution: str
    attempts: int
    det_value: int
    prime: int
    rank_mod_prime: int

    @property
    def m(self) -> int:
        return self.d_in * self.d_out

    @property
    def degree(self) -> int:
        return 2 * self.m

    @property
    def det_bits(self) -> int:
        return abs(self.det_value).bit_length()

    @property
    def verified(self) -> bool:
        return (self.coefficient in (1, -1) and self.coefficient == self.permutation_sign
                and self.det_value != 0 and self.rank_mod_prime == self.m)


def matching_certificate(d_in: int, d_out: int, *, seed: int = 0, distribution: str = "int:8",
                         max_attempts: int = 20, max_m: int = MATCHING_LIMIT
                         ) -> MatchingCertificate:
    """Certify ``det(Xᵀ ⊙ Y) ≢ 0`` for any size without expanding it (SPEC §4, Lemma 6).

    The identity-like matching pairs column ``k`` with row ``k = a_k·d_out + b_k``; its monomial is
    ``∏_k X[k][a_k]·Y[b_k][k]``. Setting these ``2m`` variables to 1 and all others to 0 makes
    every other monomial vanish: a monomial of det K takes exactly one ``X[k][·]`` and one
    ``Y[·][k]`` per column ``k``, and only one of each is nonzero here. So the determinant at
    that point *is* the coefficient, which must be the sign of the matching (here the identity, +1).
    A nonzero coefficient means a nonzero polynomial; the seeded integer point with exact FLINT
    determinant ≠ 0 (and full rank modulo a checked prime) is the explicit evaluation witness.

    Raises
    ------
    LimitExceededError
        For ``m > max_m``.

    Examples
    --------
    >>> c = matching_certificate(3, 3)
    >>> c.coefficient, c.degree, c.verified
    (1, 18, True)
    """
    d_in, d_out = _check_dims(d_in, d_out)
    m = d_in * d_out
    if m > max_m:
        raise LimitExceededError(f"matching certificate limited to m ≤ {max_m}, got {m} "
                                 f"(raise max_m)")
    rows_of_columns = tuple(range(m))
    X0 = fmpz_mat(m, d_in)
    Y0 = fmpz_mat(d_out, m)
    names = []
    for k, row in enumerate(rows_of_columns):
        a, b = divmod(row, d_out)
        X0[k, a] = 1
        Y0[b, k] = 1
        names += [f"X[{k}][{a}]", f"Y[{b}][{k}]"]
    coefficient = int(khatri_rao(X0.transpose(), Y0).det())
    sign = permutation_sign(rows_of_columns)
    for attempt in range(max_attempts):
        rng = layer_rng(seed, d_in, d_out, attempt)
        X = sample_matrix(rng, m, d_in, distribution)
        Y = sample_matrix(rng, d_out, m, distribution)
        K = khatri_rao(X.transpose(), Y)
        if isinstance(K, fmpq_mat):
            raise InputError(f"the evaluation witness needs integers, got {distribution!r}")
        det = int(K.det())
        if not det:
            continue
        prime = random_prime(62, rng)
        while det % prime == 0:  # a prime dividing det would hide full rank
            prime = random_prime(62, rng)
        return MatchingCertificate(d_in, d_out, rows_of_columns, tuple(names), coefficient, sign,
                                   seed, distribution, attempt + 1, det, prime,
                                   rank_mod_prime(K, prime))
    raise SingularSystemError(f"no nonsingular draw in {max_attempts} attempts", rank=-1, size=m)


# --------------------------------------------------------------------- Theorem 5 witness


def structured_frozen(B: Sequence[Sequence[Any]], d_in: int, layout: str = "blocked"
                      ) -> tuple[list[list[int]], list[list[Any]], list[int]]:
    """The frozen pair of the Theorem 5 witness, for any entry type (integers or SymPy symbols).

    Neuron ``n`` belongs to group ``g`` at position ``j`` — ``n = g·d_out + j`` (``"blocked"``)
    or ``n = j·d_in + g`` (``"interleaved"``). Its input row is ``e_gᵀ`` and its output column is
    ``B[:, j]``, so column ``n`` of ``K = Xᵀ ⊙ Y`` is ``e_g ⊗ B[:, j]``, which is column
    ``σ(n) = g·d_out + j`` of ``I_{d_in} ⊗ B``: ``K = (I ⊗ B)·P`` with ``P[σ(n), n] = 1``.

    Returns
    -------
    (V_in rows (m×d_in, 0/1), V_out rows (d_out×m), σ as a list)
    """
    d_out = len(B)
    if d_out == 0 or any(len(r) != d_out for r in B):
        raise ShapeError("B must be a nonempty square matrix")
    if layout not in _LAYOUTS:
        raise InputError(f"layout must be one of {', '.join(_LAYOUTS)}, got {layout!r}")
    m = d_in * d_out
    V_in = [[0] * d_in for _ in range(m)]
    V_out: list[list[Any]] = [[0] * m for _ in range(d_out)]
    sigma = [0] * m
    for g in range(d_in):
        for j in range(d_out):
            n = g * d_out + j if layout == "blocked" else j * d_in + g
            V_in[n][g] = 1
            for b in range(d_out):
                V_out[b][n] = B[b][j]
            sigma[n] = g * d_out + j
    return V_in, V_out, sigma


def interleaved_sign_formula(d_in: int, d_out: int) -> int:
    """Closed-form sign of the interleaved layout: ``(-1)^{C(d_in,2)·C(d_out,2)}``.

    σ is the perfect shuffle (the permutation taking vec of a d_out×d_in array to vec of its
    transpose); it is stated here so that tests can compare it with a cycle count.
    """
    return -1 if (math.comb(d_in, 2) * math.comb(d_out, 2)) % 2 else 1


@dataclass(frozen=True)
class StructuredWitness:
    """Exact check of Theorem 5 at one size.

    ``K = (I ⊗ B)·P`` entry by entry, and ``det K = sign(P)·det(B)^{d_in}``.
    """

    d_in: int
    d_out: int
    layout: str
    B: tuple[tuple[int, ...], ...]
    det_B: int
    sign: int
    det_K: int
    kron_identity: bool

    @property
    def m(self) -> int:
        return self.d_in * self.d_out

    @property
    def verified(self) -> bool:
        return self.kron_identity and self.det_K == self.sign * self.det_B**self.d_in


def _invertible_B(d_out: int, seed: int) -> fmpz_mat:
    for attempt in range(100):
        B = sample_matrix(layer_rng(seed, 5, d_out, attempt), d_out, d_out, "int:3")
        if B.det() != 0:
            return B
    raise SingularSystemError("no invertible B found", rank=-1, size=d_out)  # pragma: no cover


def structured_witness(d_in: int, d_out: int, *, layout: str = "blocked",
                       B: Sequence[Sequence[int]] | None = None, seed: int = 0
                       ) -> StructuredWitness:
    """Check Theorem 5 exactly for integer ``B`` (FLINT determinants, any size).

    With ``B=None`` an invertible ``B`` is drawn from ``int:3`` with ``layer_rng(seed, 5, d_out,
    attempt)``. Checks ``K == (I ⊗ B)·P`` entry by entry and computes ``det K`` directly, to be
    compared with ``sign(σ)·det(B)^{d_in}`` (:attr:`StructuredWitness.verified`).
    """
    d_in, d_out = _check_dims(d_in, d_out)
    Bm = _invertible_B(d_out, seed) if B is None else fmpz_mat([[int(x) for x in r] for r in B])
    if Bm.nrows() != d_out or Bm.ncols() != d_out:
        raise ShapeError(f"B must be {d_out}×{d_out}")
    V_in, V_out, sigma = structured_frozen(Bm.tolist(), d_in, layout)
    K = khatri_rao(fmpz_mat(V_in).transpose(), fmpz_mat(V_out))
    m = d_in * d_out
    P = fmpz_mat(m, m)
    for n, s in enumerate(sigma):
        P[s, n] = 1
    identity = fmpz_mat([[int(i == j) for j in range(d_in)] for i in range(d_in)])
    kron_ok = kronecker(identity, Bm) * P == K
    return StructuredWitness(d_in, d_out, layout, tuple(tuple(int(x) for x in r)
                                                        for r in Bm.tolist()),
                             int(Bm.det()), permutation_sign(sigma), int(K.det()), bool(kron_ok))


@dataclass(frozen=True)
class StructuredSymbolicProof:
    """Symbolic Theorem 5 at one size: identities in ``ZZ[B]`` for a matrix of symbols ``B``."""

    d_in: int
    d_out: int
    layout: str
    sign: int
    kron_identity: bool
    det_identity: bool
    det_terms: int
    ground_types: str

    @property
    def proved(self) -> bool:
        return self.kron_identity and self.det_identity


def prove_structured_symbolic(d_in: int, d_out: int, layout: str = "blocked"
                              ) -> StructuredSymbolicProof:
    """Prove ``K = (I ⊗ B)·P`` and ``det K = sign(P)·det(B)^{d_in}`` with ``B`` symbolic.

    ``B[i][j]`` are SymPy symbols; ``K`` is built from the frozen pair of
    :func:`structured_frozen` by the Khatri–Rao definition, the matrix identity is checked entry by
    entry, and the determinant identity is an equality of polynomials in ``ZZ[B]`` (DomainMatrix
    determinants). Sizes ``d_in, d_out ≤ 3``.

    >>> prove_structured_symbolic(2, 2, "interleaved").proved
    True
    """
    d_in, d_out = _check_dims(d_in, d_out)
    if max(d_in, d_out) > SYMBOLIC_SIDE_LIMIT:
        raise LimitExceededError(f"symbolic Theorem 5 proof limited to d_in, d_out ≤ "
                                 f"{SYMBOLIC_SIDE_LIMIT}; use structured_witness for larger sizes")
    B = sympy.Matrix(d_out, d_out, lambda i, j: sympy.Symbol(f"B[{i}][{j}]"))
    V_in, V_out, sigma = structured_frozen(B.tolist(), d_in, layout)
    m = d_in * d_out
    K = sympy.Matrix(m, m, lambda r, n: V_in[n][r // d_out] * V_out[r % d_out][n])
    P = sympy.zeros(m, m)
    for n, s in enumerate(sigma):
        P[s, n] = 1
    kron_ok = (K - sympy.kronecker_product(sympy.eye(d_in), B) * P).is_zero_matrix
    ring = ZZ[tuple(B)]
    det_K = DomainMatrix.from_Matrix(K).convert_to(ring).det()
    det_B = DomainMatrix.from_Matrix(B).convert_to(ring).det()
    sign = permutation_sign(sigma)
    det_ok = det_K == ring.convert(sign) * det_B**d_in
    return StructuredSymbolicProof(d_in, d_out, layout, sign, bool(kron_ok), bool(det_ok),
                                   len(det_K), sympy_ground_types())


# --------------------------------------------------------------------- Schwartz–Zippel


@dataclass(frozen=True)
class SingularityCount:
    """Exhaustive singularity count of ``Xᵀ ⊙ Y`` with entries uniform on ``values`` (Lemma 5)."""

    d_in: int
    d_out: int
    values: tuple[int, ...]
    assignments: int
    singular: int

    @property
    def m(self) -> int:
        return self.d_in * self.d_out

    @property
    def degree(self) -> int:
        return 2 * self.m

    @property
    def probability(self) -> Fraction:
        return Fraction(self.singular, self.assignments)

    @property
    def bound(self) -> Fraction:
        """Schwartz–Zippel: ``P(det = 0) ≤ 2m/|S|`` (capped at 1)."""
        return min(Fraction(self.degree, len(self.values)), Fraction(1))


def _all_assignments(values: np.ndarray, nvars: int) -> np.ndarray:
    s = len(values)
    idx = np.indices((s,) * nvars, dtype=np.int64).reshape(nvars, -1).T
    return values[idx] if nvars else np.zeros((1, 0), dtype=np.int64)


def exhaustive_singularity(d_in: int, d_out: int, values: Sequence[int], *,
                           chunk_entries: int = 1 << 22) -> SingularityCount:
    """Count the assignments of ``X``, ``Y`` with entries in ``S`` where ``det(Xᵀ ⊙ Y) = 0``.

    All ``|S|^{m·d_in + d_out·m}`` assignments are enumerated (``m ≤ 4``).

    The expanded determinant (``m ≤ 4``) is split as ``Σ_α x^α·q_α(y)`` with the X-monomials
    ``x^α`` grouped; then the determinant at every pair (X assignment, Y assignment) is the
    integer matrix product ``A·Q`` with ``A[i, α] = x_i^α`` and ``Q[α, j] = q_α(y_j)``, evaluated
    with NumPy int64 in chunks. This is exact: the largest possible |det| (sum of |coefficients|
    times ``max|S|^{2m}``) is checked to stay below 2^62.

    Raises
    ------
    LimitExceededError
        Beyond :data:`EXHAUSTIVE_LIMIT` assignments or when int64 could overflow.

    Examples
    --------
    >>> c = exhaustive_singularity(1, 1, [-1, 0, 1])
    >>> c.probability, c.bound
    (Fraction(5, 9), Fraction(2, 3))
    """
    d_in, d_out = _check_dims(d_in, d_out)
    m = _check_expandable(d_in, d_out)
    vals = tuple(sorted({int(v) for v in values}))
    if len(vals) < 1:
        raise InputError("the value set S is empty")
    if len(vals) != len(list(values)):
        raise InputError("the value set S has repeated values")
    nx, ny = m * d_in, d_out * m
    total = len(vals) ** (nx + ny)
    if total > EXHAUSTIVE_LIMIT:
        raise LimitExceededError(f"{total:,} assignments exceed the exhaustive limit "
                                 f"{EXHAUSTIVE_LIMIT:,}")
    terms = leibniz_expansion(d_in, d_out)
    vmax = max(abs(v) for v in vals)
    if sum(abs(c) for c in terms.values()) * vmax ** (2 * m) >= 2**62:
        raise LimitExceededError("values too large for exact int64 enumeration")
    x_monomials = sorted({e[:nx] for e in terms})
    where = {a: i for i, a in enumerate(x_monomials)}
    arr = np.array(vals, dtype=np.int64)
    xs, ys = _all_assignments(arr, nx), _all_assignments(arr, ny)
    A = np.ones((len(xs), len(x_monomials)), dtype=np.int64)
    for i, alpha in enumerate(x_monomials):
        for v, e in enumerate(alpha):
            if e:
                A[:, i] *= xs[:, v] ** e
    Q = np.zeros((len(x_monomials), len(ys)), dtype=np.int64)
    for exps, coeff in terms.items():
        col = np.full(len(ys), coeff, dtype=np.int64)
        for v, e in enumerate(exps[nx:]):
            if e:
                col *= ys[:, v] ** e
        Q[where[exps[:nx]]] += col
    rows_per_chunk = max(1, chunk_entries // max(1, len(ys)))
    singular = 0
    for start in range(0, len(xs), rows_per_chunk):
        singular += int(np.count_nonzero(A[start:start + rows_per_chunk] @ Q == 0))
    return SingularityCount(d_in, d_out, vals, total, singular)


# --------------------------------------------------------------------- Cramer's rule


@dataclass(frozen=True)
class CramerSolution:
    """Closed-form ``γ`` of Lemma 8: ``γ_k = det(K_k)/det K`` with ``K_k = K``, column k := vec W.

    ``symbols`` are the target entries ``W[b][a]`` in column-major vec order; ``numerators[k]`` is
    ``det(K_k)``, a linear form in them with integer-or-rational coefficients.
    """

    d_in: int
    d_out: int
    symbols: tuple[sympy.Symbol, ...]
    det_K: sympy.Rational
    numerators: tuple[sympy.Expr, ...]

    @property
    def gamma(self) -> tuple[sympy.Expr, ...]:
        return tuple(n / self.det_K for n in self.numerators)

    def evaluate(self, W: Sequence[Sequence[Any]]) -> list[Fraction]:
        """Substitute an exact rational ``W`` (d_out×d_in) and return ``γ`` exactly."""
        Wf = to_fractions(to_fmpq_mat(W, "W"))
        if len(Wf) != self.d_out or any(len(r) != self.d_in for r in Wf):
            raise ShapeError(f"W must be {self.d_out}×{self.d_in}")
        subs = {sympy.Symbol(f"W[{b}][{a}]"): sympy.Rational(Wf[b][a].numerator,
                                                             Wf[b][a].denominator)
                for b in range(self.d_out) for a in range(self.d_in)}
        out = []
        for g in self.gamma:
            r = sympy.Rational(g.xreplace(subs))
            out.append(Fraction(int(r.p), int(r.q)))
        return out


def cramer_gamma(V_in: FlintMatrix, V_out: FlintMatrix) -> CramerSolution:
    """Γ in closed form for a symbolic target ``W`` and fixed frozen ``V_in``, ``V_out`` (Lemma 8).

    Parameters
    ----------
    V_in : fmpz_mat or fmpq_mat, m×d_in
    V_out : fmpz_mat or fmpq_mat, d_out×m, with ``m = d_in·d_out ≤ 9``

    Raises
    ------
    SingularSystemError
        If ``K = V_inᵀ ⊙ V_out`` is singular (Cramer's rule needs ``det K ≠ 0``).

    Examples
    --------
    >>> from flint import fmpz_mat
    >>> s = cramer_gamma(fmpz_mat([[1], [1]]), fmpz_mat([[1, 0], [1, 1]]))
    >>> s.gamma
    (W[0][0], -W[0][0] + W[1][0])
    """
    m, d_in = V_in.nrows(), V_in.ncols()
    d_out = V_out.nrows()
    if V_out.ncols() != m or m != d_in * d_out:
        raise ShapeError(f"need V_in m×d_in and V_out d_out×m with m = d_in·d_out, got "
                         f"{m}×{d_in} and {d_out}×{V_out.ncols()}")
    if m > CRAMER_LIMIT:
        raise LimitExceededError(f"symbolic Cramer solution limited to m ≤ {CRAMER_LIMIT}")
    K = to_fractions(khatri_rao(V_in.transpose(), V_out))
    Ks = sympy.Matrix(m, m, lambda i, j: sympy.Rational(K[i][j].numerator, K[i][j].denominator))
    det_K = DomainMatrix.from_Matrix(Ks).convert_to(QQ).det()
    if det_K == 0:
        rank = exact_rank(to_fmpq_mat(K))
        raise SingularSystemError(f"K is singular (exact rank {rank} < {m}); Cramer's rule "
                                  f"does not apply", rank=rank, size=m)
    # column-major vec: entry a·d_out + b of vec W is W[b][a]
    symbols = tuple(sympy.Symbol(f"W[{b}][{a}]") for a in range(d_in) for b in range(d_out))
    ring = QQ[symbols]
    numerators = []
    for k in range(m):
        Kk = Ks.copy()
        for r in range(m):
            Kk[r, k] = symbols[r]
        det_k = DomainMatrix.from_Matrix(Kk).convert_to(ring).det()
        numerators.append(ring.to_sympy(det_k))
    return CramerSolution(d_in, d_out, symbols, QQ.to_sympy(det_K), tuple(numerators))


# --------------------------------------------------------------------- realizability


@dataclass(frozen=True)
class Realizability:
    """Theorem 7 (Rouché–Capelli) for ``K γ = vec W`` with ``K = V_inᵀ ⊙ V_out``.

    ``reachable`` iff ``rank_K == rank_augmented``. A reachable answer carries ``gamma`` with
    ``K γ = vec W``; an unreachable one carries ``separator`` ``y`` with ``yᵀK = 0`` and
    ``yᵀ vec W ≠ 0`` (Fredholm alternative). The reachable W form a linear subspace of
    ``Q^{d_out×d_in}`` of dimension ``rank_K``.
    """

    d_in: int
    d_out: int
    m: int
    rank_K: int
    rank_augmented: int
    gamma: tuple[Fraction, ...] | None
    separator: tuple[int, ...] | None

    @property
    def reachable(self) -> bool:
        return self.rank_K == self.rank_augmented

    @property
    def dimension(self) -> int:
        """Dimension of the reachable set ``{V_out diag(γ) V_in}`` (= rank K)."""
        return self.rank_K

    @property
    def codimension(self) -> int:
        return self.d_in * self.d_out - self.rank_K


def decide_realizable(V_in: FlintMatrix, V_out: FlintMatrix, W: FlintMatrix | Sequence[Any]
                      ) -> Realizability:
    """Decide exactly whether ``W = V_out diag(γ) V_in`` has a solution γ (Theorem 7).

    Parameters
    ----------
    V_in : m×d_in, V_out : d_out×m, W : d_out×d_in (FLINT matrices or rows of exact numbers)

    Returns
    -------
    Realizability
        With exact ranks and a checked witness either way.

    Examples
    --------
    >>> from flint import fmpz_mat
    >>> r = decide_realizable(fmpz_mat([[1, 0]]), fmpz_mat([[1], [0]]), [[3, 0], [0, 0]])
    >>> r.reachable, r.dimension, r.gamma
    (True, 1, (Fraction(3, 1),))
    >>> decide_realizable(fmpz_mat([[1, 0]]), fmpz_mat([[1], [0]]), [[0, 0], [0, 1]]).separator
    (0, 0, 0, -1)
    """
    V_in, V_out = to_fmpq_mat(V_in, "V_in"), to_fmpq_mat(V_out, "V_out")
    Wm = to_fmpq_mat(W, "W")
    m, d_in = V_in.nrows(), V_in.ncols()
    d_out = V_out.nrows()
    if m < 1 or d_in < 1 or d_out < 1:
        raise ShapeError("V_in, V_out and W must be nonempty")
    if V_out.ncols() != m:
        raise ShapeError(f"V_in is {m}×{d_in} but V_out has {V_out.ncols()} columns")
    if (Wm.nrows(), Wm.ncols()) != (d_out, d_in):
        raise ShapeError(f"W must be {d_out}×{d_in}, got {Wm.nrows()}×{Wm.ncols()}")
    K = khatri_rao(V_in.transpose(), V_out)
    w = vec(Wm, "F")
    n = d_in * d_out
    K_rows = K.tolist()
    aug = fmpq_mat([K_rows[i] + [w[i, 0]] for i in range(n)])
    rank_K, rank_aug = exact_rank(K), exact_rank(aug)
    gamma = separator = None
    if rank_K == rank_aug:
        R, _ = aug.rref()
        sol = [fmpq(0)] * m
        for i in range(rank_K):
            pivot = next(j for j in range(m) if R[i, j] != 0)
            sol[pivot] = R[i, m] / R[i, pivot]
        gam = fmpq_mat([[x] for x in sol])
        if K * gam != w:  # the witness checks itself
            raise AssertionError("reduced row echelon solution does not solve K γ = vec W")
        gamma = tuple(Fraction(int(x.numer()), int(x.denom())) for x in sol)
    else:
        Kz = K.numer_denom()[0]
        N, nullity = Kz.transpose().nullspace()
        for c in range(nullity):
            y = fmpz_mat([[N[i, c]] for i in range(n)])
            if (y.transpose() * w)[0, 0] != 0:
                if y.transpose() * Kz != fmpz_mat(1, m):
                    raise AssertionError("left kernel vector does not annihilate K")
                separator = tuple(int(y[i, 0]) for i in range(n))
                break
        if separator is None:
            raise AssertionError("ranks differ but no separating left kernel vector")
    return Realizability(d_in, d_out, m, rank_K, rank_aug, gamma, separator)


def reachable_target(V_in: FlintMatrix, V_out: FlintMatrix, gamma: Sequence[Any]) -> fmpq_mat:
    """``V_out diag(γ) V_in``: a target that is reachable by construction."""
    from exactnorm.exact.linalg import diag

    g = to_fmpq_mat([[x] for x in gamma], "gamma")
    return to_fmpq_mat(V_out) * diag(g) * to_fmpq_mat(V_in)
