"""Capacity of a given network: what re-tuning only its normalization can reach, decided exactly.

Contract. The given network is a :class:`~exactnorm.model.network.FrozenNetwork` with explicit
frozen matrices and a BatchNorm record per layer (:mod:`exactnorm.model.batchnorm`), read by
the one loader of frozen networks; the target is read by the one loader of targets, its
``input`` and ``skip`` included. :func:`capacity_profile` measures, for every pair of consecutive
frozen linear layers (the second reading the first),
the exact rank of its Khatri–Rao matrix ``K = V_jᵀ ⊙ V_{j+1}`` against the size a universal pair
needs (``c2·c0`` with the output scale held, Burkholz's ``c2·c0 − c2 + 1`` counted with it tuned),
with a rank witness. :func:`decide` answers REACH for a target on a box with one word —
``REACHABLE``, ``UNREACHABLE`` or ``UNDECIDED`` — and a document either way: an ordinary
certificate whose frozen matrices are the given ones (declared ``fixed``), or an
``exactnorm.impossibility`` document (docs/certificate-format.md §9). Nothing here is trusted:
both documents are checked by the independent checker.

What is decided, and what is not. The witnesses and constructions below are stated for a given
network that is a *chain* of dense layers (each reads the layer before it and adds no skip) and
a target that is a chain of dense layers once the layers its output does not read are dropped
(:func:`output_chain`: a layer that no path to the output reads changes nothing, so the target
and the chain of the layers it reads are the same function on every input, and the documents
state that chain). Anything else — a given network whose layer reads another node or adds a
skip, a target whose layers read other nodes or add skips — is ``UNDECIDED``, naming what was
not settled, never a word derived from a network other than the one read; layers of another kind
are refused. Decision procedure (docs/capacity.md, "How the verdict is found"), first success
wins:

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
from exactnorm.model.batchnorm import given_chain
from exactnorm.model.network import FrozenLayer, FrozenNetwork, TargetNetwork
from exactnorm.model.operators.dense import Dense, dense_frozen, dense_layers

__all__ = ["OUTPUT_SCALES", "VERDICTS", "ProfileRow", "Decision", "capacity_profile", "decide",
           "given_sources", "output_chain", "linked_pairs"]

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


def _weights(net: FrozenNetwork) -> list[Any]:
    return [layer.weight for layer in dense_frozen(net.layers, "capacity")]


def _activations(net: FrozenNetwork) -> tuple[str, ...]:
    return tuple(layer.activation for layer in net.layers)


def _prime(net: FrozenNetwork, g: TargetNetwork | None = None) -> int:
    targets = dense_layers(g.layers, "capacity") if g is not None else ()
    mats = _weights(net) + [layer.weight for layer in targets]
    return witness_prime(fmpq(x).denom() for M in mats for x in M.entries())


def linked_pairs(net: FrozenNetwork) -> list[int]:
    """The ``j`` whose layer ``j + 1`` reads layer ``j`` and adds nothing to it: the pairs a
    profile row describes (every consecutive pair of a chain)."""
    layers = dense_frozen(net.layers, "capacity")
    residuals = dict(net.residuals)
    return [j for j in range(1, len(layers))
            if layers[j].input == j and not layers[j].skips and j + 1 not in residuals]


def capacity_profile(net: FrozenNetwork,
                     progress: Callable[[int, int], None] | None = None) -> list[ProfileRow]:
    """The capacity profile (module docstring): one row per pair of consecutive linear layers,
    the second reading the first (:func:`linked_pairs`).

    Rank: a nonzero minor modulo a prime is a lower bound (its rows, columns, prime and residue
    are the witness); with ``min(rows, columns)`` it is exact; below that the exact rank is
    FLINT's over ``Q`` and a nonzero ``y`` with ``yᵀK = 0`` (checked exactly) shows what is not
    reached. ``universal``: ``rank K = c2·c0`` (every target layer of that shape on any box, the
    output scale held or tuned); ``tuned``: ``universal``, or ``not universal`` with the
    dimension count ``rank K + c2 − 1`` of the reachable set against ``c2·c0``.
    """
    p = _prime(net)
    rows_out = []
    weights = _weights(net)
    linked = linked_pairs(net)
    pairs = len(linked)
    for done, j in enumerate(linked, 1):
        V1, V2 = weights[j - 1], weights[j]
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
            progress(done, pairs)
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


def given_sources(net: FrozenNetwork) -> list[dict[str, Any]]:
    """Where each frozen matrix of the given network comes from: its own declaration (``{"kind":
    "fixed", "why": …}``, or the draw record of a certificate's matrix), else a fixed
    declaration naming the network."""
    return [layer.record if isinstance(layer.record, dict) else
            {"kind": "fixed", "why": f"given network {net.name or 'in memory'}: layer {j} "
                                     f"weight (exact)"}
            for j, layer in enumerate(dense_frozen(net.layers, "capacity"), 1)]


def _provenance(net: FrozenNetwork, how: str, output_scale: str) -> dict[str, Any]:
    """Every number exact (the BatchNorm ε as the rational its float denotes)."""
    norms = net.normalizations or (None,) * net.depth
    return {"construction": f"capacity: {how}", "network": net.name or "a given network",
            "output_scale": output_scale,
            "tuned": "one γ and one β per neuron after each linear layer",
            "batchnorm": ["none" if norm is None else norm.as_json() for norm in norms]}


def _certificate(net: FrozenNetwork, g: TargetNetwork, layers: list[FrozenLayer],
                 checkpoints: tuple[int, ...], how: str, output_scale: str,
                 reports: list[LayerReport]) -> Construction:
    network = FrozenNetwork(g.widths[0], tuple(layers), checkpoints)
    return Construction(name="capacity", target=g, network=network, reports=reports,
                        provenance=_provenance(net, how, output_scale), witnesses={})


def _aligned(net: FrozenNetwork, g: TargetNetwork, output_scale: str) -> Construction | None:
    """The segment-aligned realization: frozen layer ``j`` with ``γ_j`` the row ratios and
    ``β_j`` the target's bias, pinned coordinates folded (``None`` when a ratio is missing)."""
    boxes = g.interval_boxes()
    layers, sources = [], given_sources(net)
    for j, (given, tl) in enumerate(zip(dense_frozen(net.layers, "capacity"),
                                        dense_layers(g.layers, "capacity")), 1):
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


def _impossible(net: FrozenNetwork, g: TargetNetwork, witness: dict[str, Any], cls: str,
                reason: str, output_scale: str) -> Decision:
    frozen = [(layer.weight, layer.activation, src)
              for layer, src in zip(dense_frozen(net.layers, "capacity"), given_sources(net))]
    doc = impossibility_document(g, frozen, witness,
                                 _provenance(net, f"{witness['kind']} witness", output_scale))
    return Decision("UNREACHABLE", cls, reason, doc, witness=witness["kind"])


def output_chain(g: TargetNetwork) -> tuple[TargetNetwork | None, list[int]]:
    """The target as a chain of the layers its output reads (module docstring), or ``None``
    when those layers do not form a chain (a layer reads another node than the one before it
    among them, or adds a skip), and the layers (from 1) that were dropped."""
    if g.is_chain:
        return g, []
    needed, stack = set(), [g.depth]
    while stack:
        i = stack.pop()
        if i == 0 or i in needed:
            continue
        needed.add(i)
        w = g.wire(i)
        stack += [w.input] + ([w.skip.source] if w.skip is not None else [])
    kept = sorted(needed)
    dropped = [i for i in range(1, g.depth + 1) if i not in needed]
    previous = 0
    for i in kept:
        w = g.wire(i)
        if w.skip is not None or w.input != previous:
            return None, dropped
        previous = i
    layers = tuple(g.layers[i - 1] for i in kept)
    return TargetNetwork(layers, g.lower, g.upper, source=g.source), dropped


def _not_a_chain(g: TargetNetwork) -> str:
    for i in range(1, g.depth + 1):
        w = g.wire(i)
        if w.skip is not None:
            return f"target layer {i} adds a skip from node {w.skip.source}"
        if w.input != i - 1:
            return f"target layer {i} reads node {w.input}"
    return "the target is a chain"  # not reached: output_chain accepts chains


def decide(net: FrozenNetwork, g: TargetNetwork, *, output_scale: str = "tuned",
           progress: Callable[[int, int], None] | None = None) -> Decision:
    """REACH for the given network ``net`` and the target ``g`` on ``g``'s box (module
    docstring). ``output_scale="fixed"`` decides the class with the output layer's γ held at 1.

    Raises
    ------
    InputError
        Layers of another kind than dense, input or output sizes that differ, an unknown
        ``output_scale``.
    """
    if output_scale not in OUTPUT_SCALES:
        raise InputError(f"output_scale must be one of {', '.join(OUTPUT_SCALES)}, got "
                         f"{output_scale!r}", parameter="output_scale")
    dims = net.node_dims
    if dims[0] != g.widths[0] or dims[-1] != g.widths[-1]:
        raise InputError(f"the given network maps {dims[0]} to {dims[-1]} values, "
                         f"the target {g.widths[0]} to {g.widths[-1]}", parameter="target")
    dense_layers(g.layers, "capacity")
    t0 = time.perf_counter()
    done = _done(t0)
    not_chain = given_chain(net)
    if not_chain is not None:
        return done(Decision("UNDECIDED", f"a given network that is not a chain of layers "
                             f"({not_chain}): exactnorm decides chains",
                             "no witness in the classes exactnorm decides"))
    chain, dropped = output_chain(g)
    if chain is None:
        return done(Decision("UNDECIDED", f"a target that is not a chain of layers "
                             f"({_not_a_chain(g)}): the witnesses and constructions of "
                             f"capacity are stated for chains",
                             "no witness in the classes exactnorm decides"))
    d = _decide_chains(net, chain, output_scale, progress)
    if dropped:
        unread = ", ".join(map(str, dropped))
        d.reason += (f" (for the target without its layer{'s' if len(dropped) > 1 else ''} "
                     f"{unread}, which its output does not read: the same function)")
        d.notes.append(f"target layers {unread} are not read by the output; the documents "
                       f"state the target without them")
    return done(d)


def _decide_chains(net: FrozenNetwork, g: TargetNetwork, output_scale: str,
                   progress: Callable[[int, int], None] | None) -> Decision:
    """:func:`decide` for a chain of dense given layers and a chain target."""
    step = (lambda k: progress(k, 5)) if progress is not None else (lambda k: None)
    free = free_coordinates(g.lower, g.upper)
    p = _prime(net, g)
    acts = tuple(layer.activation for layer in g.layers)
    given_acts = _activations(net)
    one_hidden = net.depth == 2 and given_acts[0] == "relu"
    same = net.node_dims == g.widths and given_acts == acts
    weights = _weights(net)
    V1 = weights[0]
    V2 = weights[1] if len(weights) > 1 else None
    if one_hidden and given_acts[1] == "identity":
        w = kink_witness(V1, g)
        if w is not None:
            return _impossible(net, g, w, "every", f"target neuron {w['neuron']} has a "
                               f"kink in the box parallel to no row of V_1", output_scale)
    step(1)
    if same:
        c = _aligned(net, g, output_scale)
        if c is not None:
            return Decision("REACHABLE", None, "the target's layers are the frozen layers "
                            "with their rows rescaled (one frozen layer per target layer)",
                            _document(c), c)
    step(2)
    if one_hidden and V2 is not None:
        found = _one_hidden(net, g, V1, V2, free, p, output_scale, step)
        if found is not None:
            return found
    step(4)
    if same:
        w = aligned_witness(weights, g)
        if w is not None:
            return _impossible(net, g, w, "aligned", f"row {w['neuron']} of layer "
                               f"{w['layer']} is no multiple of the frozen row", output_scale)
    step(5)
    return Decision("UNDECIDED", _undecided_class(net, g, one_hidden, same),
                    "no witness in the classes exactnorm decides")


def _document(c: Construction) -> dict[str, Any]:
    """The certificate of a realization, its target in the compact form (see
    :func:`~exactnorm.analysis.capacity_witness.compact_target`)."""
    return compact_target(certificate_document(c), c.target)


def _done(t0: float) -> Callable[[Decision], Decision]:
    def finish(d: Decision) -> Decision:
        d.seconds = time.perf_counter() - t0
        return d
    return finish


def _one_hidden(net: FrozenNetwork, g: TargetNetwork, V1: Any, V2: Any, free: list[int], p: int,
                output_scale: str, step: Callable[[int], None]) -> Decision | None:
    """Steps of Theorem LB at an interior point (module docstring, step 3)."""
    found = interior_point(g)
    if found is None:
        return None
    x0, values = found
    tuned = output_scale == "tuned"
    out_act = _activations(net)[1]
    J, outputs = local_jacobian(g, values, out_act, nonzero=tuned)
    if outputs:
        w, rank = rank_witness(V1, V2, J, outputs, free, p)
        if w is not None:
            return _impossible(net, g, with_point(w, x0, values), "every",
                               f"[K | -B] of {len(outputs)} output(s) has full column rank "
                               f"{rank} (Theorem LB)", output_scale)
    step(3)
    tl = dense_layers(g.layers, "capacity")[0]
    if g.depth == 1 and tl.activation == out_act:
        solution = solve_pair(V1, V2, tl.weight, free, p) if tuned \
            else _solve_fixed(V1, V2, tl.weight, free, p)
        if solution is not None:
            sources = given_sources(net)
            layers = realize_given_pair(V1, V2, solution, tl.weight, tl.bias, tl.activation,
                                        (g.lower, g.upper), input_node=0,
                                        records=(sources[0], sources[1]))
            how = ("one hidden frozen layer, output scale tuned" if solution.scale_tuned else
                   "one hidden frozen layer, output scale 1")
            report = LayerReport(1, g.widths[0], g.widths[1], net.node_dims[1:], 1,
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


def _undecided_class(net: FrozenNetwork, g: TargetNetwork, one_hidden: bool, same: bool) -> str:
    out_act = _activations(net)[-1]
    if not one_hidden and not same:
        return (f"a frozen network with {net.depth - 1} hidden layers and a target of "
                f"another architecture: reachability is multilinear there (docs/capacity.md, "
                f"\"What is not decided\"); exactnorm decides one hidden frozen layer and the "
                f"same architecture")
    if one_hidden and g.depth == 1 and g.layers[0].activation != out_act:
        return (f"an affine target with output activation {g.layers[0].activation} against a "
                f"frozen output activation {out_act}: no impossibility found, and a "
                f"certificate needs equal activations")
    if one_hidden:
        return ("tunings whose kinks lie on the target's kinks: every target kink is parallel "
                "to a frozen row and the target's local affine piece is reachable, but the "
                "target is not a rescaling of the frozen network in the same order")
    return "tunings outside the segment-aligned class (the aligned ratio test holds)"
