"""Exact values between layers: vectors of ``fmpq``, activations, the interval rule, and a node
held as integers over one denominator.

Every value between layers is a vector (a ``(C, H, W)`` tensor is its C-order vector), so the
network's loops need nothing but these helpers; what a layer *does* with a vector is its kind's
(its operator, :mod:`exactnorm.model.operators`).

Correctness: :func:`affine_interval` is the exact range of ``W a + b`` over a box, because a box
is a product of intervals and each row is separable (``min Σ w_k a_k = Σ min w_k a_k``); a
:class:`Scaled` value denotes ``num / den`` entry by entry, exactly.

>>> activate("relu", (fmpq(-1), fmpq(2)))
(0, 2)
>>> affine_interval(fmpq_mat([[1, -1]]), (fmpq(0),), (fmpq(0), fmpq(0)), (fmpq(1), fmpq(2)))
((-2,), (1,))
>>> Scaled.of((fmpq(1, 2), fmpq(1, 3)), 1, 2).values()
(1/2, 1/3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flint import fmpq, fmpq_mat, fmpz, fmpz_mat

from exactnorm.checker.vocabulary import ACTIVATIONS
from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.linalg import FlintMatrix, clear_denominators, to_fmpq_mat

__all__ = ["Vector", "ACTIVATIONS", "column", "activate", "affine_interval", "as_vector",
           "exact_values", "Scaled", "Node", "node_values", "scaled_affine"]

Vector = tuple[fmpq, ...]


def column(v: Sequence[Any]) -> fmpq_mat:
    """A tuple of exact numbers → ``n×1`` ``fmpq_mat``."""
    return fmpq_mat([[fmpq(x) if not isinstance(x, fmpq) else x] for x in v]) if len(v) \
        else fmpq_mat(0, 1)


def activate(name: str, v: Sequence[fmpq]) -> Vector:
    """Apply ``relu`` or ``identity`` entry-wise (exact)."""
    if name == "relu":
        return tuple(x if x > 0 else fmpq(0) for x in v)
    if name == "identity":
        return tuple(v)
    raise InputError(f"unknown activation {name!r}; expected one of {ACTIVATIONS}")


def as_vector(x: Sequence[Any], n: int, what: str) -> Vector:
    """Exact numbers (``int``, ``Fraction``, ``fmpq``, a flint row) as a vector of length ``n``."""
    if isinstance(x, (fmpq_mat, fmpz_mat)):
        x = x.entries()
    vals = to_fmpq_mat([list(x)], what).entries() if len(x) else []
    if len(vals) != n:
        raise ShapeError(f"{what} has length {len(vals)}, expected {n}")
    return tuple(vals)


def exact_values(a: Sequence[Any]) -> Vector:
    """``a`` as ``fmpq`` entries (already exact numbers; no length check)."""
    return tuple(x if isinstance(x, fmpq) else fmpq(x) for x in a)


def affine_interval(W: FlintMatrix, b: Sequence[fmpq], lo: Sequence[fmpq],
                    hi: Sequence[fmpq]) -> tuple[Vector, Vector]:
    """Exact range of ``W a + b`` over the box ``lo ≤ a ≤ hi`` (interval bound propagation).

    Each row's minimum is ``b_r + Σ_k (W_rk > 0 ? W_rk lo_k : W_rk hi_k)``; this is the exact
    minimum over the box (a box is a product set), not a relaxation.
    """
    rows: list[list[Any]] = W.tolist()
    los, his = [], []
    for r, row in enumerate(rows):
        mn = fmpq(b[r])
        mx = fmpq(b[r])
        for w, l, h in zip(row, lo, hi):
            if w > 0:
                mn += w * l
                mx += w * h
            elif w < 0:
                mn += w * h
                mx += w * l
        los.append(mn)
        his.append(mx)
    return tuple(los), tuple(his)


class Scaled:
    """A node value as integers over one denominator: ``num`` (rows × cols, C order) / ``den``.

    Hidden layers of a construction carry Γ-sized numbers with a common denominator; keeping
    them as one integer matrix avoids a gcd per entry, which is what makes an exact evaluation
    of a real-size network slow and large."""

    __slots__ = ("num", "den", "_values")

    def __init__(self, num: fmpz_mat, den: Any) -> None:
        self.num, self.den = num, fmpz(den)
        self._values: Vector | None = None

    @classmethod
    def of(cls, values: Sequence[fmpq], rows: int, cols: int) -> Scaled:
        num, den = clear_denominators(fmpq_mat(rows, cols, list(values)))
        out = cls(num, den)
        out._values = tuple(values)
        return out

    def values(self) -> Vector:
        if self._values is None:
            self._values = tuple((fmpq_mat(self.num) / self.den).entries())
        return self._values


#: a node's value during an evaluation: a vector, or integers over one denominator
Node = Vector | Scaled


def node_values(node: Node) -> Vector:
    """The entries of a node, whichever way it is held."""
    return node.values() if isinstance(node, Scaled) else node


def scaled_affine(Z: fmpz_mat, den: Any, gamma: Vector, beta: Vector,
                  activation: str) -> Scaled:
    """``σ(γ_k·z/den + β_k)`` for the entries ``z`` of ``Z`` in C order, consecutive runs of
    equal length sharing ``γ_k`` and ``β_k`` (a node: a row per neuron, or a row per channel
    at every position, or its one column), as integers over one denominator; the layout of
    ``Z`` is kept."""
    g_num, g_den = clear_denominators(fmpq_mat([list(gamma)]))
    b_num, b_den = clear_denominators(fmpq_mat([list(beta)]))
    gn, bn = g_num.entries(), b_num.entries()
    run = Z.nrows() * Z.ncols() // len(gn) if gn else 0  # one γ group, consecutive
    shift = g_den * fmpz(den)
    flat = Z.entries()
    out: list[Any] = []
    for k in range(len(gn)):
        a, c = gn[k] * b_den, bn[k] * shift
        out.extend(a * z + c for z in flat[k * run:(k + 1) * run])
    if activation == "relu":
        zero = fmpz(0)
        out = [v if v > 0 else zero for v in out]
    elif activation not in ACTIVATIONS:
        raise InputError(f"unknown activation {activation!r}; expected one of {ACTIVATIONS}")
    return Scaled(fmpz_mat(Z.nrows(), Z.ncols(), out) if out else fmpz_mat(Z.nrows(), Z.ncols()),
                  shift * b_den)
