"""The symbolic values of the transformer reader (:mod:`.transformer`): what each ONNX tensor of
a transformer *is*, element by element.

Contract. The reader runs the graph at its concrete input shape, but instead of numbers it
carries, for every tensor that depends on the tokens, integer arrays of the tensor's shape that
say which batch element, which position and which feature each entry holds. Reshapes,
transposes, slices, splits, gathers, concatenations and broadcasts are applied to those arrays
by NumPy exactly as ONNX applies them to numbers, so no layout is guessed: a per-head view is
recognised because its arrays say that every row of a matrix holds the features of one head at
one position.

* :class:`Expr` — a per-token affine map ``A x + c`` of a graph node (node 0: the one-hot input),
  after zero or more completed ReLU layers: exact (``fmpq``), composed as the graph applies
  constants, materialized into a slot when a non-affine operation reads it;
* :class:`Value` — a tensor that depends on the tokens: its form (``tokens``, ``vector``,
  ``scores``, ``probs`` or a LayerNorm part), its index arrays and its payload.

Correctness argument. An index operation moves entries without changing them, so applying it to
the index arrays gives the arrays of the result; an affine operation on a vector tensor is
checked to act on features only (its constant depends on the feature alone, or on the feature
and the position for the embedding's position term) and is then composed exactly into ``A, c``.
Anything else is refused by the reader with the node's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat

from exactnorm.errors import InputError
from exactnorm.model.layers import TargetLayer
from exactnorm.model.operators.dense import Dense

__all__ = ["Expr", "Value", "exact_scalar", "index_op", "INDEX_OPS"]


def exact_scalar(x: Any) -> fmpq:
    """A float or integer taken exactly."""
    num, den = float(x).as_integer_ratio()
    return fmpq(num, den)


@dataclass(frozen=True)
class Expr:
    """``A·h + c`` on top of ``layers`` (completed ReLU layers) applied to graph node ``base``.
    ``A = None`` is the identity and ``c = None`` zero; ``width`` is the number of features."""

    base: int
    base_width: int
    layers: tuple[TargetLayer, ...] = ()
    A: fmpq_mat | None = None
    c: tuple[fmpq, ...] | None = None

    @property
    def width(self) -> int:
        if self.A is not None:
            return self.A.nrows()
        return self.layers[-1].width if self.layers else self.base_width

    @property
    def input_width(self) -> int:
        """Columns of ``A``: the width the current affine map reads."""
        return self.layers[-1].width if self.layers else self.base_width

    def rows(self, p: list[int]) -> tuple[fmpq_mat, tuple[fmpq, ...]]:
        """``A`` and ``c`` restricted to the features ``p`` (in that order), exactly."""
        n = self.input_width
        if self.A is None:
            A = fmpq_mat(len(p), n)
            for r, f in enumerate(p):
                A[r, f] = 1
        else:
            A = fmpq_mat([[self.A[f, t] for t in range(n)] for f in p]) if p else fmpq_mat(0, n)
        c = tuple(fmpq(0) for _ in p) if self.c is None else tuple(self.c[f] for f in p)
        return A, c

    def is_base(self, p: list[int]) -> bool:
        """Whether the features ``p`` are exactly the base node's, unchanged and in order."""
        return (not self.layers and self.A is None and self.c is None
                and p == list(range(self.base_width)))

    def then(self, W: fmpq_mat, p: list[int], bias: tuple[fmpq, ...] | None = None) -> Expr:
        """``W·(A h + c)[p] + bias``: a linear map (``W`` is ``m × len(p)``) applied to the
        features ``p``."""
        A, c = self.rows(p)
        newA = W * A
        cc = W * fmpq_mat([[x] for x in c]) if c else fmpq_mat(W.nrows(), 1)
        newc = tuple(cc[r, 0] + (bias[r] if bias else 0) for r in range(W.nrows()))
        return replace(self, A=newA, c=newc)

    def relu(self, p: list[int]) -> Expr:
        """The ReLU of the features ``p``: a completed layer; the new map is the identity."""
        A, c = self.rows(p)
        return replace(self, layers=self.layers + (TargetLayer(Dense(A), c, "relu"),), A=None,
                       c=None)

    def shifted(self, shifts: dict[int, fmpq]) -> Expr:
        """``c[f] += shifts[f]``."""
        c = list(self.c) if self.c is not None else [fmpq(0)] * self.width
        for f, s in shifts.items():
            c[f] += s
        A = self.A if self.A is not None else self.rows(list(range(self.width)))[0]
        return replace(self, A=A, c=tuple(c))

    def scaled(self, scales: dict[int, fmpq]) -> Expr:
        """Row ``f`` of ``A`` and ``c[f]`` times ``scales[f]`` (the others unchanged)."""
        A0, c0 = self.rows(list(range(self.width)))
        A, c = fmpq_mat(A0), list(c0)
        for f, s in scales.items():
            for t in range(A.ncols()):
                A[f, t] *= s
            c[f] *= s
        return replace(self, A=A, c=tuple(c))

    def with_columns(self, extra: dict[tuple[int, int], fmpq]) -> Expr:
        """``A[f, t] += extra[(f, t)]`` (the embedding's position term)."""
        A, c = self.rows(list(range(self.width)))
        A = fmpq_mat(A)
        for (f, t), x in extra.items():
            A[f, t] += x
        return replace(self, A=A, c=c)


