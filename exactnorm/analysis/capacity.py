"""Capacity of a given network: what re-tuning only its normalization can reach, decided exactly.

Contract. :func:`capacity_profile` measures, for every pair of consecutive frozen linear layers,
the exact rank of its Khatri–Rao matrix ``K = V_jᵀ ⊙ V_{j+1}`` against the size a universal pair
needs (``c2·c0`` with the output scale held, Burkholz's ``c2·c0 − c2 + 1`` counted with it tuned),
with a rank witness. :func:`decide` answers REACH for a target on a box with one word —
``REACHABLE``, ``UNREACHABLE`` or ``UNDECIDED`` — and a document either way: an ordinary
certificate whose frozen matrices are the given ones (declared ``fixed``), or an
``exactnorm.impossibility`` document (docs/certificate-format.md §9). Nothing here is trusted:
both documents are checked by the independent checker.

Decision procedure (frontier.md §3.1, §4.2–§4.4), first success wins:

1. *kink* (frozen network with one hidden ReLU layer and identity output, target with a hidden
   ReLU layer): a target first-layer kink crossing the box, parallel to no frozen row →
   UNREACHABLE for every tuning;
2. *same architecture* (equal widths and activations): the rows/ratios test with one frozen layer
   per target layer — every layer ``W_j[r, F] = γ_{j,r} V_j[r, F]`` on the free coordinates ``F``
   of the target's box ``B_{j−1}`` → REACHABLE (segment-aligned certificate);
3. *one hidden frozen layer*: at an interior point ``x0`` where the target is affine with
   Jacobian ``J`` and outputs ``I`` (Theorem LB): ``[K_I | −B_I]`` of full column rank →
   UNREACHABLE for every tuning; an affine target with the matching output activation →
   REACHABLE by :func:`~exactnorm.constructions.burkholz.solve_pair` (``γ_out = 1`` when ``K``
   has full row rank); a Fredholm vector → UNREACHABLE (every tuning with the output scale tuned,
   or in the class with it held at 1);
4. *same architecture, negative*: a row that is no multiple of the frozen row → UNREACHABLE in
   the segment-aligned class;
5. otherwise UNDECIDED, naming the class that was not settled.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flint import fmpq, fmpq_mat

from exactnorm.analysis.capacity_witness import (
    aligned_rows,
    aligned_witness,
    compact_target,
    fredholm_witness,
    impossibility_document,
    interior_point,
    kink_witness,
    local_jacobian,
    rank_witness,
    with_point,
)
from exactnorm.certificate import certificate_document
from exactnorm.checker.vocabulary import OUTPUT_SCALES as FORMAT_OUTPUT_SCALES
from exactnorm.constructions.burkholz import (
    PairSolution,
    free_coordinates,
    live_rows,
    pair_system,
    realize_given_pair,
    solve_pair,
)
from exactnorm.constructions.common import Construction, LayerReport
from exactnorm.errors import InputError
from exactnorm.exact.modular import (
    det_mod,
    independent_rows,
    kernel_vector,
    rank_and_pivots,
    solve_consistent,
    submatrix,
    witness_prime,
)
from exactnorm.model.given import GivenNetwork
from exactnorm.model.network import FrozenLayer, FrozenNetwork, TargetNetwork
from exactnorm.model.operators.dense import Dense, dense_layers

__all__ = ["OUTPUT_SCALES", "VERDICTS", "ProfileRow", "Decision", "capacity_profile", "decide",
           "given_sources"]

#: ``tuned``: the output layer's γ is tuned like every other; ``fixed``: held at 1 (the format's
#: words for the Fredholm witness, docs/certificate-format.md §9)
OUTPUT_SCALES = FORMAT_OUTPUT_SCALES
VERDICTS = ("REACHABLE", "UNREACHABLE", "UNDECIDED")


@dataclass(frozen=True)
class ProfileRow:
    """One pair of consecutive frozen linear layers ``(V_j, V_{j+1})``: widths, the exact rank
    of ``K``, what a universal pair needs, the verdicts and the witness (JSON-ready)."""

    pair: int
    c0: int
    c1: int
    c2: int
    rank: int
    needed: int
    needed_tuned: int
    universal: bool
    tuned: str
    witness: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"pair": [self.pair, self.pair + 1], "c0": self.c0, "c1": self.c1, "c2": self.c2,
                "rank": self.rank, "needed": self.needed, "needed_tuned": self.needed_tuned,
                "universal": self.universal, "tuned": self.tuned, "witness": self.witness}


def _prime(net: GivenNetwork, g: TargetNetwork | None = None) -> int:
    targets = dense_layers(g.layers, "capacity") if g is not None else ()
    mats = net.weights + [layer.weight for layer in targets]
    return witness_prime(fmpq(x).denom() for M in mats for x in M.entries())


def capacity_profile(net: GivenNetwork,
                     progress: Callable[[int, int], None] | None = None) -> list[ProfileRow]:
    """The capacity profile (module docstring): one row per pair of consecutive linear layers.

    Rank: a nonzero minor modulo a prime is a lower bound (its rows, columns, prime and residue
    are the witness); with ``min(rows, columns)`` it is exact; below that the exact rank is
    FLINT's over ``Q`` and a nonzero ``y`` with ``yᵀK = 0`` (checked exactly) shows what is not
    reached. ``universal``: ``rank K = c2·c0`` (every target layer of that shape on any box, the
    output scale held or tuned); ``tuned``: ``universal``, or ``not universal`` with the
    dimension count ``rank K + c2 − 1`` of the reachable set against ``c2·c0``.
    """
    p = _prime(net)
    rows_out = []
    pairs = len(net.layers) - 1
    for j in range(1, pairs + 1):
        V1, V2 = net.layers[j - 1].weight, net.layers[j].weight
        c0, c1, c2 = V1.ncols(), V1.nrows(), V2.nrows()
        sys = pair_system(V1, V2, fmpq_mat(c2, c0), range(c2), range(c0), outputs=False)
        Kz = sys.Az
        rank, cols = rank_and_pivots(Kz, p)
        rows = independent_rows(submatrix(Kz, range(Kz.nrows()), cols), p)
        delta = det_mod(submatrix(Kz, rows, cols), p)
        for c in cols:
            delta = delta * pow(int(sys.scales[c]) % p, p - 2, p) % p
        witness: dict[str, Any] = {"lower_bound": {
            "prime": p, "rows": [sys.checker_row(r) for r in rows], "columns": cols,
            "determinant": delta}}
        n = c2 * c0
        if rank < min(n, c1):
            rank = Kz.rank()  # exact over Q (fraction-free)
        if rank < n:
            if c1 < n:
                witness["upper_bound"] = f"rank K ≤ c1 = {c1} < c2·c0 = {n}"
            else:
                y = kernel_vector(Kz.transpose(), p)
                witness["upper_bound"] = {"left_kernel": [str(v) for v in y] if y else None}
        needed_tuned = n - c2 + 1
        if rank == n:
            tuned = "universal"
        elif rank + c2 - 1 < n:
            tuned = (f"not universal: the reachable layers form a set of dimension at most "
                     f"rank K + c2 − 1 = {rank + c2 - 1} < {n} (measure zero)")
        else:
            tuned = (f"not universal: some layers are out of reach (rank K < {n}); generic "
                     f"ones are not excluded by the count (rank K ≥ {needed_tuned})")
        rows_out.append(ProfileRow(j, c0, c1, c2, rank, n, needed_tuned, rank == n, tuned,
                                   witness))
        if progress is not None:
            progress(j, pairs)
    return rows_out


@dataclass
class Decision:
    """The answer of :func:`decide`: the word, the class it holds in (``every``,
    ``fixed-output-scale``, ``aligned``; ``None`` for REACHABLE, which holds absolutely), one
    line of reason, the document and how it was found."""

    verdict: str
    cls: str | None
    reason: str
    document: dict[str, Any] | None = None
    construction: Construction | None = None
    witness: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def given_sources(net: GivenNetwork) -> list[dict[str, Any]]:
    """``{"kind": "fixed", "why": …}`` for each frozen matrix of a given network."""
    return [{"kind": "fixed", "why": f"given network {layer.source} (exact)"}
            for layer in net.layers]


def _provenance(net: GivenNetwork, how: str, output_scale: str) -> dict[str, Any]:
    return {"construction": f"capacity: {how}", "network": net.name,
            "output_scale": output_scale,
            "tuned": "one γ and one β per neuron after each linear layer",
            "batchnorm": ["none" if layer.norm is None else
                          {"epsilon": layer.norm.eps,
                           "reparametrization": "γ = γ_bn/√(σ² + ε), β = β_bn + γ(c − μ)"}
                          for layer in net.layers]}


def _certificate(net: GivenNetwork, g: TargetNetwork, layers: list[FrozenLayer],
                 checkpoints: tuple[int, ...], how: str, output_scale: str,
                 reports: list[LayerReport]) -> Construction:
    network = FrozenNetwork(g.widths[0], tuple(layers), checkpoints)
    return Construction(name="capacity", target=g, network=network, reports=reports,
                        provenance=_provenance(net, how, output_scale), witnesses={})


def _aligned(net: GivenNetwork, g: TargetNetwork, output_scale: str) -> Construction | None:
    """The segment-aligned realization: frozen layer ``j`` with ``γ_j`` the row ratios and
    ``β_j`` the target's bias, pinned coordinates folded (``None`` when a ratio is missing)."""
    boxes = g.interval_boxes()
    layers, sources = [], given_sources(net)
    for j, (given, tl) in enumerate(zip(net.layers, dense_layers(g.layers, "capacity")), 1):
        lo, hi = boxes[j - 1]
        gammas, _ = aligned_rows(given.weight, tl.weight, lo, hi)
        if gammas is None:
            return None
        pinned = [t for t in range(len(lo)) if not lo[t] < hi[t]]
        V, W = given.weight.tolist(), tl.weight.tolist()
        beta = [fmpq(tl.bias[r]) + sum(((fmpq(W[r][t]) - gammas[r] * V[r][t]) * lo[t]
                                        for t in pinned), fmpq(0)) for r in range(len(V))]
        if output_scale == "fixed" and j == len(net.layers) and any(x != 1 for x in gammas):
            return None
        layers.append(FrozenLayer(j - 1, Dense(given.weight), tuple(gammas), tuple(beta),
                                  tl.activation, record=sources[j - 1]))
    return _certificate(net, g, layers, tuple(range(1, g.depth + 1)),
                        "same architecture, one frozen layer per target layer", output_scale, [])


