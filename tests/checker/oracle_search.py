"""Exact region arithmetic and a search for a reaching tuning, for the oracle of
:mod:`tests.checker.oracle` (standard library only; nothing from ``exactnorm``).

Contract.
* :func:`decompose` splits the box of a document into polytopes on each of which every ReLU
  neuron of the given graphs has one sign, and returns, per polytope, each graph's output as an
  exact affine form of the free coordinates. :func:`affine_on_box` says whether a graph is one
  affine map on the whole box (and which); :func:`equal_on_box` whether two graphs are equal on
  the whole box. Both are proofs, not samples; both give up (``None``) beyond ``max_regions``.
* :func:`reaching_tuning` looks for γ, β that make an impossibility document's frozen chain equal
  its target on the box, and returns one only after :func:`equal_on_box` has proved it. Its
  candidates: a target affine on the box reached by a tuning whose hidden neurons are all active
  (the Khatri–Rao conditions ``γ_L[i]·Σ_k M[i,k]·V_1[k,F]·γ_1[k] = A[i,F]`` solved exactly for
  ``γ_1`` and ``1/γ_L``, ``M`` the later layers with random inner γ); an *aligned* tuning (each
  frozen layer's pre-activation equal to the target layer's on the target's interval box); and,
  for a two-layer chain target and a two-layer frozen network with identity outputs, frozen
  neurons whose kink is placed on a target neuron's kink (their rows parallel on the free
  coordinates), the output scales solved exactly per sign pattern.

Correctness argument. A polytope is kept as its constraints ``a·y + c ≤ 0`` and its vertices.
A neuron's pre-activation is an affine form ``φ`` on a polytope where every earlier neuron has
one sign; its minimum and maximum over the polytope are attained at vertices, so "every vertex
value ≥ 0 (≤ 0)" proves the sign, and otherwise the polytope is cut by ``φ = 0`` into two
full-dimensional halves. The vertices of ``P ∩ {φ ≤ 0}`` are vertices of ``P`` with ``φ ≤ 0``
or points of ``φ = 0`` on edges of ``P``; we take the points of ``φ = 0`` on every segment
between two vertices of opposite signs (a superset, all inside the half) and keep those whose
tight constraints have rank ``d`` (the vertices). The halves cover ``P``, so the final polytopes
cover the box; two continuous piecewise-affine functions with the same affine form on every
full-dimensional piece are equal on the box.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from itertools import product

from tests.checker.oracle import Box, Graph, Impossibility, Node, Unreadable, _sparse, output

Form = tuple[Fraction, ...]
Point = tuple[Fraction, ...]
ZERO = Fraction(0)


class Split(Exception):
    def __init__(self, form: Form) -> None:
        super().__init__("split")
        self.form = form


@dataclass
class Region:
    constraints: list[Form]  # each form ≤ 0 on the region
    vertices: list[Point]


def _at(form: Form, y: Point) -> Fraction:
    return sum((c * v for c, v in zip(form, y)), form[-1])


def _rank(rows: list[list[Fraction]]) -> int:
    rows = [list(r) for r in rows]
    rank, cols = 0, len(rows[0]) if rows else 0
    for c in range(cols):
        pivot = next((i for i in range(rank, len(rows)) if rows[i][c]), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        for i in range(rank + 1, len(rows)):
            if rows[i][c]:
                f = rows[i][c] / rows[rank][c]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[rank])]
        rank += 1
    return rank


def box_region(box: Box) -> Region:
    free = box.free
    d = len(free)
    cons: list[Form] = []
    for k, t in enumerate(free):
        e = [ZERO] * d
        e[k] = Fraction(1)
        cons.append(tuple(e) + (-box.upper[t],))
        e[k] = Fraction(-1)
        cons.append(tuple(e) + (box.lower[t],))
    verts = [tuple(box.upper[t] if b else box.lower[t] for t, b in zip(free, bits))
             for bits in product((0, 1), repeat=d)]
    return Region(cons, verts)


def _half(region: Region, h: Form) -> Region:
    """``region ∩ {h ≤ 0}`` (``h`` takes both signs on it)."""
    d = len(h) - 1
    vals = [_at(h, v) for v in region.vertices]
    cand = {v for v, x in zip(region.vertices, vals) if x <= 0}
    for (p, hp), (q, hq) in product(zip(region.vertices, vals), repeat=2):
        if hp < 0 < hq:
            t = hp / (hp - hq)
            cand.add(tuple(a + t * (b - a) for a, b in zip(p, q)))
    cons = region.constraints + [h]
    verts = [v for v in cand
             if _rank([list(c[:-1]) for c in cons if _at(c, v) == 0]) == d]
    return Region(cons, sorted(verts))


def _input_forms(box: Box) -> list[Form]:
    free = {t: k for k, t in enumerate(box.free)}
    d = len(free)
    out = []
    for t, lo in enumerate(box.lower):
        e = [ZERO] * (d + 1)
        if t in free:
            e[free[t]] = Fraction(1)
        else:
            e[d] = lo
        out.append(tuple(e))
    return out


def _combine(rows: list[list[tuple[int, Fraction]]], forms: list[Form], d: int) -> list[Form]:
    out = []
    for row in rows:
        acc = [ZERO] * (d + 1)
        for t, w in row:
            f = forms[t]
            for k in range(d + 1):
                if f[k]:
                    acc[k] += w * f[k]
        out.append(tuple(acc))
    return out


def forms(graph: Graph, box: Box, region: Region) -> list[list[Form]]:
    """Every node of ``graph`` as affine forms on ``region`` (raises :class:`Split` at the first
    ReLU neuron that changes sign on it)."""
    d = len(box.free)
    nodes = [_input_forms(box)]
    for node in graph.nodes:
        z = _combine(node.rows, nodes[node.reads], d)
        scale = node.scale or [Fraction(1)] * len(z)
        z = [tuple(g * c for c in f[:-1]) + (g * f[-1] + b,)
             for f, g, b in zip(z, scale, node.shift)]
        for q, S in node.pre:
            z = [tuple(a + b for a, b in zip(f, s)) for f, s in zip(z, _combine(S, nodes[q], d))]
        if node.activation == "relu":
            out = []
            for f in z:
                vals = [_at(f, v) for v in region.vertices]
                if min(vals) >= 0:
                    out.append(f)
                elif max(vals) <= 0:
                    out.append((ZERO,) * (d + 1))
                else:
                    raise Split(f)
            z = out
        for q, S in node.post:
            z = [tuple(a + b for a, b in zip(f, s)) for f, s in zip(z, _combine(S, nodes[q], d))]
        nodes.append(z)
    return nodes


def decompose(graphs: list[Graph], box: Box, max_regions: int = 256,
              splits: list[Form] | None = None) -> list[tuple[Region, list[list[Form]]]] | None:
    """Polytopes covering the box with every graph's output form on each; ``None`` beyond
    ``max_regions``. ``splits`` collects the forms the box was cut along."""
    stack, done = [box_region(box)], []
    while stack:
        region = stack.pop()
        try:
            done.append((region, [forms(g, box, region)[-1] for g in graphs]))
        except Split as s:
            if len(done) + len(stack) + 2 > max_regions:
                return None
            if splits is not None:
                splits.append(s.form)
            neg = tuple(-c for c in s.form)
            stack += [_half(region, s.form), _half(region, neg)]
    return done


def affine_on_box(graph: Graph, box: Box, max_regions: int = 256) -> list[Form] | None:
    """The output's affine forms when ``graph`` is one affine map on the box, else ``None``."""
    pieces = decompose([graph], box, max_regions)
    if pieces is None:
        return None
    first = pieces[0][1][0]
    return first if all(p[1][0] == first for p in pieces) else None


