"""Exact batch evaluation: a batch of samples as integers over one denominator.

Contract
--------
A batch of ``m`` samples of a node of width ``d`` is a :class:`~exactnorm.model.values.Scaled`
whose ``num`` is the ``d × m`` integer matrix (one sample per column) and ``den > 0`` one
denominator for all of it. The helpers here are kind-free: :func:`from_columns` and
:func:`to_columns` convert to and from an ``fmpq_mat``; :func:`gather` copies rows (an im2col
patch matrix, a route); :func:`window_sums` adds gathered rows (a pooling);
:func:`add_row_bias`, :func:`add` and :func:`activate_batch` finish a layer. A layer kind's
``affine_columns`` (a convolution: one FLINT product of the integer kernel with the patches of
all samples side by side) builds on them, and
:meth:`~exactnorm.model.network.TargetNetwork.evaluate_columns` follows the wiring.

Correctness
-----------
Every operation is exact integer arithmetic on numerators with the denominator tracked
alongside: ``N/D + M/E = (N·(L/D) + M·(L/E))/L`` for ``L = lcm(D, E)``; ``K/k · N/D = KN/(kD)``;
ReLU of ``N/D`` with ``D > 0`` is ``max(N, 0)/D``; a gather or a sum of rows commutes with the
common denominator. The denominators are not reduced (a float sample is a dyadic rational, the
kernels of a float model too, so they stay powers of two); :func:`to_columns` reduces each entry
once, so results equal the per-sample rational evaluation as rationals.

>>> from flint import fmpq_mat
>>> S = from_columns(fmpq_mat([[1, -3], [2, 5]]) / 4)
>>> to_columns(activate_batch("relu", add_row_bias(S.num, S.den, (fmpq(1, 2), fmpq(0)), 1))
...            ).tolist()
[[3/4, 0], [1/2, 5/4]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat, fmpz, fmpz_mat

from exactnorm.checker.vocabulary import ACTIVATIONS
from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.linalg import FlintMatrix, clear_denominators
from exactnorm.model.values import Scaled

__all__ = ["from_columns", "to_columns", "as_columns", "gather", "gather_entries", "window_sums",
           "add_row_bias", "add",
           "activate_batch", "integer_matrix"]


def from_columns(A: FlintMatrix) -> Scaled:
    """The batch of the columns of ``A`` as integers over their least common denominator."""
    num, den = clear_denominators(A)
    return Scaled(num, den)


def to_columns(S: Scaled) -> fmpq_mat:
    """The batch as rationals (each entry reduced), one sample per column."""
    if S.num.nrows() == 0 or S.num.ncols() == 0:
        return fmpq_mat(S.num.nrows(), S.num.ncols())
    return fmpq_mat(S.num) / S.den


def as_columns(S: Scaled, rows: int) -> Scaled:
    """``S`` as ``rows × m`` (one sample per column): a single sample held in another layout (a
    node as a convolution leaves it, channels × positions: the same entries in C order) becomes
    its one column; a batch is returned as it is."""
    if S.num.nrows() == rows:
        return S
    if S.num.nrows() * S.num.ncols() != rows:
        raise ShapeError(f"a value of {S.num.nrows()}×{S.num.ncols()} entries where {rows} "
                         f"rows are read")
    return Scaled(fmpz_mat(rows, 1, S.num.entries()), S.den)


def integer_matrix(M: FlintMatrix) -> tuple[fmpz_mat, fmpz]:
    """A layer's fixed matrix as integers and one denominator (cached by the caller)."""
    return clear_denominators(M)


def _column_index(rows: np.ndarray, m: int, size: int) -> np.ndarray:
    """Flat indices into a C-order ``size/m × m`` list of the entries ``(rows[...], c)`` for
    every sample ``c``; a row ``-1`` reads the zero appended at position ``size``."""
    rows = np.asarray(rows, dtype=np.int64)
    idx = rows[..., None] * m + np.arange(m, dtype=np.int64)
    return np.where(rows[..., None] >= 0, idx, size)


def _entries(num: fmpz_mat) -> np.ndarray:
    """The entries of ``num`` (C order) as an object array with one zero appended."""
    flat = num.entries()
    out = np.empty(len(flat) + 1, dtype=object)
    out[:-1] = flat
    out[-1] = fmpz(0)
    return out


