"""Frozen random weights of certificates: generator ``exactnorm.shake256.v1``, vectorised.

Contract. :func:`draw` returns a frozen matrix (``fmpz_mat`` for integer distributions,
``fmpq_mat`` otherwise) together with its *draw record* (docs/certificate-format.md §2); the
matrix is exactly what the standard-library reference :mod:`exactnorm.checker.regenerate` rebuilds
from that record, on every machine. :func:`matrix_from_record` goes the other way for readers of
certificates that hold weights by reference. :func:`redraw_refusal` is the writer's side of the
checker's rule ``redraw``: a unit singular by construction is never redrawn.

Correctness argument. The same definition as the reference (docs/generator.md), computed with
NumPy on ``uint64`` words read with an explicit little-endian dtype (``'<u8'``), so the host's byte
order does not matter. Every mapping stays exact in 64-bit integer arithmetic: ``u mod n`` is
below ``n ≤ 2^63 + 1``; the value ``t − B`` lies in ``[−B, B]`` with ``B ≤ 2^62``, so computing it
modulo ``2^64`` in ``uint64`` and reading the bits as ``int64`` gives the true value; a
``gauss:b`` sum of twelve ``b``-bit words is below ``12·2^52 < 2^56``. No float is involved.
This module shares no code with the reference on purpose: tests compare the two bit for bit.

Reference: Giannou, Rajput, Papailiopoulos, "The Expressive Power of Tuning Only the
Normalization Layers", COLT 2023, arXiv:2302.07937 (frozen weights are random; the record says
which draw).

>>> V, rec = draw(0, (1, 0, 0, 0), 2, 3, "nonzero:8")
>>> rec["generator"], rec["shape"], V.nrows(), V.ncols()
('exactnorm.shake256.v1', [2, 3], 2, 3)
>>> matrix_from_record(rec) == V
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.checker.vocabulary import GENERATOR
from exactnorm.errors import InputError
from exactnorm.exact.sampling import Distribution, parse_distribution

__all__ = [
    "GENERATOR",
    "stream_words",
    "draw_values",
    "mask_bits",
    "draw",
    "draw_record",
    "exact_probability",
    "matrix_from_record",
    "record_values",
    "support_columns",
    "redraw_refusal",
]


Matrix = fmpz_mat | fmpq_mat


def stream_words(seed: int, key: Sequence[int], count: int) -> np.ndarray:
    """The first ``count`` little-endian 64-bit words of stream ``(seed, key)`` (``uint64``).

    >>> stream_words(0, (), 3)[:2].tolist() == stream_words(0, (), 2).tolist()
    True
    """
    text = f"{GENERATOR}|{int(seed)}|{','.join(str(int(k)) for k in key)}".encode("ascii")
    data = hashlib.shake_256(text).digest(8 * count) if count else b""
    return np.frombuffer(data, dtype="<u8").astype(np.uint64, copy=False)


def _words_per_entry(d: Distribution) -> int:
    return {"rational": 2, "gauss": 12}.get(d.law, 1)


def draw_values(seed: int, key: Sequence[int], n: int,
                dist: Distribution) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """``n`` entries of stream ``(seed, key)``: ``int64`` values, or ``(num, den)`` arrays.

    Rational laws (``rational:B``, ``gauss:b``) return numerator and denominator arrays; the
    denominator of ``gauss:b`` is ``2^b`` for every entry.
    """
    u = stream_words(seed, key, _words_per_entry(dist) * n)
    if dist.law == "gauss":
        scale = 1 << dist.param
        sums = (u.reshape(n, 12) & np.uint64(scale - 1)).sum(axis=1, dtype=np.uint64)
        return sums.astype(np.int64) - np.int64(6 * scale), np.full(n, scale, dtype=np.int64)
    if dist.law == "rational":
        bound = dist.param
        num = (u[0::2] % np.uint64(2 * bound + 1) - np.uint64(bound)).view(np.int64)
        den = (u[1::2] % np.uint64(bound)).astype(np.int64) + 1
        return num, den
    if dist.law == "set":
        return np.array(dist.values, dtype=np.int64)[(u % np.uint64(len(dist.values)))
                                                      .astype(np.int64)]
    if dist.law == "nonzero":
        half = np.uint64(dist.param)
        t = u % np.uint64(2 * dist.param)
        # t − B + [t ≥ B] skips 0; the wrap-around of uint64 is undone by the int64 view
        return (t - half + (t >= half).astype(np.uint64)).view(np.int64)
    bound_int = dist.param if dist.law == "int" else 1 << dist.param
    return (u % np.uint64(2 * bound_int + 1) - np.uint64(bound_int)).view(np.int64)


def mask_bits(seed: int, key: Sequence[int], n: int, p: Fraction) -> np.ndarray:
    """Bernoulli(``p``) keep-flags: bit ``1`` iff ``u mod b < a`` for ``p = a/b`` (lowest terms)."""
    if p == 0:
        return np.zeros(n, dtype=bool)
    if p == 1:
        return np.ones(n, dtype=bool)
    u = stream_words(seed, key, n)
    return u % np.uint64(p.denominator) < np.uint64(p.numerator)


def exact_probability(p: Any) -> Fraction:
    """A keep probability as an exact fraction in ``[0, 1]`` (a float ``0.3`` means ``3/10``).

    >>> exact_probability(0.25), exact_probability("1/3")
    (Fraction(1, 4), Fraction(1, 3))
    """
    try:
        q = Fraction(str(p)) if isinstance(p, float) else Fraction(p)
    except (ValueError, TypeError, ZeroDivisionError):
        raise InputError(f"keep probability must be an exact number in [0, 1], got {p!r}") from None
    if not 0 <= q <= 1 or q.denominator > 1 << 62:
        raise InputError(f"keep probability must lie in [0, 1] with a denominator of at most "
                         f"2^62, got {p!r}")
    return q


def draw_record(seed: int, key: Sequence[int], rows: int, cols: int, dist: Distribution | str,
                *, mask_p: Fraction | None = None, mask_key: Sequence[int] | None = None,
                columns: Sequence[int] | None = None) -> dict[str, Any]:
    """The JSON draw record of one matrix (docs/certificate-format.md §2)."""
    rec: dict[str, Any] = {"generator": GENERATOR, "seed": int(seed),
                           "key": [int(k) for k in key],
                           "distribution": parse_distribution(dist).spec,
                           "shape": [int(rows), int(cols)]}
    if columns is not None:
        rec["mask"] = {"columns": [int(c) for c in columns]}
    elif mask_p is not None:
        if mask_key is None:
            raise InputError("a Bernoulli mask needs its own stream key")
        p = exact_probability(mask_p)
        rec["mask"] = {"p": int(p) if p.denominator == 1 else f"{p.numerator}/{p.denominator}",
                       "key": [int(k) for k in mask_key]}
    return rec


def _to_flint(values: np.ndarray | tuple[np.ndarray, np.ndarray], rows: int,
              cols: int) -> Matrix:
    if isinstance(values, tuple):
        num, den = values
        return fmpq_mat(rows, cols, [fmpq(int(a), int(b)) for a, b in zip(num.tolist(),
                                                                        den.tolist())])
    return fmpz_mat(rows, cols, values.tolist())


def _keep(rec: dict[str, Any], n: int, cols: int) -> np.ndarray | None:
    mask = rec.get("mask")
    if mask is None:
        return None
    if "columns" in mask:
        keep_col = np.zeros(cols, dtype=bool)
        keep_col[list(mask["columns"])] = True
        return np.tile(keep_col, n // cols if cols else 0)
    return mask_bits(rec["seed"], mask["key"], n, Fraction(mask["p"]))


def record_values(rec: dict[str, Any],
                  dist: Distribution | None = None) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """The entries of a checked draw record, row-major and masked, as exact NumPy integers:
    one array for an integer distribution, ``(numerators, denominators)`` for a rational one.

    For readers that need the values but no ``fmpz_mat`` (the float exports, the JSON export):
    the same numbers :func:`matrix_from_record` puts in the matrix.
    """
    rows, cols = rec["shape"]
    n = rows * cols
    d = parse_distribution(rec["distribution"]) if dist is None else dist
    values = draw_values(rec["seed"], rec["key"], n, d)
    keep = _keep(rec, n, cols)
    if keep is not None:
        if isinstance(values, tuple):
            values = (np.where(keep, values[0], 0), np.where(keep, values[1], 1))
        else:
            values = np.where(keep, values, 0)
    return values


def _realize(rec: dict[str, Any], dist: Distribution) -> Matrix:
    rows, cols = rec["shape"]
    return _to_flint(record_values(rec, dist), rows, cols)


def draw(seed: int, key: Sequence[int], rows: int, cols: int, dist: Distribution | str, *,
         mask_p: Fraction | None = None, mask_key: Sequence[int] | None = None,
         columns: Sequence[int] | None = None) -> tuple[Matrix, dict[str, Any]]:
    """Draw a ``rows × cols`` frozen matrix and return it with its draw record.

    Parameters
    ----------
    seed, key
        The stream: a non-negative seed and a tuple of non-negative integers
        (:mod:`exactnorm.exact.streams` names them).
    rows, cols
        Shape (0 allowed).
    dist
        Entry distribution (:func:`~exactnorm.exact.sampling.parse_distribution`).
    mask_p, mask_key
        Optional Bernoulli keep probability (exact) and the mask's own stream key.
    columns
        Optional structured support: entries outside these (0-based, increasing) columns are 0.

    Returns
    -------
    (fmpz_mat or fmpq_mat, dict)

    Raises
    ------
    InputError
        Bad seed, key, distribution or probability.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    if any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0 for k in key):
        raise InputError(f"stream key must hold non-negative integers, got {tuple(key)!r}")
    d = parse_distribution(dist)
    rec = draw_record(seed, key, rows, cols, d, mask_p=mask_p, mask_key=mask_key,
                      columns=columns)
    return _realize(rec, d), rec


