"""The three roles of a layer, written once for every kind: target, frozen, float copy.

A layer is a role around an :class:`~exactnorm.model.operators.base.Operator` ``A`` (the kind's
structured linear map); nothing here names a kind. Output ``r`` belongs to γ group
``r // per``, ``per = rows / channels`` (:mod:`~exactnorm.model.operators.base`):

* :class:`TargetLayer` ``a ↦ σ(A a + b)``, ``b`` one entry per group;
* :class:`FrozenLayer` ``h ↦ σ(γ ⊙_groups (A h_input) + β) + Σ_s P_s h_s``: only γ and β are
  tuned, ``A``'s weight is drawn, the skips ``P_s`` are topology (added by the network);
* :class:`FloatLayer`, its float copy: the weight rounded once to float64, γ and β exact (a
  BatchNorm conversion needs them so) and rounded on use: what an export computes.

A fixed map (``channels == 0``: a pooling) has no bias, γ or β and activation identity; its
frozen layer is the same map. A bare matrix given as the operator is the dense map. Correctness:
each method is the operator's exact map, the same group-wise affine map and the activation, so
a role is as exact as its operator (``tests/kinds``, every kind against its unfolded reference).

>>> from flint import fmpq_mat, fmpq
>>> t = TargetLayer(fmpq_mat([[1, -1]]), (fmpq(0),), "relu")
>>> t.evaluate((fmpq(2), fmpq(1))), t.interval((fmpq(0),) * 2, (fmpq(1),) * 2), t.describe()
((1,), ((0,), (1,)), 'dense 2→1, relu')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat

from exactnorm.checker.vocabulary import ACTIVATIONS
from exactnorm.errors import InputError, ShapeError
from exactnorm.model.batch import activate_batch, add_row_bias, as_columns, from_columns, to_columns
from exactnorm.model.operators import Operator, as_operator, float_copy, matrix_shape, rounded
from exactnorm.model.operators.base import box_image_columns
from exactnorm.model.routes import Skip
from exactnorm.model.values import Node, Scaled, Vector, activate, scaled_affine

__all__ = ["TargetLayer", "FrozenLayer", "FloatLayer", "Skip", "STABILITY_FAMILIES"]

#: where a frozen layer's ReLU groups are stable: every position's box, or their hull (§8)
STABILITY_FAMILIES = ("positions", "hull")


def _grouped(v: Vector, scale: Vector | None, shift: Vector, per: int) -> Vector:
    """``scale[r // per]·v[r] + shift[r // per]`` (no scale: 1; no shift: the identity)."""
    if not shift:
        return tuple(v)
    return tuple((scale[r // per] * x if scale else x) + shift[r // per] for r, x in enumerate(v))


def _box_columns(lo: Vector, hi: Vector, n: int) -> tuple[Scaled, Scaled]:
    """The ends of a box of ``n`` coordinates as columns of integers over a denominator."""
    if len(lo) != n or len(hi) != n:
        raise ShapeError(f"a box of {len(lo)} and {len(hi)} entries for a layer of {n} inputs")
    return Scaled.of(lo, n, 1), Scaled.of(hi, n, 1)


class _Role:
    """What every role reads off its operator (kind-free), and its checks."""

    operator: Operator
    activation: str
    skips: tuple[Any, ...] = ()

    def _check(self, **vectors: Vector) -> None:
        op = as_operator(self.operator)
        object.__setattr__(self, "operator", op)
        if self.activation not in ACTIVATIONS:
            raise InputError(f"unknown activation {self.activation!r}; expected one of "
                             f"{ACTIVATIONS}")
        for name, v in vectors.items():
            object.__setattr__(self, name, tuple(v))
            if len(v) != op.channels:
                raise ShapeError(f"a {op.kind} layer's {name} has length {len(v)}, expected "
                                 f"{op.channels} (one per γ group)")
        if op.channels == 0 and self.activation != "identity":
            raise InputError(f"{op.describe()} is a fixed map: its activation is identity")

    @property
    def kind(self) -> str:
        return self.operator.kind

    @property
    def weight(self) -> Any:
        return self.operator.weight

    @property
    def input_size(self) -> int:
        return self.operator.shape[1]

    @property
    def width(self) -> int:
        return self.operator.shape[0]

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.operator.output_shape

    @property
    def channels(self) -> int:
        return self.operator.channels

    @property
    def tuned_parameters(self) -> int:
        return 2 * self.operator.channels

    @property
    def _weight_shape(self) -> tuple[int, int]:
        W = self.operator.weight
        return (0, 0) if W is None else matrix_shape(W)

    @property
    def _per(self) -> int:
        """Outputs per γ group (1 for a fixed map: its rows are not grouped)."""
        op = self.operator
        return op.shape[0] // op.channels if op.channels else 1

    def describe(self) -> str:
        """``"conv 3×3 s1 p1 d1, 1→6 channels, relu, 1 skip(s)"``: a fixed map's activation
        (always the identity) is not said."""
        return (self.operator.describe() + (f", {self.activation}" if self.channels else "")
                + (f", {len(self.skips)} skip(s)" if self.skips else ""))


@dataclass(frozen=True)
class TargetLayer(_Role):
    """One target layer ``σ(A a + b)`` (module doc)."""

    operator: Operator
    bias: Vector = ()
    activation: str = "identity"

    def __post_init__(self) -> None:
        self._check(bias=self.bias)

    @property
    def shape(self) -> tuple[int, int]:
        return self.operator.shape

    @property
    def parameters(self) -> int:
        """Target scalars: the weight's entries and the bias."""
        rows, cols = self._weight_shape
        return rows * cols + len(self.bias)

    def affine(self, a: Vector) -> Vector:
        return _grouped(self.operator.apply(a), None, self.bias, self._per)

    def affine_interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        mn, mx = self.affine_interval_columns(*_box_columns(lo, hi, self.input_size))
        return mn.values(), mx.values()

    def affine_interval_columns(self, lo: Scaled, hi: Scaled) -> tuple[Scaled, Scaled]:
        """The exact range of ``A a + b`` over the box ``lo ≤ a ≤ hi`` (one sample each,
        integers over a denominator): the operator's exact image, plus the bias, in the layout
        the operator gives (a column, or a convolution's channels × positions: C order, so
        its rows split evenly into the γ groups either way)."""
        mn, mx = box_image_columns(self.operator, lo, hi)
        if mn.num.nrows() % max(len(self.bias), 1):
            mn, mx = as_columns(mn, self.width), as_columns(mx, self.width)
        group = mn.num.nrows() // max(len(self.bias), 1)
        return (add_row_bias(mn.num, mn.den, self.bias, group),
                add_row_bias(mx.num, mx.den, self.bias, group))

    def interval_columns(self, lo: Scaled, hi: Scaled) -> tuple[Scaled, Scaled]:
        """:meth:`interval` on integers over a denominator (σ is monotone: the ends map to
        the ends)."""
        mn, mx = self.affine_interval_columns(lo, hi)
        return activate_batch(self.activation, mn), activate_batch(self.activation, mx)

    def affine_float(self, A: np.ndarray) -> np.ndarray:
        out = self.operator.apply_float(np.asarray(A, dtype=np.float64))
        return out + np.repeat(rounded(self.bias), self._per) if self.bias else out

    def affine_columns(self, S: Scaled) -> Scaled:
        """``A S + b`` for a batch (integers over one denominator, one sample per column)."""
        Z = as_columns(self.operator.apply_columns(S), self.width)
        return add_row_bias(Z.num, Z.den, self.bias, self._per)

    def evaluate(self, a: Vector) -> Vector:
        return activate(self.activation, self.affine(a))

    def interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        mn, mx = self.interval_columns(*_box_columns(lo, hi, self.input_size))
        return mn.values(), mx.values()

    def evaluate_float(self, A: np.ndarray) -> np.ndarray:
        out = self.affine_float(A)
        return np.maximum(out, 0.0) if self.activation == "relu" else out

    def evaluate_columns(self, A: fmpq_mat) -> fmpq_mat:
        """``σ(A X + b 1ᵀ)``: one product for a batch of samples (the columns of ``X``)."""
        return to_columns(activate_batch(self.activation, self.affine_columns(from_columns(A))))


@dataclass(frozen=True)
class FrozenLayer(_Role):
    """``h = σ(γ ⊙_groups (A h_input) + β) + Σ skips``; only ``gamma`` and ``beta`` are tuned.

    ``record`` is the draw record of the weight (docs/certificate-format.md §2), a ``{"kind":
    "fixed", "why": …}`` declaration, or ``None`` (not writable as version 2 or later);
    ``drawn_columns`` the weight's drawn columns when the others are structural zeros (a block
    mask; ``None``: every entry drawn); ``stability`` the family of boxes on which the writer made
    the ReLU groups stable (:data:`STABILITY_FAMILIES`)."""

    input: int
    operator: Operator
    gamma: Vector = ()
    beta: Vector = ()
    activation: str = "identity"
    skips: tuple[Skip, ...] = ()
    # where the matrix came from, not what it is: two layers with equal matrices are equal
    record: dict[str, Any] | None = field(default=None, compare=False)
    drawn_columns: tuple[int, ...] | None = None
    stability: str = "positions"

    def __post_init__(self) -> None:
        self._check(gamma=self.gamma, beta=self.beta)
        object.__setattr__(self, "skips", tuple(self.skips))
        if self.stability not in STABILITY_FAMILIES:
            raise InputError(f"stability must be one of {', '.join(STABILITY_FAMILIES)}, got "
                             f"{self.stability!r}")
        if self.drawn_columns is None:
            return
        cols = tuple(int(c) for c in self.drawn_columns)
        object.__setattr__(self, "drawn_columns", cols)
        width, keep = self._weight_shape[1], set(cols)
        if len(keep) != len(cols) or not all(0 <= c < width for c in cols):
            raise ShapeError(f"drawn columns {cols} are not distinct columns of a weight with "
                             f"{width} columns")
        if any(x != 0 for row in self.weight.tolist() for c, x in enumerate(row) if c not in keep):
            raise ShapeError("a weight entry outside the drawn columns is not zero")

    @property
    def frozen_parameters(self) -> int:
        """Drawn entries of the weight (structural zeros excluded) plus entries of random
        skips; 0/1 skips are fixed layout, not parameters."""
        rows, cols = self._weight_shape
        drawn = cols if self.drawn_columns is None else len(self.drawn_columns)
        return rows * drawn + sum(s.parameters for s in self.skips)

    def pre_activation(self, a: Vector) -> Vector:
        """Exact ``γ ⊙_groups (A a) + β``."""
        return _grouped(self.operator.apply(a), self.gamma, self.beta, self._per)

    def evaluate_node(self, a: Node) -> Node:
        """``σ(pre_activation)`` without skips, as integers over one denominator: one integer
        product of the operator with the node (however the node is held)."""
        Z = self.operator.apply_columns(a if isinstance(a, Scaled)
                                        else Scaled.of(a, self.input_size, 1))
        if not self.channels:
            return activate_batch(self.activation, Z)
        return scaled_affine(Z.num, Z.den, self.gamma, self.beta, self.activation)

    def float_layer(self) -> FloatLayer:
        """The float copy: the weight and the skips rounded once, γ and β exact."""
        return FloatLayer(self.input, float_copy(self.operator), self.gamma, self.beta,
                          self.activation, tuple((s.source, s.float_weight())
                                                 for s in self.skips),
                          tuple(s.kind for s in self.skips))


@dataclass(frozen=True, eq=False)
class FloatLayer(_Role):
    """The float copy (module doc): ``u = γ ⊙_groups (A h) + β`` in the evaluation dtype;
    ``skips`` are ``(source, P)``, ``P`` float64 or a :class:`~exactnorm.model.routes.
    FloatIdentity`, their kinds in ``skip_kinds``."""

    input: int
    operator: Operator
    gamma: tuple[fmpq, ...] = ()
    beta: tuple[fmpq, ...] = ()
    activation: str = "identity"
    skips: tuple[tuple[int, Any], ...] = ()
    skip_kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._check(gamma=self.gamma, beta=self.beta)

    @property
    def frozen_parameters(self) -> int:
        W = self.operator.weight
        return (0 if W is None else int(W.size)) + sum(
            P.size for (_, P), k in zip(self.skips, self.skip_kinds) if k == "random")

    @functools.cached_property
    def _scale_shift(self) -> tuple[np.ndarray, np.ndarray]:
        """γ and β rounded to float64 (each correctly), repeated over each group's outputs."""
        return np.repeat(rounded(self.gamma), self._per), np.repeat(rounded(self.beta), self._per)

    def pre_activation(self, A: np.ndarray, dtype: Any) -> np.ndarray:
        v = self.operator.apply_float(A, dtype)
        if not self.channels:
            return v
        g, b = self._scale_shift
        return v * g.astype(dtype) + b.astype(dtype)
