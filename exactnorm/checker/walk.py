"""The one walk of the checker (docs/certificate-format.md §0, §6–§8): segments, boxes,
stability, checkpoint identity, the work budget and the verdict — written once, over an
arithmetic (:mod:`.arithmetic`). Standard library only.

Claim checked: for every x in the box D, the frozen network f equals the target g.

Correctness argument. Inside a segment every node is an exact affine map ``A a + c`` of the
segment input ``a = h_start`` (for a convolution segment: of the patch ``patch_{y,x}(a)`` at every
output position, with the same ``A, c`` for all positions); a ReLU neuron (channel) that is
stable on the box (exact min ≥ 0: the identity; max ≤ 0: the constant 0) keeps the map affine;
at the checkpoint the map must equal the target layer ``(W_i, b_i)`` entry by entry, hence
``f = g`` on the box by induction over segments. The boxes ``B_i`` are the exact interval bounds of
the target's layers (a box is a product set, so a row's minimum over it is attained at a vertex).
For a convolution the kernel equality with the same window (kernel, stride, padding, dilation)
gives the same value at every position, borders included, because padding pixels are 0 on both
sides; an average pooling is a fixed map, equal when its window is. Reference: Giannou, Rajput,
Papailiopoulos, "The Expressive Power of Tuning Only the Normalization Layers", COLT 2023,
arXiv:2302.07937.

Limits. Before every product or sum the walk computes the size of the map it would build and
refuses it above ``MAX_MAP_ENTRIES`` (rule ``limit``), and adds the product's multiply-adds
(rows · inner dimension · support) to a running count refused above the work budget: the same
numbers for every arithmetic, so both reach the same verdict before allocating anything.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from . import kind_globalavgpool as gap
from .arithmetic import row_interval
from .numbers import CertificateError, IntMatrix, IntVector, Verdict, show
from .reading import Geometry, Picks, Provenance, last_uses, read_certificate
from .vocabulary import (
    DEFAULT_MAX_DIGITS,
    DEFAULT_MAX_WORK,
    IMPOSSIBILITY_FORMAT,
    MAX_MAP_ENTRIES,
)

__all__ = ["Budget", "run_rules", "check_with", "verdict_of", "facts_of", "describe_box",
           "next_box"]

Box = tuple[list[int], list[int], int]  # lower and upper numerators over one denominator


class Budget:
    """The map-size limit and the running count of multiply-adds (rule ``limit``)."""

    def __init__(self, max_work: int) -> None:
        self.max_work, self.spent = max_work, 0

    def size(self, rows: int, cols: int, j: int) -> None:
        if rows * cols > MAX_MAP_ENTRIES:
            raise CertificateError("limit", f"network layer {j}: its affine map would have "
                                            f"{rows} x {cols} entries, above this checker's "
                                            f"limit {MAX_MAP_ENTRIES}", layer=j)

    def work(self, amount: int, j: int) -> None:
        self.spent += amount
        if self.spent > self.max_work:
            raise CertificateError("limit", f"network layer {j}: checking needs more than "
                                            f"{self.max_work:,} multiply-adds, this check's "
                                            f"work budget (raise it with --max-work)", layer=j)


# ---------------------------------------------------------------- boxes (shared, exact)


def domain_box(lower: IntVector, upper: IntVector) -> Box:
    if lower.den == upper.den or lower.den.bit_length() + upper.den.bit_length() <= 8192:
        Q = math.lcm(lower.den, upper.den)
    else:  # a common multiple without CPython's quadratic gcd of huge numbers
        Q = lower.den * upper.den
    return ([x * (Q // lower.den) for x in lower.nums], [x * (Q // upper.den) for x in upper.nums],
            Q)


def _reduced_box(lo: list[int], hi: list[int], Q: int) -> Box:
    """Divide out common factors while that is cheap; the values never change."""
    if Q == 1 or Q.bit_length() > 4096:
        return lo, hi, Q
    g = Q
    for x in lo + hi:
        if g == 1:
            return lo, hi, Q
        g = math.gcd(g, x)
    return [x // g for x in lo], [x // g for x in hi], Q // g


def _interval_rows(W: IntMatrix, b: IntVector, lo: list[list[int]], hi: list[list[int]],
                   Q: int) -> tuple[list[list[int]], list[list[int]], int]:
    """Exact min and max of W·a + b over a family of boxes (d × P), over W.den·Q·b.den."""
    scale = W.den * Q
    mins, maxs = [], []
    P = len(lo[0])
    for row, bias in zip(W.rows, b.nums):
        const = bias * scale
        rmin, rmax = [], []
        for p in range(P):
            mn, mx = row_interval(row, lo, hi, p)
            rmin.append(mn * b.den + const)
            rmax.append(mx * b.den + const)
        mins.append(rmin)
        maxs.append(rmax)
    return mins, maxs, scale * b.den


def patch_family(box: Box, g: Geometry) -> tuple[list[list[int]], list[list[int]]]:
    """Lower and upper bounds of every patch coordinate at every output position (zero padding
    is the point 0): two (C·kh·kw) × (Ho·Wo) tables over the box's denominator."""
    lo, hi, _ = box
    positions = [g.pixels(y, x) for y in range(g.Ho) for x in range(g.Wo)]
    table_lo = [[0 if pix[t] is None else lo[pix[t]] for pix in positions]  # type: ignore[index]
                for t in range(g.patch)]
    table_hi = [[0 if pix[t] is None else hi[pix[t]] for pix in positions]  # type: ignore[index]
                for t in range(g.patch)]
    return table_lo, table_hi


