"""Finding the witnesses of ``exactnorm capacity`` and writing both document kinds.

Contract. Each finder returns a witness for an ``exactnorm.impossibility`` document
(docs/certificate-format.md §9) or ``None``; it never claims anything itself: the document is
checked by the independent checker, and every number in a witness is computed exactly here
(python-flint over ``Q``; modular arithmetic only to *choose* rows, columns and primes, with the
determinant residue recomputed by the checker). :func:`impossibility_document` writes the
document; the frozen matrices are the given ones, declared ``fixed`` with their source, or draw
records for random ones (table T11).

* :func:`interior_point` — a rational interior point of the box where every target ReLU is
  strictly on one side (the target is affine near it), with the target's pre-activations;
* :func:`local_jacobian` — the target's Jacobian there (output pre-activation) and the outputs
  ``I`` of Theorem LB;
* :func:`rank_witness` — a square minor of ``[K_I | −B_I]`` with all its columns, nonzero modulo
  a prime (Theorem LB, every tuning);
* :func:`fredholm_witness` — ``y`` with ``yᵀK_I = 0`` and the inner products with the Jacobian's
  rows the class needs (tuned output scale: all but one zero; fixed: their sum nonzero);
* :func:`kink_witness` — a target first-layer kink crossing the box, parallel to no row of
  ``V_1``, with the one-sided gradients;
* :func:`aligned_witness` — a row that is not a multiple of the frozen row (segment-aligned class).

Reference: docs/capacity.md ("The witnesses": Theorem LB, the Fredholm, kink and aligned
witnesses) and docs/certificate-format.md §9 (what the checker verifies of each). Every finder
takes a *chain* target (its layers read the layer before them, no skip): the caller
(:func:`exactnorm.analysis.capacity.decide`) decides nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from flint import fmpq, fmpq_mat, fmpz_mat, nmod_mat

from exactnorm.certificate import compact_numbers, target_sections
from exactnorm.checker.vocabulary import IMPOSSIBILITY_FORMAT
from exactnorm.constructions.burkholz import PairSystem, free_coordinates, pair_system
from exactnorm.errors import InvariantError
from exactnorm.exact.linalg import FlintMatrix, to_fraction
from exactnorm.exact.modular import (
    common_denominator,
    det_mod,
    independent_rows,
    left_solution,
    rank_and_pivots,
    submatrix,
)
from exactnorm.exact.rationals import format_number
from exactnorm.model.network import TargetNetwork, affine_interval, column
from exactnorm.model.operators.dense import dense_layers

__all__ = ["interior_point", "preactivations", "local_jacobian", "rank_witness",
           "fredholm_witness", "vanishing_outputs", "kink_witness", "aligned_rows",
           "aligned_witness", "impossibility_document", "number_list", "compact_target",
           "with_point"]


def number_list(values: Sequence[Any]) -> dict[str, Any]:
    """Exact numbers in the compact ``{"den", "num"}`` form."""
    return compact_numbers([fmpq(v) if not isinstance(v, Fraction) else
                            fmpq(v.numerator, v.denominator) for v in values])


def preactivations(g: TargetNetwork, x: Sequence[fmpq]) -> list[list[fmpq]]:
    """The target's pre-activations ``W_i a_{i−1} + b_i`` at ``x``, layer by layer."""
    out, a = [], list(x)
    for layer in dense_layers(g.layers, "a capacity witness"):
        z = layer.weight * column(a)
        pre = [z[r, 0] + layer.bias[r] for r in range(z.nrows())]
        out.append(pre)
        a = [v if layer.activation == "identity" or v > 0 else fmpq(0) for v in pre]
    return out


def _strict(g: TargetNetwork, values: list[list[fmpq]], skip: tuple[int, int] | None) -> bool:
    return all(v != 0 for i, (layer, z) in enumerate(zip(g.layers, values), 1)
               if layer.activation == "relu" for r, v in enumerate(z) if (i, r) != skip)


def _interior(g: TargetNetwork, x: Sequence[fmpq]) -> bool:
    return all((lo < v < hi) if lo < hi else v == lo for v, lo, hi in zip(x, g.lower, g.upper))


def interior_point(g: TargetNetwork, tries: int = 64) -> tuple[list[fmpq], list[list[fmpq]]] | None:
    """A point of the box's interior where every target ReLU is strictly on one side: the centre,
    else a few deterministic rational perturbations of it (``None`` if none is found)."""
    d = len(g.lower)
    centre = [(lo + hi) / 2 for lo, hi in zip(g.lower, g.upper)]
    for k in range(tries):
        x = list(centre)
        if k:
            for t in range(d):
                if g.lower[t] < g.upper[t]:
                    # a different small offset per coordinate and try, inside the box
                    x[t] += (g.upper[t] - g.lower[t]) * fmpq(((t * 7 + k * 13) % 29) - 14,
                                                             64 * (k + 1))
        if not _interior(g, x):
            continue
        values = preactivations(g, x)
        if _strict(g, values, None):
            return x, values
    return None