def gather(num: fmpz_mat, rows: np.ndarray) -> fmpz_mat:
    """The ``rows.size × m`` matrix whose row ``r`` is row ``rows.flat[r]`` of ``num`` (zero for
    ``-1``); a 2-d ``rows`` of shape ``(k, n)`` gives ``k × n·m``, row ``t`` holding the rows
    ``rows[t, :]`` side by side (column ``p·m + c``) — the patches of all samples of a batch.

    >>> gather(fmpz_mat([[1, 2], [3, 4]]), np.array([1, -1, 0]))
    [3, 4]
    [0, 0]
    [1, 2]
    """
    return _gather(num, _entries(num), rows)


def _gather(num: fmpz_mat, flat: np.ndarray, rows: np.ndarray) -> fmpz_mat:
    m = num.ncols()
    rows = np.asarray(rows, dtype=np.int64)
    shape = (rows.size, m) if rows.ndim == 1 else (rows.shape[0], rows.shape[1] * m)
    if shape[0] == 0 or shape[1] == 0:
        return fmpz_mat(*shape)
    picked = flat[_column_index(rows, m, num.nrows() * m).ravel()]
    return fmpz_mat(shape[0], shape[1], picked.tolist())


def gather_entries(num: fmpz_mat, index: np.ndarray) -> fmpz_mat:
    """The matrix of ``index``'s 2-d shape whose entry is entry ``index[...]`` of ``num`` in C
    order, 0 for ``-1``: one sample's patches read from its entries in whatever layout the
    sample is held (a convolution's channels × positions is its vector in C order).

    >>> gather_entries(fmpz_mat([[1, 2], [3, 4]]), np.array([[3, -1], [0, 2]]))
    [4, 0]
    [1, 3]
    """
    index = np.asarray(index, dtype=np.int64)
    if index.size == 0:
        return fmpz_mat(*index.shape)
    flat = _entries(num)
    picked = flat[np.where(index >= 0, index, len(flat) - 1).ravel()]
    return fmpz_mat(index.shape[0], index.shape[1], picked.tolist())


def window_sums(num: fmpz_mat, windows: np.ndarray) -> fmpz_mat:
    """``Σ_t gather(num, windows[t])``: row ``r`` of the result is the sum of the rows
    ``windows[:, r]`` (a pooling's windows, ``k × outputs``)."""
    k, n = windows.shape
    total = fmpz_mat(n, num.ncols())
    flat = _entries(num)  # once: reading the entries is most of a gather's cost
    for t in range(k):
        total = total + _gather(num, flat, windows[t])
    return total


def add_row_bias(Z: fmpz_mat, den: Any, bias: Sequence[fmpq], group: int) -> Scaled:
    """``Z/den + b`` where row ``r`` of ``Z`` gets ``bias[r // group]`` (a convolution's rows are
    ``channel·positions + position``: ``group = positions``; held as channels × positions, its
    rows are the channels: ``group = 1``)."""
    den = fmpz(den)
    if not bias or Z.ncols() == 0:
        return Scaled(Z, den)
    bn, bd = clear_denominators(fmpq_mat([list(bias)]))
    L = fmpz(math.lcm(int(den), int(bd)))
    if den != L:
        Z = Z * (L // den)
    scale = L // bd
    m = Z.ncols()
    values = bn.entries()
    if all(b == 0 for b in values):
        return Scaled(Z, L)
    rows: list[Any] = []
    for b in values:
        rows.extend([b * scale] * group)
    shift = fmpz_mat(Z.nrows(), 1, rows)
    # the same value along each row: one product with a row of ones, not a list of every entry
    return Scaled(Z + (shift if m == 1 else shift * fmpz_mat(1, m, [1] * m)), L)


def add(S: Scaled, T: Scaled) -> Scaled:
    """``S + T`` over the least common multiple of their denominators."""
    L = fmpz(math.lcm(int(S.den), int(T.den)))
    a = S.num if S.den == L else S.num * (L // S.den)
    b = T.num if T.den == L else T.num * (L // T.den)
    return Scaled(a + b, L)


def activate_batch(name: str, S: Scaled) -> Scaled:
    """``σ`` entrywise: ReLU clips the numerators at 0 (the denominator is positive)."""
    if name == "identity":
        return S
    if name != "relu":
        raise InputError(f"unknown activation {name!r}; expected one of {ACTIVATIONS}")
    flat = S.num.entries()
    if not flat:
        return S
    zero = fmpz(0)
    return Scaled(fmpz_mat(S.num.nrows(), S.num.ncols(), [v if v > 0 else zero for v in flat]),
                  S.den)