def _solve_fixed(V1: Any, V2: Any, W: Any, free: list[int], p: int) -> PairSolution | None:
    """``K u = vec W`` over every output (the output scale held at 1), if consistent."""
    c2 = V2.nrows()
    K = pair_system(V1, V2, W, range(c2), free, outputs=False)
    u = solve_consistent(K.Az, K.rhs, p)
    if u is None:
        return None
    return PairSolution(tuple(x * s for x, s in zip(u, K.scales)), (fmpq(1),) * c2, False,
                        K.Az.nrows(), K.Az.ncols())


def _impossible(net: GivenNetwork, g: TargetNetwork, witness: dict[str, Any], cls: str,
                reason: str, output_scale: str) -> Decision:
    frozen = [(layer.weight, layer.activation, src)
              for layer, src in zip(net.layers, given_sources(net))]
    doc = impossibility_document(g, frozen, witness,
                                 _provenance(net, f"{witness['kind']} witness", output_scale))
    return Decision("UNREACHABLE", cls, reason, doc, witness=witness["kind"])


def decide(net: GivenNetwork, g: TargetNetwork, *, output_scale: str = "tuned",
           progress: Callable[[int, int], None] | None = None) -> Decision:
    """REACH for the given network ``net`` and the target ``g`` on ``g``'s box (module
    docstring). ``output_scale="fixed"`` decides the class with the output layer's γ held at 1."""
    if output_scale not in OUTPUT_SCALES:
        raise InputError(f"output_scale must be one of {', '.join(OUTPUT_SCALES)}, got "
                         f"{output_scale!r}", parameter="output_scale")
    if net.widths[0] != g.widths[0] or net.widths[-1] != g.widths[-1]:
        raise InputError(f"the given network maps {net.widths[0]} to {net.widths[-1]} values, "
                         f"the target {g.widths[0]} to {g.widths[-1]}", parameter="target")
    t0 = time.perf_counter()
    step = (lambda k: progress(k, 5)) if progress is not None else (lambda k: None)
    free = free_coordinates(g.lower, g.upper)
    p = _prime(net, g)
    acts = tuple(layer.activation for layer in g.layers)
    one_hidden = len(net.layers) == 2 and net.activations[0] == "relu"
    same = net.widths == g.widths and net.activations == acts
    V1 = net.layers[0].weight
    V2 = net.layers[1].weight if len(net.layers) > 1 else None
    done = _done(t0)
    if one_hidden and net.activations[1] == "identity":
        w = kink_witness(V1, g)
        if w is not None:
            return done(_impossible(net, g, w, "every", f"target neuron {w['neuron']} has a "
                                    f"kink in the box parallel to no row of V_1", output_scale))
    step(1)
    if same:
        c = _aligned(net, g, output_scale)
        if c is not None:
            return done(Decision("REACHABLE", None, "the target's layers are the frozen layers "
                                 "with their rows rescaled (one frozen layer per target layer)",
                                 _document(c), c))
    step(2)
    if one_hidden and V2 is not None:
        found = _one_hidden(net, g, V1, V2, free, p, output_scale, step)
        if found is not None:
            return done(found)
    step(4)
    if same:
        w = aligned_witness(net.weights, g)
        if w is not None:
            return done(_impossible(net, g, w, "aligned", f"row {w['neuron']} of layer "
                                    f"{w['layer']} is no multiple of the frozen row",
                                    output_scale))
    step(5)
    return done(Decision("UNDECIDED", _undecided_class(net, g, one_hidden, same),
                         "no witness in the classes exactnorm decides"))