def next_box(layer: dict[str, Any], box: Box) -> Box:
    """B_i from B_{i-1}: exact interval bounds of target layer i (relu clamps at 0)."""
    if layer["kind"] == gap.NAME:  # its own module: kind_globalavgpool
        return _reduced_box(*gap.next_box(layer, box))
    lo, hi, Q = box
    g = layer["geom"]
    if layer["kind"] == "avgpool":
        size = g.kh * g.kw
        out_lo, out_hi = [], []
        for c in range(g.C):
            for y in range(g.Ho):
                for x in range(g.Wo):
                    pix = [(c * g.H + y * g.sh + u) * g.W + x * g.sw + v
                           for u in range(g.kh) for v in range(g.kw)]
                    out_lo.append(sum(lo[t] for t in pix))
                    out_hi.append(sum(hi[t] for t in pix))
        return _reduced_box(out_lo, out_hi, Q * size)
    if layer["kind"] == "conv":
        fam_lo, fam_hi = patch_family(box, g)
    else:
        fam_lo, fam_hi = [[x] for x in lo], [[x] for x in hi]
    mins, maxs, D = _interval_rows(layer["W"], layer["b"], fam_lo, fam_hi, Q)
    flat_lo = [x for row in mins for x in row]  # channel-major: (o, y, x) in C order
    flat_hi = [x for row in maxs for x in row]
    if layer["act"] == "relu":
        flat_lo = [max(x, 0) for x in flat_lo]
        flat_hi = [max(x, 0) for x in flat_hi]
    return _reduced_box(flat_lo, flat_hi, D)


# ---------------------------------------------------------------- the segment walk


class Scaled:
    """A node ``diag(γ)·B + β`` kept unmultiplied: the next layer's product is taken as
    ``(M·diag(γ))·B + M·β``, so a long γ (the 23,000-bit γ of a 2,400-channel convolution) scales
    the few columns of ``M`` instead of every entry of ``B``. Dead rows have γ = β = 0."""

    __slots__ = ("B", "gamma", "beta")

    def __init__(self, B: Any, gamma: IntVector, beta: IntVector) -> None:
        self.B, self.gamma, self.beta = B, gamma, beta


def _support(ar: Any, node: Any) -> list[int] | frozenset:
    if isinstance(node, Scaled):
        return ar.support(node.B) if any(node.gamma.nums) else []
    return ar.support(node)


def _materialized(ar: Any, node: Any) -> Any:
    if isinstance(node, Scaled):
        return ar.reduced(ar.affine(node.gamma, node.B, node.beta))
    return node