def equal_on_box(g: Graph, f: Graph, box: Box, max_regions: int = 512) -> bool | None:
    """Whether ``f = g`` on the box (``None``: too many pieces to decide)."""
    pieces = decompose([g, f], box, max_regions)
    if pieces is None:
        return None
    return all(outs[0] == outs[1] for _, outs in pieces)


# ------------------------------------------------------------------------- tunings


@dataclass
class Tuning:
    gammas: list[list[Fraction]]
    betas: list[list[Fraction]]
    how: str


def tuned(imp: Impossibility, gammas: list[list[Fraction]], betas: list[list[Fraction]]) -> Graph:
    """The frozen chain with these γ, β."""
    graph = Graph(len(imp.box.lower), [])
    for j, (V, act) in enumerate(zip(imp.weights, imp.activations)):
        graph.nodes.append(Node(j, _sparse(V), list(betas[j]), act, list(gammas[j])))
    return graph


def nullspace(rows: list[list[Fraction]], ncols: int) -> list[list[Fraction]]:
    """A basis of ``{v : rows · v = 0}`` (exact reduced row echelon form)."""
    M = [list(r) for r in rows]
    pivots: list[int] = []
    r = 0
    for c in range(ncols):
        p = next((i for i in range(r, len(M)) if M[i][c]), None)
        if p is None:
            continue
        M[r], M[p] = M[p], M[r]
        inv = 1 / M[r][c]
        M[r] = [x * inv for x in M[r]]
        for i in range(len(M)):
            if i != r and M[i][c]:
                f = M[i][c]
                M[i] = [a - f * b for a, b in zip(M[i], M[r])]
        pivots.append(c)
        r += 1
    basis = []
    for free in (c for c in range(ncols) if c not in pivots):
        v = [ZERO] * ncols
        v[free] = Fraction(1)
        for i, c in enumerate(pivots):
            v[c] = -M[i][free]
        basis.append(v)
    return basis