def _pattern_product(g: TargetNetwork, values: list[list[fmpq]], final: bool,
                     flip: tuple[int, bool] | None = None) -> fmpq_mat:
    """``(D_L) W_L D_{L−1} ⋯ D_1 W_1`` for the pattern at the point (the checker's
    ``_gradient``)."""
    M = fmpq_mat(dense_layers(g.layers, "a capacity witness")[0].weight)
    for i in range(1, g.depth + (1 if final else 0)):
        layer = g.layers[i - 1]
        if layer.activation == "relu":
            keep = [v > 0 for v in values[i - 1]]
            if i == 1 and flip is not None:
                keep[flip[0]] = flip[1]
            rows = M.tolist()
            M = fmpq_mat([row if k else [fmpq(0)] * len(row) for row, k in zip(rows, keep)])
        if i == g.depth:
            break
        M = dense_layers(g.layers, "a capacity witness")[i].weight * M
    return M


def local_jacobian(g: TargetNetwork, values: list[list[fmpq]], frozen_output: str,
                   nonzero: bool = True) -> tuple[fmpq_mat, list[int]]:
    """The target's Jacobian ``J`` (output pre-activation) at the point and the outputs ``I``:
    rows nonzero on the free coordinates (``nonzero``), active when an output activation is
    ReLU (docs/certificate-format.md §9, rule ``outputs``)."""
    J = _pattern_product(g, values, final=False)
    free = free_coordinates(g.lower, g.upper)
    relu = g.layers[-1].activation == "relu" or frozen_output == "relu"
    rows = J.tolist()
    outputs = [i for i, row in enumerate(rows)
               if (not nonzero or any(row[t] for t in free))
               and (not relu or values[-1][i] > 0)]
    return J, outputs


def _point_fields(x: Sequence[fmpq], values: list[list[fmpq]]) -> dict[str, Any]:
    return {"point": number_list(x), "values": [number_list(z) for z in values]}


def rank_witness(V1: FlintMatrix, V2: FlintMatrix, J: fmpq_mat, outputs: list[int],
                 free: list[int], p: int, system: PairSystem | None = None
                 ) -> tuple[dict[str, Any] | None, int]:
    """A ``rank`` witness (without point fields) when ``[K_I | −B_I]`` has full column rank
    modulo ``p``, and the rank found."""
    A = system if system is not None else pair_system(V1, V2, J, outputs, free)
    n = A.Az.ncols()
    rank, _ = rank_and_pivots(A.Az, p)
    if rank < n:
        return None, rank
    rows = independent_rows(A.Az, p)
    delta = det_mod(submatrix(A.Az, rows, range(n)), p)
    # the checker reduces the unscaled rational entries: divide out the column scales
    for s in A.scales:
        delta = delta * pow(int(s) % p, p - 2, p) % p
    return {"kind": "rank", "outputs": list(outputs), "prime": p,
            "rows": [A.checker_row(r) for r in rows], "determinant": delta}, rank


def vanishing_outputs(A: PairSystem, p: int) -> list[int]:
    """Indices ``a`` (into the outputs) whose ``λ_a`` is zero on every kernel vector of ``A``
    modulo ``p``: a pivot column whose reduced row vanishes on every free column."""
    Az = A.Az
    if Az.nrows() == 0:
        return []
    R, rank = nmod_mat(Az, p).rref()
    n = Az.ncols()
    entries = R.entries()
    _, pivots = rank_and_pivots(Az, p)
    free = [j for j in range(n) if j not in set(pivots)]
    out = []
    for k, col in enumerate(pivots):
        if col >= A.c1 and all(not int(entries[k * n + j]) for j in free):
            out.append(col - A.c1)
    return out