def _stable(ar: Any, B: Any, gamma: IntVector, beta: IntVector, family: Any, j: int,
            g: Geometry | None) -> list[bool]:
    """Which ReLU rows γ_k·(B_k a) + β_k are active (min >= 0: True) or dead (max <= 0: False)
    on every box of the family; anything else is an unstable neuron (for a convolution:
    channel). The extremes of γ_k·t + β_k for t in [min B_k, max B_k] are at the ends, swapped
    when γ_k < 0: found on the small unscaled rows of B."""
    mins, maxs, den, at_min, at_max = ar.ranges(B, family)
    den = int(den)
    D = gamma.den * den * beta.den
    keep = []
    for k, (bmin, bmax) in enumerate(zip(mins, maxs)):
        gk, bk = gamma.nums[k], beta.nums[k] * gamma.den * den
        lo_t, hi_t, p_lo, p_hi = (int(bmin), int(bmax), at_min[k], at_max[k]) if gk >= 0 \
            else (int(bmax), int(bmin), at_max[k], at_min[k])
        mn = gk * lo_t * beta.den + bk
        mx = gk * hi_t * beta.den + bk
        if mn >= 0:
            keep.append(True)
        elif mx <= 0:
            keep.append(False)
        else:
            where = ""
            if g is not None:
                pm, px = int(p_lo), int(p_hi)
                where = (f" (min at position ({pm // g.Wo}, {pm % g.Wo}), max at position "
                         f"({px // g.Wo}, {px % g.Wo}))")
            what = "channel" if g is not None else "neuron"
            raise CertificateError("stability", f"network layer {j} {what} {k} is not stable on "
                                                f"the box: min {show(Fraction(mn, D))} < 0 < "
                                                f"max {show(Fraction(mx, D))}{where}",
                                   layer=j, neuron=k)
    return keep


def _first_conv(layer: dict, tl: dict, j: int, i: int, start: int) -> Geometry:
    """The first layer of a convolution segment reads the segment input through the target's
    window (kernel, stride, padding, dilation, input shape)."""
    g, tg = layer["geom"], tl["geom"]
    if layer["kind"] != "conv" or layer["input"] != start:
        raise CertificateError("segment", f"network layer {j}: a convolution segment (target "
                                          f"layer {i}) starts with a conv layer reading node "
                                          f"{start}", layer=j)
    if not g.same_window(tg):
        raise CertificateError("identity", f"network layer {j}: {g.describe()}, target layer "
                                           f"{i} has {tg.describe()}", layer=j)
    return g


def _inner_layer(layer: dict, kind: str, seg: Geometry | None, j: int, i: int) -> None:
    """Layers after the first: dense in a dense segment; pointwise convolutions on the
    segment's output grid in a convolution segment."""
    if kind == "dense":
        if layer["kind"] != "dense":
            raise CertificateError("segment", f"network layer {j} is a {layer['kind']} layer "
                                              f"inside the dense segment of target layer {i}",
                                   layer=j)
        return
    g = layer["geom"]
    assert seg is not None
    if layer["kind"] != "conv" or not g.pointwise() or (seg.Ho, seg.Wo) != (g.H, g.W):
        raise CertificateError("segment", f"network layer {j}: inside the convolution segment "
                                          f"of target layer {i} every layer after the first is "
                                          f"a 1x1 conv (stride 1, padding 0, dilation 1) on the "
                                          f"{seg.Ho}x{seg.Wo} output grid", layer=j)