@dataclass
class Value:
    """A tensor that depends on the tokens. ``idx`` maps names to integer arrays of the
    tensor's shape: ``b`` (batch element) and ``s`` (position) for tokens and vectors, ``f``
    (feature of ``expr``) for vectors; ``q``, ``k`` (query and key positions) and ``h`` (head)
    for scores and probabilities. ``form`` is ``tokens``, ``vector``, ``scores``, ``probs`` or
    a LayerNorm part (``mean``, ``centered``, ``square``, ``variance``, ``std``, ``invstd``)."""

    form: str
    idx: dict[str, np.ndarray]
    expr: Expr | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        return next(iter(self.idx.values())).shape

    def with_idx(self, idx: dict[str, np.ndarray]) -> Value:
        return Value(self.form, idx, self.expr, dict(self.info))


#: operators that only move entries: applied to every index array
INDEX_OPS = ("Reshape", "Transpose", "Unsqueeze", "Squeeze", "Flatten", "Slice", "Split",
             "Gather", "Expand", "Identity", "Concat", "Dropout", "Cast")


def _ints(x: Any) -> list[int]:
    return [int(v) for v in np.asarray(x).reshape(-1)]


def _reshape(a: np.ndarray, shape: list[int], allowzero: int) -> np.ndarray:
    target = [a.shape[i] if (s == 0 and not allowzero) else s for i, s in enumerate(shape)]
    return a.reshape(target)


def _slice(a: np.ndarray, starts: list[int], ends: list[int], axes: list[int],
           steps: list[int]) -> np.ndarray:
    sl = [slice(None)] * a.ndim
    for st, en, ax, step in zip(starts, ends, axes, steps):
        # an end beyond any axis (INT64_MAX, INT64_MIN) means "to the end" in either direction
        sl[ax % a.ndim] = slice(st, en if abs(en) < 2**62 else None, step)
    return a[tuple(sl)]


def index_op(op: str, arrays: list[np.ndarray], consts: list[Any], attrs: dict[str, Any],
             n_out: int, opset: int) -> list[np.ndarray]:
    """Apply the index operator ``op`` to one index array (the data input's), with the node's
    constant inputs and attributes, as ONNX would to numbers; returns the outputs' arrays."""
    a = arrays[0]
    if op in ("Identity", "Dropout", "Cast"):
        return [a]
    if op == "Reshape":
        return [_reshape(a, _ints(consts[1]), int(attrs.get("allowzero", 0)))]
    if op == "Transpose":
        perm = attrs.get("perm") or list(reversed(range(a.ndim)))
        return [np.transpose(a, perm)]
    if op in ("Unsqueeze", "Squeeze"):
        axes = attrs.get("axes") if "axes" in attrs else (
            _ints(consts[1]) if len(consts) > 1 and consts[1] is not None else None)
        if op == "Squeeze":
            return [np.squeeze(a, axis=None if axes is None else tuple(axes))]
        out = a
        rank = a.ndim + len(axes or ())
        for ax in sorted(x % rank for x in axes or ()):
            out = np.expand_dims(out, ax)
        return [out]
    if op == "Flatten":
        ax = int(attrs.get("axis", 1)) % (a.ndim + 1) if a.ndim else 0
        return [a.reshape(int(np.prod(a.shape[:ax], dtype=np.int64)), -1)]
    if op == "Slice":
        if opset < 10:
            starts, ends = list(attrs["starts"]), list(attrs["ends"])
            axes = list(attrs.get("axes", range(len(starts))))
            steps = [1] * len(starts)
        else:
            starts, ends = _ints(consts[1]), _ints(consts[2])
            axes = _ints(consts[3]) if len(consts) > 3 and consts[3] is not None \
                else list(range(len(starts)))
            steps = _ints(consts[4]) if len(consts) > 4 and consts[4] is not None \
                else [1] * len(starts)
        return [_slice(a, starts, ends, axes, steps)]
    if op == "Split":
        ax = int(attrs.get("axis", 0)) % a.ndim
        sizes = attrs.get("split") or (_ints(consts[1]) if len(consts) > 1
                                       and consts[1] is not None else None)
        if sizes is None:
            n = int(attrs.get("num_outputs", n_out))
            step = -(-a.shape[ax] // n)
            sizes = [min(step, a.shape[ax] - i * step) for i in range(n)]
        cuts = np.cumsum(sizes)[:-1]
        return list(np.split(a, cuts, axis=ax))
    if op == "Gather":
        return [np.take(a, np.asarray(consts[1]), axis=int(attrs.get("axis", 0)))]
    if op == "Expand":
        shape = _ints(consts[1])
        return [a * np.ones(shape, dtype=a.dtype)]
    raise InputError(f"operator {op} does not move entries")  # pragma: no cover - guarded
