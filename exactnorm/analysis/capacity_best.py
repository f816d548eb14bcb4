"""Best achievable in the stable class: the exact least-squares optimum of ``exactnorm capacity
--best`` (docs/capacity.md, "--best").

Contract. For a given network with one hidden ReLU layer and identity output, and an affine
target ``g(x) = W x + b`` on the box ``B``, the *stable class* holds the output scale at 1 and keeps
every hidden ReLU active on ``B`` (``β_1`` large; any ``γ_1 = u``): the network is then the affine
map ``x ↦ M x + c`` with ``M = V_2 diag(u) V_1`` and a free output bias ``c``. For ``x`` uniform on
``B`` (centre ``μ``, widths ``w_j``) and the best ``c = b + (W − M) μ`` the mean squared error is

    ``E(u) = Σ_i (M_i − W_i) C (M_i − W_i)ᵀ``,  ``C = diag(w_j²/12)``,

a weighted linear least-squares problem in ``u`` with rational data (``vec M = K u``,
``K = V_1ᵀ ⊙ V_2``). :func:`best_affine` solves its normal equations
``Kᵀ C̃ K u* = Kᵀ C̃ vec W`` (``C̃`` repeats ``C`` for every output) exactly and checks the
**stationarity identity** ``Kᵀ C̃ (K u* − vec W) = 0``; since ``C̃ ⪰ 0`` the objective is a convex
quadratic, so that identity proves ``E(u*)`` is the **minimum over the stable class**. The
**achieved sup-norm error** ``max_{x∈B} max_i |(M* − W)_i (x − μ)| = max_i Σ_j r_j |M*_{ij} −
W_{ij}|`` (``r`` the half-widths) is the exact worst error of that network on ``B``: an **upper
bound** on the best error any tuning reaches, not a claim of optimality (crossing ReLUs and a
tuned output scale are outside the stable class; optimality over them is an open question,
docs/capacity.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flint import fmpq, fmpz_mat

from exactnorm.constructions.burkholz import free_coordinates, pair_system
from exactnorm.errors import InputError, InvariantError
from exactnorm.exact.modular import common_denominator, solve_consistent, solve_full_row_rank
from exactnorm.exact.modular import witness_prime as _witness_prime
from exactnorm.exact.rationals import format_number
from exactnorm.model.batchnorm import given_chain
from exactnorm.model.network import FrozenNetwork, TargetNetwork
from exactnorm.model.operators.dense import dense_frozen, dense_layers

__all__ = ["BestResult", "best_affine", "STATEMENTS"]

#: what each number proves, in the words the command line prints
STATEMENTS = {
    "mse": "optimal in the stable class (output scale 1, every hidden ReLU active on the box): "
           "the least mean squared error over x uniform on the box, summed over the outputs, "
           "proven by the exact stationarity identity of the normal equations",
    "sup_error": "the largest error of that optimal stable network on the box (exact): an upper "
                 "bound on the best sup-norm error any tuning reaches",
}


@dataclass(frozen=True)
class BestResult:
    """The stable-class optimum (module docstring): ``mse`` (proven optimal in the class),
    ``sup_error`` (achieved, an upper bound overall), ``gamma_in`` = ``u*``, the output bias
    ``bias``, the rank of the normal matrix and the checked stationarity identity."""

    mse: fmpq
    sup_error: fmpq
    gamma_in: tuple[fmpq, ...]
    bias: tuple[fmpq, ...]
    rank: int
    stationarity: bool

    def as_dict(self) -> dict[str, Any]:
        return {"class": "stable (output scale 1, every hidden ReLU active on the box)",
                "mse": format_number(self.mse), "mse_statement": STATEMENTS["mse"],
                "sup_error": format_number(self.sup_error),
                "sup_error_statement": STATEMENTS["sup_error"],
                "stationarity": "Kᵀ C (K u − vec W) = 0 holds exactly" if self.stationarity
                else "not checked", "normal_rank": self.rank,
                "gamma_in": [format_number(x) for x in self.gamma_in],
                "output_bias": [format_number(x) for x in self.bias]}


def _times(M: fmpz_mat, v: list[fmpq]) -> list[fmpq]:
    nums, den = common_denominator(v)
    return [fmpq(x) / den for x in (M * fmpz_mat(len(nums), 1, nums)).entries()]


def best_affine(net: FrozenNetwork, g: TargetNetwork) -> BestResult:
    """The exact stable-class optimum for an affine target (module docstring).

    Raises
    ------
    InputError
        Not one hidden ReLU layer with identity output, or a target that is not one identity
        layer (the least squares of the affine maps needs an affine target).
    """
    layers = dense_frozen(net.layers, "best")
    if len(layers) != 2 or tuple(x.activation for x in layers) != ("relu", "identity") \
            or given_chain(net) is not None:
        raise InputError("best needs a given network with one hidden ReLU layer and identity "
                         "output, a chain", parameter="best")
    if g.depth != 1 or g.layers[0].activation != "identity" or not g.is_chain:
        raise InputError("best needs an affine target (one layer, identity activation): the "
                         "least squares of the affine maps on the box", parameter="best")
    V1, V2 = layers[0].weight, layers[1].weight
    first = dense_layers(g.layers, "best")[0]
    W, b = first.weight, first.bias
    c2, c0 = W.nrows(), W.ncols()
    free = free_coordinates(g.lower, g.upper)
    p = _witness_prime(fmpq(x).denom() for M in (V1, V2, W) for x in M.entries())
    K = pair_system(V1, V2, W, range(c2), free, outputs=False)
    weights = [(g.upper[t] - g.lower[t]) ** 2 / 12 for t in free]
    row_weight = [weights[r % len(free)] for r in range(K.Az.nrows())] if free else []
    exact = solve_full_row_rank(K.Az, K.rhs, p)
    if exact is not None:  # every affine map is reached in the stable class
        u1, rank = exact, K.Az.nrows()
    else:
        cn, _ = common_denominator(row_weight)
        rows = K.Az.tolist()
        weighted = fmpz_mat([[x * c for x in row] for row, c in zip(rows, cn)])
        G = K.Az.transpose() * weighted
        h = _times(weighted.transpose(), K.rhs)
        solved = solve_consistent(G, h, p)
        if solved is None:
            raise InvariantError("the normal equations of a least-squares problem are always "
                                 "consistent; the modular choice failed")
        u1 = solved
        rank = G.rank()
    residual = [a - r for a, r in zip(_times(K.Az, u1), K.rhs)]
    grad = _times(K.Az.transpose(), [c * r for c, r in zip(row_weight, residual)])
    if any(grad):
        raise InvariantError("the stationarity identity of the normal equations fails")
    mse = sum((c * r * r for c, r in zip(row_weight, residual)), fmpq(0))
    u = [x * s for x, s in zip(u1, K.scales)]
    M = V2 * fmpz_or_q_diag(u) * V1
    mu = [(lo + hi) / 2 for lo, hi in zip(g.lower, g.upper)]
    Wl, Ml = W.tolist(), M.tolist()
    bias = tuple(fmpq(b[i]) + sum(((fmpq(Wl[i][t]) - Ml[i][t]) * mu[t] for t in range(c0)),
                                  fmpq(0)) for i in range(c2))
    half = [(g.upper[t] - g.lower[t]) / 2 for t in range(c0)]
    sup = max(sum((half[t] * abs(Ml[i][t] - Wl[i][t]) for t in free), fmpq(0))
              for i in range(c2))
    return BestResult(mse, sup, tuple(u), bias, rank, True)


def fmpz_or_q_diag(v: list[fmpq]) -> Any:
    """``diag(v)`` as an ``fmpq_mat``."""
    from flint import fmpq_mat

    D = fmpq_mat(len(v), len(v))
    for k, x in enumerate(v):
        D[k, k] = x
    return D