def _rule_checkpoint(layer: dict, plain: tuple, tl: dict, j: int, i: int, box: Box) -> None:
    """At checkpoint c_i: sigma equals sigma_i, width equals d_i (channels for a convolution),
    and the pre-activation map equals (W_i, b_i) on the box.

    Dense: every coefficient of a coordinate with lower < upper, and the bias with the
    coordinates where lower = upper folded in (exactly "equal on the box"). Convolution: the
    kernel and the bias entry by entry (plain equality, which is sufficient)."""
    W, b, sigma = tl["W"], tl["b"], tl["act"]
    cols, rows, consts, den = plain
    if layer["act"] != sigma:
        raise CertificateError("activation", f"checkpoint layer {j} has activation "
                                             f"{layer['act']}, target layer {i} has {sigma}",
                               layer=j)
    if len(rows) != W.nrows:
        unit = "channels" if tl["kind"] == "conv" else "width"
        raise CertificateError("width", f"checkpoint layer {j} has {unit} {len(rows)}, target "
                                        f"layer {i} has {W.nrows}", layer=j)
    lo, hi, Q = box
    at = {t: k for k, t in enumerate(cols)}
    fixed = [] if tl["kind"] == "conv" else [t for t in range(len(lo)) if lo[t] == hi[t]]
    skip = set(fixed)
    for r in range(W.nrows):
        wrow = W.rows[r]
        for t in range(len(wrow)):
            a = rows[r][at[t]] if t in at else 0
            if t not in skip and a * W.den != wrow[t] * den:
                raise CertificateError("identity", f"checkpoint layer {j}: pre-activation weight "
                                                   f"[{r}][{t}] is {show(Fraction(a, den))}, "
                                                   f"target layer {i} has {show(W.entry(r, t))}",
                                       layer=j, neuron=r)
        # mine = (consts + Σ_fixed rows·lo/Q)/den, theirs = b + Σ_fixed W·lo/Q
        mine_num = consts[r] * Q + sum((rows[r][at[t]] if t in at else 0) * lo[t] for t in fixed)
        theirs_num = b.nums[r] * W.den * Q + b.den * sum(wrow[t] * lo[t] for t in fixed)
        if mine_num * b.den * W.den != theirs_num * den:
            mine = Fraction(mine_num, den * Q)
            theirs = Fraction(theirs_num, b.den * W.den * Q)
            folded = " (with the coordinates where lower = upper folded in)" if fixed else ""
            raise CertificateError("identity", f"checkpoint layer {j}: pre-activation bias [{r}]"
                                               f"{folded} is {show(mine)}, target layer {i} has "
                                               f"{show(theirs)}", layer=j, neuron=r)


def _pool_segment(layers: list[dict], start: int, end: int, tl: dict, i: int) -> None:
    layer = layers[end - 1]
    if end != start + 1 or layer["kind"] != "avgpool" or layer["input"] != start:
        raise CertificateError("segment", f"network layer {start + 1}: the segment of avgpool "
                                          f"target layer {i} is one avgpool layer reading node "
                                          f"{start}", layer=start + 1)
    if not layer["geom"].same_window(tl["geom"]):
        raise CertificateError("identity", f"checkpoint layer {end}: pooling "
                                           f"{layer['geom'].describe()}, target layer {i} has "
                                           f"{tl['geom'].describe()}", layer=end)