def _bounds(form: Form, box: Box) -> tuple[Fraction, Fraction]:
    lo = hi = form[-1]
    for c, t in zip(form, box.free):
        a, b = c * box.lower[t], c * box.upper[t]
        lo, hi = lo + min(a, b), hi + max(a, b)
    return lo, hi


def _active_chain(imp: Impossibility, gammas: list[list[Fraction]],
                  out_shift: list[Fraction] | None) -> tuple[list[list[Fraction]], list[Form]]:
    """β that make every hidden ReLU neuron ≥ 1 on the box under ``gammas``, and the output
    pre-activation forms (with ``out_shift`` as the last β, or 0)."""
    box, d = imp.box, len(imp.box.free)
    cur = _input_forms(box)
    betas: list[list[Fraction]] = []
    last = len(imp.weights) - 1
    for j, (V, act) in enumerate(zip(imp.weights, imp.activations)):
        z = [tuple(g * c for c in f) for f, g in zip(_combine(_sparse(V), cur, d), gammas[j])]
        if j == last:
            beta = list(out_shift) if out_shift else [ZERO] * len(z)
            betas.append(beta)
            return betas, [f[:-1] + (f[-1] + b,) for f, b in zip(z, beta)]
        beta = [1 - _bounds(f, box)[0] if act == "relu" else ZERO for f in z]
        betas.append(beta)
        cur = [f[:-1] + (f[-1] + b,) for f, b in zip(z, beta)]
    raise Unreadable("an empty network")


def _nonzero(rng: random.Random) -> Fraction:
    return Fraction(rng.choice([-3, -2, -1, 1, 2, 3]), rng.choice([1, 2]))


def _ratio(v: list[Fraction], w: list[Fraction]) -> Fraction | None:
    """``γ`` with ``γ·v = w``, or ``None``."""
    ratios = {b / a for a, b in zip(v, w) if a}
    gam = ratios.pop() if len(ratios) == 1 else ZERO
    return gam if all(gam * a == b for a, b in zip(v, w)) else None