def fredholm_witness(V1: FlintMatrix, V2: FlintMatrix, J: fmpq_mat, outputs: list[int],
                     free: list[int], p: int, scale: str) -> dict[str, Any] | None:
    """A ``fredholm`` witness (without point fields): for ``scale="tuned"`` an output whose
    ``1/γ_out`` vanishes on every solution; for ``"fixed"`` a ``y`` separating ``vec J`` from the
    column space of ``K``. Exact (checked by :func:`~exactnorm.exact.modular.left_solution`)."""
    c0 = V1.ncols()
    if scale == "tuned":
        A = pair_system(V1, V2, J, outputs, free)
        for a in vanishing_outputs(A, p):
            c = [fmpq(0)] * A.Az.ncols()
            # yᵀA = −e_{λ_a}: ⟨y_a, J_a⟩ = 1 exactly (the checker's normalization)
            c[A.c1 + a] = -fmpq(A.scales[A.c1 + a])
            y = left_solution(A.Az, c, p)
            if y is not None:
                return {"kind": "fredholm", "scale": "tuned", "outputs": list(outputs),
                        "output": a, "y": number_list(_checker_y(A, y, c0))}
        return None
    K = pair_system(V1, V2, J, outputs, free, outputs=False)
    rhs_nums, den = common_denominator(K.rhs)
    Kw = fmpz_mat([list(row) + [x] for row, x in zip(K.Az.tolist(), rhs_nums)])
    c = [fmpq(0)] * Kw.ncols()
    c[-1] = fmpq(den)  # yᵀ(vec J·den) = den, i.e. ⟨y, vec J⟩ = 1
    y = left_solution(Kw, c, p)
    if y is None:
        return None
    return {"kind": "fredholm", "scale": "fixed", "outputs": list(outputs),
            "y": number_list(_checker_y(K, y, c0))}


def _checker_y(A: PairSystem, y: list[fmpq], c0: int) -> list[fmpq]:
    """``y`` over the rows of a pair system → over ``a·c0 + j`` (zeros at pinned ``j``)."""
    out = [fmpq(0)] * (len(A.live) * c0)
    for r, v in enumerate(y):
        out[A.checker_row(r)] = v
    return out


def _direction(row: Sequence[Any], free: list[int]) -> tuple[fmpq, ...] | None:
    """The row on the free coordinates divided by its first nonzero entry (``None``: zero)."""
    v = [fmpq(row[t]) for t in free]
    lead = next((x for x in v if x), None)
    return None if lead is None else tuple(x / lead for x in v)


def kink_witness(V1: FlintMatrix, g: TargetNetwork) -> dict[str, Any] | None:
    """A ``kink`` witness for the first suitable target first-layer neuron, or ``None``."""
    if g.depth < 2 or g.layers[0].activation != "relu":
        return None
    free = free_coordinates(g.lower, g.upper)
    if len(free) < 2:
        return None
    frozen_dirs = {d for d in (_direction(row, free) for row in V1.tolist()) if d is not None}
    first = dense_layers(g.layers, "a capacity witness")[0]
    W1, b1 = first.weight, first.bias
    lo_z, hi_z = affine_interval(W1, b1, g.lower, g.upper)
    rows = W1.tolist()
    centre = [(lo + hi) / 2 for lo, hi in zip(g.lower, g.upper)]
    for r, row in enumerate(rows):
        d = _direction(row, free)
        if d is None or d in frozen_dirs or not lo_z[r] < 0 < hi_z[r]:
            continue
        for x in _points_on_kink(g, row, b1[r], centre):
            values = preactivations(g, x)
            if values[0][r] != 0 or not _strict(g, values, (1, r)):
                continue
            plus = _pattern_product(g, values, True, (r, True))
            minus = _pattern_product(g, values, True, (r, False))
            pl, mi = plus.tolist(), minus.tolist()
            if all(pl[i][t] == mi[i][t] for i in range(len(pl)) for t in free):
                break  # the jump W_L⋯W_2[:, r]·W_1[r] vanishes: no kink to show
            return {"kind": "kink", "neuron": r, **_point_fields(x, values),
                    "gradients": {"plus": compact_numbers(plus), "minus": compact_numbers(minus)}}
    return None


def _points_on_kink(g: TargetNetwork, row: list[Any], b: fmpq,
                    centre: list[fmpq]) -> list[list[fmpq]]:
    """Interior points on ``row·x + b = 0``: between a point near the minimizing corner and one
    near the maximizing corner (both interior), then nudged along the hyperplane."""
    lo, hi = g.lower, g.upper
    w = [fmpq(v) for v in row]

    def z(x: Sequence[fmpq]) -> fmpq:
        return sum((a * c for a, c in zip(w, x)), fmpq(0)) + b

    def corner(low: bool) -> list[fmpq]:
        return [(lo[t] if (w[t] > 0) == low else hi[t]) if lo[t] < hi[t] else lo[t]
                for t in range(len(w))]

    zc = z(centre)
    ends = []
    for low in (True, False):
        v = corner(low)
        zv = z(v)
        # s in (s0, 1) keeps the sign of z(v) at c + s(v − c)
        s0 = max(fmpq(0), zc / (zc - zv)) if zc * zv <= 0 and zc != zv else fmpq(0)
        s = (1 + s0) / 2
        ends.append([c + s * (a - c) for c, a in zip(centre, v)])
    p_minus, p_plus = ends
    zm, zp = z(p_minus), z(p_plus)
    tau = -zm / (zp - zm)
    x = [a + tau * (c - a) for a, c in zip(p_minus, p_plus)]
    out = [x]
    free = [t for t in range(len(w)) if lo[t] < hi[t]]
    pivot = next((t for t in free if w[t]), None)
    for k, t in enumerate([t for t in free if t != pivot][:8]):
        step = (hi[t] - lo[t]) / fmpq(1 << (8 + k))
        y = list(x)
        y[t] += step
        y[pivot] -= step * w[t] / w[pivot]  # type: ignore[index]
        if _interior(g, y):
            out.append(y)
    return out