def check_segment(ar: Any, layers: list[dict], start: int, end: int, tl: dict, i: int,
                  box: Box, budget: Budget, step: Callable[[int], None] | None = None) -> None:
    """Nodes start+1..end as affine maps of a = h_start (or of its patches): stability inside,
    the checkpoint rule at the end. A node's map is dropped after its last reader."""
    if tl["kind"] == gap.NAME:  # its own module: kind_globalavgpool
        if step is not None:
            step(end)
        gap.check_segment(layers, start, end, tl, i)
        return
    if tl["kind"] == "avgpool":
        if step is not None:
            step(end)
        _pool_segment(layers, start, end, tl, i)
        return
    seg: Geometry | None = None
    if tl["kind"] == "conv":
        seg = _first_conv(layers[start], tl, start + 1, i, start)
        fam_lo, fam_hi = patch_family(box, seg)
        width = seg.patch
    else:
        fam_lo, fam_hi = [[x] for x in box[0]], [[x] for x in box[1]]
        width = len(box[0])
    positions = len(fam_lo[0]) if fam_lo else 1
    family = ar.box(fam_lo, fam_hi, box[2])
    maps: dict[int, Any] = {start: None}
    last = last_uses(layers, start, end)
    for j in range(start + 1, end + 1):
        if step is not None:
            step(j)
        layer = layers[j - 1]
        if j > start + 1 or tl["kind"] == "dense":
            _inner_layer(layer, tl["kind"], seg, j, i)
        V = layer["V"]
        node = maps[layer["input"]]
        if isinstance(node, Scaled) and V.nrows * V.ncols > ar.nrows(node.B) * max(
                1, len(ar.support(node.B))):
            # scaling the node is cheaper than scaling the columns of this layer's matrix
            node = maps[layer["input"]] = _materialized(ar, node)
        inner = width if node is None else len(_support(ar, node))
        budget.size(V.nrows, inner, j)
        budget.work(V.nrows * V.ncols * (1 if node is None else inner), j)
        Mn, mden = ar.weight(V)
        if isinstance(node, Scaled):
            B = ar.compose_scaled(Mn, mden, node.B, node.gamma, node.beta, width)
        else:
            B = ar.compose(Mn, mden, node, width)
        gamma, beta = layer["gamma"], layer["beta"]
        if j < end and layer["act"] == "relu":
            budget.work(V.nrows * len(ar.support(B)) * positions, j)
            keep = _stable(ar, B, gamma, beta, family, j, seg)
            if not all(keep):
                gamma = IntVector([x if k else 0 for x, k in zip(gamma.nums, keep)], gamma.den)
                beta = IntVector([x if k else 0 for x, k in zip(beta.nums, keep)], beta.den)
        if j == end:
            _rule_checkpoint(layer, ar.plain(ar.affine(gamma, B, beta)), tl, j, i, box)
            return
        A: Any = Scaled(B, gamma, beta)
        if layer["skips"]:
            A = _materialized(ar, A)
        for src, P in layer["skips"]:
            sub = maps[src] = _materialized(ar, maps[src])
            if isinstance(P, Picks):
                cols = len({t for t in P.rows if t is not None}) if sub is None \
                    else len(ar.support(sub))
                budget.size(len(P.rows), cols, j)
                S = ar.compose_picks(P, sub)
            else:
                inner = width if sub is None else len(ar.support(sub))
                budget.size(P.nrows, inner, j)
                budget.work(P.nrows * P.ncols * (1 if sub is None else inner), j)
                Pn, pden = ar.weight(P)
                S = ar.compose(Pn, pden, sub, width)
            budget.size(ar.nrows(A), len(set(ar.support(A)) | set(ar.support(S))), j)
            A = ar.reduced(ar.add(A, S))
        if j in last:
            maps[j] = A
        for src in {layer["input"]} | {s for s, _ in layer["skips"]}:
            if last[src] == j:
                del maps[src]


# ---------------------------------------------------------------- verdict


def _shown(v: IntVector, k: int) -> str:
    """Entry k in lowest terms, or by bit sizes when reducing it would cost a huge gcd."""
    if v.den.bit_length() <= 4096:
        return show(v[k])
    p = v.nums[k]
    return f"{'-' if p < 0 else ''}({abs(p).bit_length()}-bit integer)/({v.den.bit_length()}-bit " \
           f"integer)"


def describe_box(lower: IntVector, upper: IntVector) -> str:
    """``[0,1]^784`` for a cube; else the first intervals, and every pinned coordinate
    (lower = upper) by name, since the target may weight it heavily."""
    n = len(lower)
    if len(set(lower.nums)) == 1 and len(set(upper.nums)) == 1:
        return f"[{_shown(lower, 0)},{_shown(upper, 0)}]^{n}"
    shown = " x ".join(f"[{_shown(lower, t)},{_shown(upper, t)}]" for t in range(min(n, 3)))
    text = f"{shown}{' x ...' if n > 3 else ''} (dimension {n})"
    pinned = [t for t in range(3, n)
              if lower.nums[t] * upper.den == upper.nums[t] * lower.den]
    if pinned:
        named = ", ".join(f"x{t} = {_shown(lower, t)}" for t in pinned[:5])
        more = f" and {len(pinned) - 5} more" if len(pinned) > 5 else ""
        text += f"; pinned: {named}{more}"
    return text


def _widths(widths: list[int]) -> str:
    if len(widths) <= 12:
        return "-".join(map(str, widths))
    return (f"{'-'.join(map(str, widths[:5]))}-...-{'-'.join(map(str, widths[-5:]))} "
            f"({len(widths) - 1} layers)")