def _output_matrix(imp: Impossibility, inner: list[list[Fraction]]) -> list[list[Fraction]]:
    """``M = V_L diag(γ_{L−1}) V_{L−1} ⋯ diag(γ_2) V_2``."""
    M = [list(r) for r in imp.weights[-1]]
    for V, g in zip(reversed(imp.weights[1:-1]), reversed(inner)):
        M = [[sum((M[i][m] * g[m] * V[m][k] for m in range(len(V))), ZERO)
              for k in range(len(V[0]))] for i in range(len(M))]
    return M


def stable_tunings(imp: Impossibility, A: list[Form], rng: random.Random,
                   tries: int = 4) -> list[Tuning]:
    """Tunings with every hidden neuron active whose output pre-activation is the affine map
    ``A`` of the free coordinates: ``γ_L[i]·Σ_k M[i,k]·V_1[k,F]·γ_1[k] = A[i,F]``, i.e. a kernel
    vector ``(γ_1, λ)`` of ``[K | −A_I]`` with every ``λ_i ≠ 0`` (``γ_L[i] = 1/λ_i``), over the
    outputs ``I`` that ``A`` does not hold constant; the others get ``γ_L[i] = 0``. With the
    output scale held at 1 (class ``fixed-output-scale``) every output is in ``I`` and one
    ``λ`` is shared (``γ_1 = u/λ``)."""
    fixed = imp.cls == "fixed-output-scale"
    free = imp.box.free
    V1 = imp.weights[0]
    cols = [[V1[k][t] for t in free] for k in range(len(V1))]
    if len(imp.weights) == 1:
        gam = [_ratio(cols[i], list(A[i][:-1])) for i in range(len(A))]
        if any(g is None for g in gam) or (fixed and any(g != 1 for g in gam)):
            return []
        gammas = [[g if g is not None else ZERO for g in gam]]
        _, o = _active_chain(imp, gammas, None)
        return [Tuning(gammas, [[A[i][-1] - o[i][-1] for i in range(len(A))]],
                       "one layer, the target affine on the box")]
    c1, d = len(V1), len(free)
    I = list(range(len(A))) if fixed else [i for i, f in enumerate(A) if any(f[:-1])]
    lam = 1 if fixed else len(I)  # the λ columns
    out: list[Tuning] = []
    for _ in range(tries):
        inner = [[_nonzero(rng) for _ in V] for V in imp.weights[1:-1]]
        M = _output_matrix(imp, inner)
        n = c1 + lam
        rows = []
        for a, i in enumerate(I):
            for q in range(d):
                rows.append([M[i][k] * cols[k][q] for k in range(c1)]
                            + [-A[i][q] if fixed or b == a else ZERO for b in range(lam)])
        basis = nullspace(rows, n)
        v = [ZERO] * n
        for b in basis:
            c = Fraction(rng.choice([-3, -2, -1, 1, 2, 3]))
            v = [x + c * y for x, y in zip(v, b)]
        if any(v[c1 + a] == 0 for a in range(lam)):
            continue
        if fixed:
            v = [x / v[c1] for x in v]
            last = [Fraction(1)] * len(A)
        else:
            last = [ZERO] * len(A)
            for a, i in enumerate(I):
                last[i] = 1 / v[c1 + a]
        gammas = [v[:c1]] + inner + [last]
        _, o = _active_chain(imp, gammas, None)
        shift = [A[i][-1] - o[i][-1] for i in range(len(A))]
        betas, _ = _active_chain(imp, gammas, shift)
        out.append(Tuning(gammas, betas, "hidden neurons active, the target affine on the box"))
    return out


def _normal(form: Form) -> Form:
    lead = next(abs(c) for c in form if c)
    return tuple(c / lead for c in form)


