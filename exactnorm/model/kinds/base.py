"""What a layer kind must implement: the declared protocols of target and frozen layers.

A *kind* is the certificate's ``kind`` word (``checker.vocabulary.LAYER_KINDS``); in the model it
is one module of this package with a target layer class and a frozen layer class, registered in
:data:`exactnorm.model.kinds.KINDS`. The networks (:mod:`exactnorm.model.network`) only use what
is declared here, so their loops never name a kind:

* target: ``a_i = layer.evaluate(a_{i-1})`` (activation included), boxes by ``layer.interval``;
* frozen: ``h_j = σ_j(layer.pre_activation(h_{in(j)})) + Σ_s P_{j,s} h_s`` — the skips are
  topology and belong to the network, the pre-activation ``γ ⊙ (V·a) + β`` (per neuron or per
  channel) to the kind;
* float copy: the same frozen layer with every frozen entry rounded once to float64 and the exact
  γ, β kept (:class:`FloatKind`), evaluated in any float dtype by the kind-free loop of
  :class:`~exactnorm.model.network.FloatNetwork` — what an export computes, read from a
  certificate without building any exact matrix.

A kind whose layer is not affine on the box after stability (data-dependent normalization,
attention, max pooling) does not fit these protocols alone: it needs a new checker rule, argued
in its own module (docs/architecture.md, "Adding a layer kind").

Correctness contract of every implementation (tested for every registered kind by
``tests/kinds/test_kind_contract.py``): ``evaluate`` equals the kind's dense unfolded reference
exactly; ``interval(lo, hi)`` contains ``evaluate(a)`` for every ``a`` in the box; the float
methods agree with the exact ones up to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
from flint import fmpq, fmpq_mat

from exactnorm.checker.vocabulary import SKIP_KINDS
from exactnorm.errors import InputError
from exactnorm.exact.linalg import FlintMatrix
from exactnorm.model.routes import Route
from exactnorm.model.values import Node, Scaled, Vector

__all__ = ["TargetKind", "FrozenKind", "FloatKind", "LayerKind", "Skip", "rounded",
           "columns_by_evaluate"]


@dataclass(frozen=True)
class Skip:
    """A skip connection ``P h_source`` (topology, any kind): after the activation as a frozen
    layer's ``skips``, before it as a network's residual (a target layer's skip, a checkpoint's
    residual).

    ``weight`` is a FLINT matrix or, for the 0/1 kinds, a :class:`~exactnorm.model.routes.Route`
    (a row's one column). ``record`` is the draw record of a ``random`` skip
    (docs/certificate-format.md §2), so a certificate can prove it is the seeded draw;
    ``identity`` and ``selection`` skips need none.
    """

    source: int
    weight: FlintMatrix | Route
    kind: str  # identity | selection | random
    # where the matrix came from, not what it is: two layers with equal matrices are equal
    record: dict[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in SKIP_KINDS:
            raise InputError(f"unknown skip kind {self.kind!r}; expected one of {SKIP_KINDS}")
        if isinstance(self.weight, Route):
            if self.kind == "random":
                raise InputError("a random skip is a drawn matrix, not a 0/1 route")
            if self.kind == "identity" and not self.weight.is_identity:
                raise InputError("a skip of kind identity has the identity as its route")


class TargetKind(Protocol):
    """A target layer ``a ↦ σ(A a + b)`` of some kind, ``A`` a fixed linear map."""

    @property
    def kind(self) -> str: ...                          # the certificate's word

    @property
    def activation(self) -> str: ...

    @property
    def input_size(self) -> int: ...                    # entries read

    @property
    def width(self) -> int: ...                         # entries written

    @property
    def shape(self) -> tuple[int, int]: ...             # (width, input_size): the unfolded map

    @property
    def parameters(self) -> int: ...                    # target scalars (weights and biases)

    def affine(self, a: Vector) -> Vector: ...          # exact, before the activation

    def affine_interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]: ...

    def affine_float(self, A: np.ndarray) -> np.ndarray: ...

    def evaluate(self, a: Vector) -> Vector: ...        # exact, activation included

    def interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]: ...  # exact box

    def evaluate_float(self, A: np.ndarray) -> np.ndarray: ...  # float64 batch (n × input_size)

    def evaluate_columns(self, A: fmpq_mat) -> fmpq_mat: ...  # exact, one sample per column

    def affine_columns(self, S: Scaled) -> Scaled: ...  # the affine map of a batch (integers)

    def describe(self) -> str: ...                      # "conv 3×3 s1 p1 d1, 1→6 channels, relu"


class FrozenKind(Protocol):
    """A frozen layer ``u = γ ⊙ (V h_input) + β`` of some kind; only ``γ, β`` are tuned."""

    @property
    def kind(self) -> str: ...

    @property
    def input(self) -> int: ...                         # the node it reads

    @property
    def activation(self) -> str: ...

    @property
    def skips(self) -> tuple[Skip, ...]: ...            # () where the kind has none

    @property
    def input_size(self) -> int: ...

    @property
    def width(self) -> int: ...

    @property
    def tuned_parameters(self) -> int: ...              # γ and β entries

    @property
    def frozen_parameters(self) -> int: ...             # drawn entries (incl. random skips)

    def pre_activation(self, a: Vector) -> Vector: ...  # exact γ ⊙ (V·a) + β

    def pre_activation_float(self, A: np.ndarray) -> np.ndarray: ...

    def evaluate_node(self, a: Node) -> Node: ...       # exact σ(pre_activation), no skips

    def float_layer(self) -> FloatKind: ...             # its float copy

    def describe(self) -> str: ...


class FloatKind(Protocol):
    """A frozen layer of some kind as a float copy: frozen entries float64 arrays (each rounded
    once), γ and β exact (a BatchNorm conversion needs them exactly) and rounded on use."""

    @property
    def kind(self) -> str: ...

    @property
    def input(self) -> int: ...

    @property
    def activation(self) -> str: ...

    @property
    def skips(self) -> tuple[tuple[int, np.ndarray], ...]: ...   # (source node, float64 P)

    @property
    def skip_kinds(self) -> tuple[str, ...]: ...

    @property
    def gamma(self) -> tuple[fmpq, ...]: ...           # () where nothing is tuned

    @property
    def beta(self) -> tuple[fmpq, ...]: ...

    @property
    def input_size(self) -> int: ...

    @property
    def width(self) -> int: ...

    @property
    def tuned_parameters(self) -> int: ...

    @property
    def frozen_parameters(self) -> int: ...

    def pre_activation(self, A: np.ndarray, dtype: Any) -> np.ndarray: ...  # in ``dtype``

    def describe(self) -> str: ...


def columns_by_evaluate(layer: Any, A: fmpq_mat) -> fmpq_mat:
    """``evaluate`` of every column of ``A`` (input_size × m), as the columns of the result:
    :meth:`TargetKind.evaluate_columns` of a kind with no faster batch rule."""
    m = A.ncols()
    flat = A.entries()
    cols = [layer.evaluate(tuple(flat[c::m])) for c in range(m)]
    rows = len(cols[0]) if cols else layer.width
    return fmpq_mat(rows, m, [cols[c][r] for r in range(rows) for c in range(m)])


def rounded(v: Any) -> np.ndarray:
    """Exact numbers (``fmpq``) rounded to float64, each correctly (``int / int`` is, as
    ``float(Fraction)`` is).

    >>> rounded((fmpq(1, 3), fmpq(-2))).tolist()
    [0.3333333333333333, -2.0]
    """
    return np.array([int(x.p) / int(x.q) for x in v], dtype=np.float64)


class LayerKind(NamedTuple):
    """One registered kind of the model: its word and its layer classes (target, frozen, and
    the frozen layer's float copy)."""

    name: str
    target: type
    frozen: type
    float: type