def facts_of(doc: dict, lower: IntVector, upper: IntVector, target: list[dict],
             n_layers: int, prov: Provenance) -> dict[str, Any]:
    """What a valid verdict proves, as JSON-ready facts."""
    info = doc.get("provenance")
    construction = info.get("construction") if isinstance(info, dict) else None
    return {"box": describe_box(lower, upper), "dimension": len(lower),
            "target_widths": [len(lower)] + [tl["width"] for tl in target],
            "construction": construction[:60] if isinstance(construction, str) else None,
            "segments": len(target), "frozen_layers": n_layers, "version": prov.version,
            "regenerated": prov.regenerated, "explicit": prov.explicit,
            "seed": min(prov.seeds) if prov.seeds else None,
            "distributions": sorted(prov.distributions), "constant_draws": prov.constant,
            "fixed": prov.fixed[:20], "fixed_count": len(prov.fixed), "pooling": prov.pools,
            "redraws": prov.redraws}


def verdict_of(run: Callable[[], dict[str, Any]]) -> Verdict:
    """Run the rules; ``run`` returns the facts of :func:`facts_of` or raises CertificateError."""
    try:
        facts = run()
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc), exc.layer, exc.neuron)
    except RecursionError:
        return Verdict(False, "format", "document is nested too deeply")
    how = f" by construction {show(facts['construction'])}" if facts["construction"] else ""
    regen = f"{facts['regenerated']:,} frozen matrices regenerated from seed {facts['seed']}" \
        if facts["regenerated"] else "no frozen matrix regenerated from a seed"
    if facts["regenerated"]:
        regen += f" ({', '.join(facts['distributions'])}"
        if facts["constant_draws"]:
            regen += f"; {facts['constant_draws']} constant draw(s), not random"
        regen += ")"
    fixed = ""
    if facts["fixed_count"]:
        fixed = f"; {facts['fixed_count']} declared fixed (first: {facts['fixed'][0]})"
    pools = f"; {facts['pooling']} pooling map(s) declared" if facts["pooling"] else ""
    if facts["redraws"]:
        pools += f"; {facts['redraws']} redraw(s), each after a draw shown singular"
    return Verdict(True, "valid", f"f = g on {facts['box']} for target "
                                  f"{_widths(facts['target_widths'])}{how}; "
                                  f"{facts['segments']} segment(s), {facts['frozen_layers']} "
                                  f"frozen layer(s); {regen}, {facts['explicit']:,} given "
                                  f"explicitly{fixed}{pools}", facts=facts)


def progress_step(progress: Callable[[int, int], None] | None,
                  total: int) -> Callable[[int], None] | None:
    """``step(j)`` reporting ``progress(j - 1, total)``."""
    if progress is None:
        return None
    report = progress

    def step(j: int) -> None:
        report(j - 1, total)

    return step


def run_rules(ar: Any, doc: object, max_digits: int = DEFAULT_MAX_DIGITS,
              progress: Callable[[int, int], None] | None = None,
              max_work: int = DEFAULT_MAX_WORK) -> dict[str, Any]:
    """Every rule in order, with the arithmetic ``ar``; returns the facts proven when all hold."""
    lower, upper, target, layers, cps, prov = read_certificate(doc, max_digits)
    box = domain_box(lower, upper)
    budget = Budget(max_work)
    step = progress_step(progress, len(layers))
    for i, (start, end, tl) in enumerate(zip([0] + cps, cps, target), 1):
        check_segment(ar, layers, start, end, tl, i, box, budget, step)
        if i < len(target):
            box = next_box(tl, box)
    if progress is not None:
        progress(len(layers), len(layers))
    return facts_of(doc, lower, upper, target, len(layers), prov)  # type: ignore[arg-type]


def check_with(ar: Any, doc: object, *, max_digits: int = DEFAULT_MAX_DIGITS,
               progress: Callable[[int, int], None] | None = None,
               max_work: int = DEFAULT_MAX_WORK) -> Verdict:
    """Check a parsed certificate with arithmetic ``ar``; never raises for bad content."""
    if isinstance(doc, dict) and doc.get("format") == IMPOSSIBILITY_FORMAT:
        # the second document kind (docs/certificate-format.md §9); the arithmetic lends its
        # modular determinant and integer product (``linear``), else the reference is used
        from .impossibility import check_impossibility
        return check_impossibility(getattr(ar, "linear", None), doc, max_digits=max_digits,
                                   progress=progress, max_work=max_work)
    return verdict_of(lambda: run_rules(ar, doc, max_digits, progress, max_work))