def kink_tunings(imp: Impossibility, rng: random.Random, max_regions: int = 256,
                 max_modes: int = 256, tries: int = 3) -> list[Tuning]:
    """Two frozen layers, identity output: each hidden neuron either active on the whole box
    or with its kink on a hyperplane the target's box is cut along (its row parallel to that
    hyperplane's normal on the free coordinates, either side active). Per assignment the
    output's matching conditions on every piece are linear in ``(γ_1 of the active neurons,
    the kink neurons' scales c > 0, λ = 1/γ_2, the constants)``; solved exactly."""
    if len(imp.weights) != 2 or imp.activations != ["relu", "identity"]:
        return []
    box, free = imp.box, imp.box.free
    d = len(free)
    splits: list[Form] = []
    if decompose([imp.target], box, max_regions, splits) is None or not splits:
        return []
    planes = sorted({_normal(f) for f in splits if any(f[:-1])})
    V1, V2 = imp.weights
    c1, c2 = len(V1), len(V2)
    rowsF = [[V1[k][t] for t in free] for k in range(c1)]
    pinned = [sum((V1[k][t] * box.lower[t] for t in range(len(box.lower)) if t not in free),
                  ZERO) for k in range(c1)]
    options: list[list[tuple[Form, int] | None]] = []
    for k in range(c1):
        opts: list[tuple[Form, int] | None] = [None]
        for p in planes:
            alpha = _ratio(rowsF[k], list(p[:-1]))
            if alpha:
                opts += [(p, 1), (p, -1)]
        options.append(opts)
    total = 1
    for o in options:
        total *= len(o)
    if total > max_modes or total == 1:
        return []
    fixed = imp.cls == "fixed-output-scale"
    out: list[Tuning] = []
    for modes in product(*options):
        kinks = [(k, m) for k, m in enumerate(modes) if m is not None]
        if not kinks:
            continue
        helper = Graph(len(box.lower), [Node(0, [_row(free, p, s) for _, (p, s) in kinks],
                                             [s * p[-1] for _, (p, s) in kinks], "relu")])
        pieces = decompose([imp.target, helper], box, max_regions)
        if pieces is None:
            continue
        active = [k for k, m in enumerate(modes) if m is None]
        # unknowns: u (active), c (kinks), λ (one per output, or one shared), κ (per output)
        na, nk, nl = len(active), len(kinks), 1 if fixed else c2
        n = na + nk + nl + c2
        rows = []
        for _, (G, H) in pieces:
            for i in range(c2):
                for q in range(d + 1):
                    row = [ZERO] * n
                    for a, k in enumerate(active):
                        row[a] = V2[i][k] * rowsF[k][q] if q < d else ZERO
                    for b, (k, _) in enumerate(kinks):
                        row[na + b] = V2[i][k] * H[b][q]
                    row[na + nk + (0 if fixed else i)] = -G[i][q]
                    if q == d:
                        row[na + nk + nl + i] = Fraction(1)
                    rows.append(row)
        basis = nullspace(rows, n)
        for _ in range(tries if basis else 0):
            v = [ZERO] * n
            for b in basis:
                c = Fraction(rng.choice([-3, -2, -1, 1, 2, 3]))
                v = [x + c * y for x, y in zip(v, b)]
            if fixed and v[na + nk]:
                v = [x / v[na + nk] for x in v]  # γ_2 = 1/λ held at 1
            elif not fixed and all(c < 0 for c in v[na:na + nk]):
                v = [-x for x in v]
            scales, lam = v[na:na + nk], v[na + nk:na + nk + nl]
            if any(c <= 0 for c in scales) or any(x == 0 for x in lam):
                continue
            g1, b1 = [ZERO] * c1, [ZERO] * c1
            for a, k in enumerate(active):
                g1[k] = v[a]
                b1[k] = 1 - _bounds(tuple(v[a] * x for x in rowsF[k]) + (v[a] * pinned[k],),
                                    box)[0]
            for b, (k, (p, s)) in enumerate(kinks):
                alpha = _ratio(rowsF[k], list(p[:-1]))
                assert alpha is not None
                g1[k] = scales[b] * s * alpha
                b1[k] = scales[b] * s * p[-1] - g1[k] * pinned[k]
            g2 = [1 / lam[0]] * c2 if fixed else [1 / x for x in lam]
            gammas, zero = [g1, g2], [[ZERO] * c2]
            net = tuned(imp, gammas, [b1] + zero)
            x0 = list(box.lower)
            f0, t0 = output(net, x0), output(imp.target, x0)
            out.append(Tuning(gammas, [b1, [a - b for a, b in zip(t0, f0)]],
                              "frozen kinks placed on the target's kinks"))
            break
    return out