def matrix_from_record(record: dict[str, Any]) -> Matrix:
    """The matrix of a draw record already checked by
    :func:`exactnorm.checker.regenerate.validate_record`.

    The fast path of :func:`exactnorm.checker.regenerate.regenerate`. Validation stays with the
    caller (the certificate reader, above this module) so that both paths accept exactly the
    records the reference accepts; an unchecked record may raise anything.
    """
    return _realize(record, parse_distribution(record["distribution"]))


# ---------------------------------------------------------------- redraws (the writer's side)


def support_columns(rec: dict[str, Any]) -> tuple[int, ...]:
    """The columns whose entries a draw record may make nonzero, alike for every row: none when
    the distribution has no nonzero value or the Bernoulli mask keeps nothing, the listed ones
    under a column mask, else all (the support pattern the checker's rule ``redraw`` reads,
    docs/certificate-format.md §6)."""
    d = parse_distribution(rec["distribution"])
    mask = rec.get("mask") or {}
    if (d.law == "set" and not any(d.values)) or ("p" in mask and Fraction(mask["p"]) == 0):
        return ()
    if "columns" in mask:
        return tuple(int(c) for c in mask["columns"])
    return tuple(range(int(rec["shape"][1])))


def _constant(rec: dict[str, Any]) -> bool:
    """A draw without randomness: one value, kept with certainty (or never)."""
    d = parse_distribution(rec["distribution"])
    p = Fraction((rec.get("mask") or {}).get("p", 1))
    return p == 0 or (len(set(d.values)) == 1 and d.law == "set" and p == 1)