def aligned_rows(V: FlintMatrix, W: FlintMatrix, lo: Sequence[fmpq], hi: Sequence[fmpq]
                 ) -> tuple[list[fmpq] | None, dict[str, Any] | None]:
    """Per row the scalar ``γ_r`` with ``γ_r V[r, F] = W[r, F]`` (``F`` the free coordinates
    of the box), or the first row where none exists as an ``aligned`` witness fragment."""
    free = free_coordinates(lo, hi)
    gammas: list[fmpq] = []
    Vrows: list[list[Any]] = V.tolist()
    Wrows: list[list[Any]] = W.tolist()
    for r, (vrow, wrow) in enumerate(zip(Vrows, Wrows)):
        pivot = next((t for t in free if vrow[t]), None)
        if pivot is None:
            s = next((t for t in free if wrow[t]), None)
            if s is not None:
                return None, {"neuron": r, "columns": [s], "value": format_number(
                    to_fraction(wrow[s]))}
            gammas.append(fmpq(0))
            continue
        ratio = fmpq(wrow[pivot]) / vrow[pivot]
        bad = next((t for t in free if wrow[t] * vrow[pivot] != wrow[pivot] * vrow[t]), None)
        if bad is not None:
            s, t = sorted((pivot, bad))
            minor = fmpq(wrow[s]) * vrow[t] - fmpq(wrow[t]) * vrow[s]
            return None, {"neuron": r, "columns": [s, t],
                          "minor": format_number(to_fraction(minor))}
        gammas.append(ratio)
    return gammas, None


def aligned_witness(weights: Sequence[FlintMatrix], g: TargetNetwork) -> dict[str, Any] | None:
    """The first layer and row where the segment-aligned ratio test fails, as a witness."""
    boxes = g.interval_boxes()
    for j, (V, layer) in enumerate(zip(weights, dense_layers(g.layers, "a capacity witness")), 1):
        _, bad = aligned_rows(V, layer.weight, *boxes[j - 1])
        if bad is not None:
            return {"kind": "aligned", "layer": j, **bad}
    return None


def compact_target(doc: dict[str, Any], g: TargetNetwork) -> dict[str, Any]:
    """``doc`` with the target's weights and biases in the compact ``{"den", "num"}`` form
    (format §1.1): a trained network's float weights have many power-of-two denominators, whose
    common denominator written once is the short form (the checker reads either form and bounds
    a plain list's common denominator by what it is, format §6)."""
    layers = [{**entry, "weight": compact_numbers(layer.weight),
               "bias": number_list(layer.bias)}
              for entry, layer in zip(doc["target"]["layers"],
                                      dense_layers(g.layers, "a capacity witness"))]
    return {**doc, "target": {**doc["target"], "layers": layers}}


def impossibility_document(g: TargetNetwork, frozen: Sequence[tuple[FlintMatrix, str,
                                                                     dict[str, Any]]],
                           witness: dict[str, Any], provenance: dict[str, Any]) -> dict[str, Any]:
    """An ``exactnorm.impossibility`` document: the target, the frozen layers ``(V, activation,
    source)`` (a draw record → by reference; ``{"kind": "fixed", …}`` → explicit), the witness."""
    layers = []
    for V, act, source in frozen:
        if "generator" in source:
            layers.append({"weight": {"random": source}, "activation": act})
        else:
            layers.append({"weight": compact_numbers(V), "source": source, "activation": act})
    if not g.is_chain:
        raise InvariantError("an impossibility document's witnesses are found for a chain "
                             "target; capacity decides nothing else")
    doc = {"format": IMPOSSIBILITY_FORMAT, "version": 1, **target_sections(g),
           "network": {"layers": layers}, "witness": witness, "provenance": provenance}
    return compact_target(doc, g)


def with_point(witness: dict[str, Any], x: Sequence[fmpq],
               values: list[list[fmpq]]) -> dict[str, Any]:
    """A rank or Fredholm witness with its point and the target's pre-activations there."""
    return {**witness, **_point_fields(x, values)}