def _document(c: Construction) -> dict[str, Any]:
    """The certificate of a realization, its target in the compact form (see
    :func:`~exactnorm.analysis.capacity_witness.compact_target`)."""
    return compact_target(certificate_document(c), c.target)


def _done(t0: float) -> Callable[[Decision], Decision]:
    def finish(d: Decision) -> Decision:
        d.seconds = time.perf_counter() - t0
        return d
    return finish


def _one_hidden(net: GivenNetwork, g: TargetNetwork, V1: Any, V2: Any, free: list[int], p: int,
                output_scale: str, step: Callable[[int], None]) -> Decision | None:
    """Steps of Theorem LB at an interior point (module docstring, step 3)."""
    found = interior_point(g)
    if found is None:
        return None
    x0, values = found
    tuned = output_scale == "tuned"
    J, outputs = local_jacobian(g, values, net.activations[1], nonzero=tuned)
    if outputs:
        w, rank = rank_witness(V1, V2, J, outputs, free, p)
        if w is not None:
            return _impossible(net, g, with_point(w, x0, values), "every",
                               f"[K | -B] of {len(outputs)} output(s) has full column rank "
                               f"{rank} (Theorem LB)", output_scale)
    step(3)
    tl = dense_layers(g.layers, "capacity")[0]
    if g.depth == 1 and tl.activation == net.activations[1]:
        solution = solve_pair(V1, V2, tl.weight, free, p) if tuned \
            else _solve_fixed(V1, V2, tl.weight, free, p)
        if solution is not None:
            sources = given_sources(net)
            layers = realize_given_pair(V1, V2, solution, tl.weight, tl.bias, tl.activation,
                                        (g.lower, g.upper), input_node=0,
                                        records=(sources[0], sources[1]))
            how = ("one hidden frozen layer, output scale tuned" if solution.scale_tuned else
                   "one hidden frozen layer, output scale 1")
            report = LayerReport(1, g.widths[0], g.widths[1], net.widths[1:], 1,
                                 len(live_rows(tl.weight, free)) * len(free), solution.rank,
                                 0, 0, 1)
            c = _certificate(net, g, layers, (2,), how, output_scale, [report])
            return Decision("REACHABLE", None, f"{how}: diag(γ_out) V_2 diag(γ_in) V_1 = W "
                            f"exactly (rank {solution.rank})", _document(c), c)
    if outputs:
        w = fredholm_witness(V1, V2, J, outputs, free, p, output_scale)
        if w is not None:
            cls = "every" if tuned else "fixed-output-scale"
            return _impossible(net, g, with_point(w, x0, values), cls,
                               "a Fredholm vector separates the target's Jacobian from what "
                               "the frozen pair reaches", output_scale)
    return None


def _undecided_class(net: GivenNetwork, g: TargetNetwork, one_hidden: bool, same: bool) -> str:
    if not one_hidden and not same:
        return (f"a frozen network with {len(net.layers) - 1} hidden layers and a target of "
                f"another architecture: reachability is multilinear there (frontier.md §4.4); "
                f"exactnorm decides one hidden frozen layer and the same architecture")
    if one_hidden and g.depth == 1 and g.layers[0].activation != net.activations[1]:
        return (f"an affine target with output activation {g.layers[0].activation} against a "
                f"frozen output activation {net.activations[1]}: no impossibility found, and a "
                f"certificate needs equal activations")
    if one_hidden:
        return ("tunings whose kinks lie on the target's kinks: every target kink is parallel "
                "to a frozen row and the target's local affine piece is reachable, but the "
                "target is not a rescaling of the frozen network in the same order")
    return "tunings outside the segment-aligned class (the aligned ratio test holds)"