def redraw_refusal(first: dict[str, Any], second: dict[str, Any] | None = None,
                   used: Sequence[int] | None = None) -> str | None:
    """Why a unit of draws may not be redrawn after a singular attempt, or None when it may: a
    square matrix (``second`` None) or a Khatri–Rao pair (``used``: the columns of the first
    matrix its system reads, default all) whose system is singular by construction, or a draw
    without randomness — the checker refuses such redraws (rule ``redraw``), since every attempt
    would be singular.

    The support of every record is a set of whole columns (:func:`support_columns`). A square
    ``V`` has structural rank ``|support|``. The system of a pair has one column per inner index
    ``k``, ``vec(V_out[:, k] V_in[k, :])``, nonzero exactly on the rows ``(r, t)`` with ``t``
    among the used columns in ``V_in``'s support, when column ``k`` of ``V_out`` is in its
    support; all these columns share one support of ``c·|used ∩ support|`` rows, so the
    structural rank is the smaller of that and the number of such ``k``. (The checker computes
    it by a matching, ``exactnorm.checker.provenance.structural_rank``; a test compares the two.)
    """
    for rec in (first, second):
        if rec is not None and _constant(rec):
            return "has a draw without randomness (a constant distribution or a mask with p = 0)"
    if second is None:
        n = int(first["shape"][0])
        rank = len(support_columns(first))
    else:
        cols = range(int(first["shape"][1])) if used is None else used
        inner = set(support_columns(first)).intersection(cols)
        out = support_columns(second) if inner else ()
        n = int(first["shape"][0])
        rank = min(len(out), int(second["shape"][0]) * len(inner))
    if rank < n:
        return (f"is singular by construction: the structural rank of its masked system is {rank} "
                f"< {n}")
    return None