def _row(free: list[int], p: Form, s: int) -> list[tuple[int, Fraction]]:
    return [(t, s * c) for t, c in zip(free, p[:-1]) if c]


def target_boxes(imp: Impossibility) -> list[tuple[list[Fraction], list[Fraction]]] | None:
    """The target's interval boxes ``B_0 … B_L`` (§0) when it is a chain, else ``None``."""
    lo, hi = list(imp.box.lower), list(imp.box.upper)
    out = [(lo, hi)]
    for i, node in enumerate(imp.target.nodes):
        if node.reads != i or node.pre or node.post:
            return None
        nlo, nhi = [], []
        for row, b in zip(node.rows, node.shift):
            a = sum((min(w * lo[t], w * hi[t]) for t, w in row), b)
            c = sum((max(w * lo[t], w * hi[t]) for t, w in row), b)
            if node.activation == "relu":
                a, c = max(a, ZERO), max(c, ZERO)
            nlo.append(a)
            nhi.append(c)
        lo, hi = nlo, nhi
        out.append((lo, hi))
    return out


def aligned_tuning(imp: Impossibility) -> Tuning | None:
    """Each frozen pre-activation equal to the target layer's on the target's interval box."""
    boxes = target_boxes(imp)
    if boxes is None or len(imp.weights) != len(imp.target.nodes):
        return None
    gammas, betas = [], []
    for j, (V, node) in enumerate(zip(imp.weights, imp.target.nodes)):
        lo, hi = boxes[j]
        if len(V) != node.width:
            return None
        W = [[ZERO] * len(lo) for _ in range(node.width)]
        for r, row in enumerate(node.rows):
            for t, w in row:
                W[r][t] = w
        g_row, b_row = [], []
        for r in range(node.width):
            F = [t for t in range(len(lo)) if lo[t] < hi[t]]
            gam = _ratio([V[r][t] for t in F], [W[r][t] for t in F])
            if gam is None:
                return None
            g_row.append(gam)
            b_row.append(node.shift[r] + sum((W[r][t] - gam * V[r][t]) * lo[t]
                                             for t in range(len(lo)) if t not in F))
        gammas.append(g_row)
        betas.append(b_row)
    return Tuning(gammas, betas, "aligned with the target layer by layer")


def reaching_tuning(imp: Impossibility, seed: int = 0,
                    max_regions: int = 256) -> tuple[Tuning | None, str]:
    """A tuning proved to reach the target on the box, or ``None`` and what was tried."""
    rng = random.Random(seed)
    candidates: list[Tuning] = []
    tried = []
    if imp.cls != "aligned":
        A = affine_on_box(imp.target, imp.box, max_regions)
        if A is not None:
            candidates += stable_tunings(imp, A, rng)
            tried.append("stable (target affine on the box)")
    elif target_boxes(imp) is None:
        raise Unreadable("the aligned class of a target that is not a chain")
    if imp.cls != "aligned":
        kinked = kink_tunings(imp, rng, max_regions)
        candidates += kinked
        if kinked:
            tried.append("kinks on the target's kinks")
    aligned = aligned_tuning(imp)
    if aligned is not None and (imp.cls != "fixed-output-scale"
                                or all(g == 1 for g in aligned.gammas[-1])):
        candidates.append(aligned)
        tried.append("aligned")
    for t in candidates:
        if equal_on_box(imp.target, tuned(imp, t.gammas, t.betas), imp.box, max_regions):
            return t, t.how
    return None, ", ".join(tried) or "no candidate applies"
