"""The seed of rule ``target.v2`` (docs/generator.md §8.2–§8.3): an independent implementation of
the canonical target written from the documentation alone (fractions, no code of the checker),
checked against the checker's on the documentation's test vector and on random dense targets,
chains and residual ones; and the property the rule exists for — every edit §8.3 covers, applied
in random sequences to random targets, keeps the seed, and an edit that changes the function on
the box changes it.

The edits are built here with exact fractions and the function is compared by exact evaluation
at the box's corners and at random rational points, so that "function-preserving" is checked,
not assumed."""

from __future__ import annotations

import copy
import hashlib
import itertools
import math
import random
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactnorm import api
from exactnorm.checker.document import document_seed
from exactnorm.checker.vocabulary import SEED_RULE_TARGET
from exactnorm.model.targets import random_target
from exactnorm.strategies.layered import conv_targets
from tests.helpers import both

# ------------------------------------------------------------------ reading (from §0, §1)


def num(x: Any) -> Fraction:
    """A number of the format: a JSON integer, ``"p/q"`` or a finite decimal."""
    return Fraction(x) if not isinstance(x, str) else Fraction(x.strip())


def vec(v: Any) -> list[Fraction]:
    if isinstance(v, dict):
        return [Fraction(int(n), int(v["den"])) for n in v["num"]]
    return [num(x) for x in v]


def mat(m: Any) -> list[list[Fraction]]:
    if isinstance(m, dict):
        return [[Fraction(int(n), int(m["den"])) for n in row] for row in m["num"]]
    return [[num(x) for x in row] for row in m]


def picks(skip: dict) -> tuple[list[int | None], int]:
    """The column each row of a 0/1 skip copies (None: a zero row), and its number of columns."""
    w = skip["weight"]
    if isinstance(w, dict) and "identity" in w:
        return list(range(w["identity"])), w["identity"]
    if isinstance(w, dict) and "selection" in w:
        return list(w["selection"]), w["columns"]
    rows = mat(w)
    return [next((t for t, x in enumerate(row) if x), None) for row in rows], len(rows[0])


def hexnum(x: Fraction) -> str:
    p, q = x.numerator, x.denominator
    text = ("-" if p < 0 else "") + format(abs(p), "x")
    return text if q == 1 else f"{text}/{q:x}"


# ------------------------------------------------------------------ the canonical target (§8.2)


def interval(W: list[list[Fraction]], b: list[Fraction], lo: list[Fraction],
             hi: list[Fraction]) -> tuple[list[Fraction], list[Fraction]]:
    mins = [bb + sum(w * (lo[t] if w > 0 else hi[t]) for t, w in enumerate(row))
            for row, bb in zip(W, b)]
    maxs = [bb + sum(w * (hi[t] if w > 0 else lo[t]) for t, w in enumerate(row))
            for row, bb in zip(W, b)]
    return mins, maxs


def content(row: list[Fraction]) -> Fraction:
    """The positive rational that makes a nonzero rational vector a primitive integer one."""
    den = math.lcm(*(x.denominator for x in row))
    g = math.gcd(*(int(x * den) for x in row))
    return Fraction(g, den)


def canonical(doc: dict) -> tuple[list[Fraction], list[Fraction], list[dict]]:
    """The canonical layers of a dense target (§8.2), each ``{"W", "b", "act", "input",
    "skip"}``."""
    lower, upper = vec(doc["domain"]["lower"]), vec(doc["domain"]["upper"])
    layers = doc["target"]["layers"]
    L = len(layers)
    read = [{"input": lay.get("input", i), "skip": lay.get("skip")} for i, lay in
            enumerate(layers)]
    readers: dict[int, list[tuple[int, str]]] = {p: [] for p in range(L + 1)}
    for i, r in enumerate(read, 1):
        readers[r["input"]].append((i, "input"))
        if r["skip"] is not None:
            readers[r["skip"]["from"]].append((i, "skip"))
    box = {0: (lower, upper)}
    members: dict[int, list[list[tuple[int, Fraction]]]] = {}
    out = []
    for i, layer in enumerate(layers, 1):
        p, skip = read[i - 1]["input"], read[i - 1]["skip"]
        act = layer["activation"]
        W, b = mat(layer["weight"]), vec(layer["bias"])
        if p in members:  # compensation
            W = [[sum((c * row[s] for s, c in group), Fraction(0)) for group in members[p]]
                 for row in W]
        lo, hi = box[p]
        for u in range(len(lo)):  # folding
            if lo[u] == hi[u]:
                b = [bb + row[u] * lo[u] for row, bb in zip(W, b)]
                for row in W:
                    row[u] = Fraction(0)
        mins, maxs = interval(W, b, lo, hi)
        if skip is not None:
            rows, _ = picks(skip)
            qlo, qhi = box[skip["from"]]
            mins = [m + (0 if t is None else qlo[t]) for m, t in zip(mins, rows)]
            maxs = [m + (0 if t is None else qhi[t]) for m, t in zip(maxs, rows)]
        normal = i < L and skip is None and all(how == "input" for _, how in readers[i])
        if normal:
            keys, scales = [], []
            for row, bb in zip(W, b):
                full = row + [bb]
                c = content(full) if any(full) else Fraction(1)
                keys.append(tuple(int(x / c) for x in full))
                scales.append(c)
            mins, maxs = interval([list(map(Fraction, k[:-1])) for k in keys],
                                  [Fraction(k[-1]) for k in keys], lo, hi)
            zero = (0,) * (len(W[0]) + 1)
            for r in range(len(keys)):
                if act == "relu" and maxs[r] <= 0:
                    keys[r] = zero
            distinct: dict[tuple[int, ...], list[int]] = {}
            for r, k in enumerate(keys):
                if k != zero:
                    distinct.setdefault(k, []).append(r)
            rows_ = [(k, [(r, scales[r]) for r in rs], rs[0]) for k, rs in distinct.items()]
            rows_ += [(zero, [], None)] * (len(keys) - len(rows_))
            rows_.sort(key=lambda item: item[0])
            W = [[Fraction(x) for x in k[:-1]] for k, _, _ in rows_]
            b = [Fraction(k[-1]) for k, _, _ in rows_]
            members[i] = [g for _, g, _ in rows_]
            mins = [Fraction(0) if r is None else mins[r] for _, _, r in rows_]
            maxs = [Fraction(0) if r is None else maxs[r] for _, _, r in rows_]
        elif skip is None and act == "relu":
            for r in range(len(W)):
                if maxs[r] <= 0:
                    W[r] = [Fraction(0)] * len(W[r])
                    b[r] = Fraction(0)
        if act == "relu":
            mins = [max(m, Fraction(0)) for m in mins]
            maxs = [max(m, Fraction(0)) for m in maxs]
        box[i] = (mins, maxs)
        out.append({"W": W, "b": b, "act": act, "input": p, "skip": skip})
    return lower, upper, out


def canonical_text(doc: dict) -> bytes:
    lower, upper, layers = canonical(doc)
    lines = ["exactnorm.seed.v2", "lower " + ",".join(map(hexnum, lower)),
             "upper " + ",".join(map(hexnum, upper))]
    for i, layer in enumerate(layers, 1):
        lines.append(f"layer {i} dense {layer['act']}")
        if layer["input"] != i - 1:
            lines.append(f"input {layer['input']}")
        skip = layer["skip"]
        if skip is not None:
            rows, cols = picks(skip)
            if skip["kind"] == "identity":
                lines.append(f"skip {skip['from']} identity {cols}")
            else:
                lines.append(f"skip {skip['from']} selection {cols} "
                             + ",".join("_" if t is None else str(t) for t in rows))
        lines.append("weight " + ";".join(",".join(map(hexnum, r)) for r in layer["W"]))
        lines.append("bias " + ",".join(map(hexnum, layer["b"])))
    return "".join(line + "\n" for line in lines).encode("ascii")


def independent_seed_v2(doc: dict) -> int:
    """The seed of rule ``target.v2`` of a dense target, from docs/generator.md §8 alone."""
    return int.from_bytes(hashlib.shake_256(canonical_text(doc)).digest(8), "little")


# ------------------------------------------------------------------ the test vector


VECTOR = {"domain": {"lower": [0, "-1/2"], "upper": [1, "0.5"]},
          "target": {"layers": [{"weight": [["1/2", -3], [0, "2/4"]], "bias": [1, "-1/3"],
                                 "activation": "relu"},
                                {"weight": [[1, 1]], "bias": [0], "activation": "identity"}]}}


def test_the_test_vector_of_the_documentation():
    assert canonical_text(VECTOR) == (b"exactnorm.seed.v2\nlower 0,-1/2\nupper 1,1/2\n"
                                      b"layer 1 dense relu\nweight 0,0;1,-6\nbias 0,2\n"
                                      b"layer 2 dense identity\nweight 0,1/2\nbias 0\n")
    assert document_seed(VECTOR) == independent_seed_v2(VECTOR) == 2537531576489715923
    assert document_seed(VECTOR, rule=SEED_RULE_TARGET) == document_seed(VECTOR)


# ------------------------------------------------------------------ random targets and edits


def text(x: Fraction) -> str | int:
    return int(x) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def document(lower: list[Fraction], upper: list[Fraction],
             layers: list[tuple[list[list[Fraction]], list[Fraction], str]]) -> dict:
    return {"domain": {"lower": [text(x) for x in lower], "upper": [text(x) for x in upper]},
            "target": {"layers": [{"weight": [[text(x) for x in row] for row in W],
                                   "bias": [text(x) for x in b], "activation": act}
                                  for W, b, act in layers]}}


def evaluate(layers: list[tuple[list[list[Fraction]], list[Fraction], str]],
             x: list[Fraction]) -> list[Fraction]:
    for W, b, act in layers:
        x = [sum((w * t for w, t in zip(row, x)), bb) for row, bb in zip(W, b)]
        if act == "relu":
            x = [max(t, Fraction(0)) for t in x]
    return x


def points(lower: list[Fraction], upper: list[Fraction], seed: int) -> list[list[Fraction]]:
    corners = [list(c) for c in itertools.product(*zip(lower, upper))][:64]
    rng = random.Random(seed)
    inner = [[lo + Fraction(rng.randint(0, 97), 97) * (hi - lo) for lo, hi in zip(lower, upper)]
             for _ in range(24)]
    return corners + inner


small = st.integers(-6, 6).map(lambda n: Fraction(n, 2))


@st.composite
def targets(draw: Any) -> tuple[list[Fraction], list[Fraction], list]:
    """A dense chain target of depth 1–3 and widths 1–4, small rational weights, a box with
    some coordinates pinned (at 0 or not)."""
    widths = draw(st.lists(st.integers(1, 4), min_size=2, max_size=4))
    lower, upper = [], []
    for _ in range(widths[0]):
        lo = draw(st.integers(-2, 1))
        pinned = draw(st.sampled_from(["no", "no", "zero", "value"]))
        if pinned == "zero":
            lower.append(Fraction(0))
            upper.append(Fraction(0))
        elif pinned == "value":
            lower.append(Fraction(lo, 2))
            upper.append(Fraction(lo, 2))
        else:
            lower.append(Fraction(lo))
            upper.append(Fraction(lo + draw(st.integers(1, 2))))
    layers = []
    for a, b in zip(widths, widths[1:]):
        W = [[draw(small) for _ in range(a)] for _ in range(b)]
        bias = [draw(small) for _ in range(b)]
        act = draw(st.sampled_from(["relu", "relu", "identity"]))
        layers.append((W, bias, act))
    return lower, upper, layers


def _copy(layers: list) -> list:
    return [([row[:] for row in W], b[:], act) for W, b, act in layers]


def _box_hidden(lower: list[Fraction], upper: list[Fraction], layers: list,
                i: int) -> tuple[list[Fraction], list[Fraction]]:
    """The interval box of node ``i`` of the target as written (looser than the canonical)."""
    lo, hi = lower, upper
    for W, b, act in layers[:i]:
        lo, hi = interval(W, b, lo, hi)
        if act == "relu":
            lo, hi = [max(t, Fraction(0)) for t in lo], [max(t, Fraction(0)) for t in hi]
    return lo, hi


def edit(lower: list[Fraction], upper: list[Fraction], layers: list, kind: str,
         rng: random.Random) -> list:
    """One edit of §8.3 (the function on the box unchanged), or the layers unchanged when it
    does not apply."""
    out = _copy(layers)
    hidden = [i for i in range(len(out) - 1)]  # layer i's output is node i + 1 < L
    if kind == "pinned":
        pinned = [t for t in range(len(lower)) if lower[t] == upper[t]]
        if not pinned:
            return out
        t = rng.choice(pinned)
        W, b, _ = out[0]
        r = rng.randrange(len(W))
        delta = Fraction(rng.randint(-9, 9), rng.randint(1, 4))
        W[r][t] += delta
        b[r] -= delta * lower[t]
    elif kind in ("dead", "make dead") and hidden:
        # "dead": a new row for a neuron dead by the interval rule, dead again; "make dead" (not
        # an edit of §8.3: it prepares a target) kills a neuron
        i = rng.choice(hidden)
        W, b, act = out[i]
        r = rng.randrange(len(W))
        lo, hi = _box_hidden(lower, upper, out, i)
        if act != "relu" or (kind == "dead" and interval([W[r]], [b[r]], lo, hi)[1][0] > 0):
            return out
        W[r] = [Fraction(rng.randint(-5, 5), rng.randint(1, 3)) for _ in W[r]]
        top = sum(max(w * lo[t], w * hi[t]) for t, w in enumerate(W[r]))
        b[r] = -top - Fraction(rng.randint(0, 3), 2)  # the upper bound is <= 0
    elif kind == "scale" and hidden:
        i = rng.choice(hidden)
        c = Fraction(rng.randint(1, 9), rng.randint(1, 9))
        W, b, _ = out[i]
        r = rng.randrange(len(W))
        W[r] = [w * c for w in W[r]]
        b[r] *= c
        for row in out[i + 1][0]:
            row[r] /= c
    elif kind == "order" and hidden:
        i = rng.choice(hidden)
        W, b, act = out[i]
        perm = list(range(len(W)))
        rng.shuffle(perm)
        out[i] = ([W[r] for r in perm], [b[r] for r in perm], act)
        out[i + 1] = ([[row[r] for r in perm] for row in out[i + 1][0]], out[i + 1][1],
                      out[i + 1][2])
    elif kind == "make duplicate" and hidden:
        # not an edit of §8.3: it prepares a target with a neuron a positive multiple of another
        i = rng.choice(hidden)
        W, b, _ = out[i]
        if len(W) < 2:
            return out
        r1, r2 = rng.sample(range(len(W)), 2)
        s = Fraction(rng.randint(1, 6), rng.randint(1, 6))
        W[r2] = [w * s for w in W[r1]]
        b[r2] = b[r1] * s
    elif kind == "duplicate" and hidden:
        # move outgoing weight from a neuron to one its row is a positive multiple of
        i = rng.choice(hidden)
        W, b, _ = out[i]
        def ratio(r1: int, r2: int) -> Fraction:
            k = next(t for t, x in enumerate(W[r1] + [b[r1]]) if x)
            return (W[r2] + [b[r2]])[k] / (W[r1] + [b[r1]])[k]

        pairs = [(r1, r2, ratio(r1, r2)) for r1 in range(len(W)) for r2 in range(len(W))
                 if r1 != r2 and any(W[r1] + [b[r1]])]
        pairs = [(r1, r2, s) for r1, r2, s in pairs if s > 0 and W[r2] + [b[r2]] == [
            x * s for x in W[r1] + [b[r1]]]]
        if not pairs:
            return out
        r1, r2, s = rng.choice(pairs)  # h_r2 = s·h_r1
        for row in out[i + 1][0]:
            moved = Fraction(rng.randint(-4, 4), 2)
            row[r1] += moved * s
            row[r2] -= moved
    return out


def _same_function(lower: list[Fraction], upper: list[Fraction], a: list, b: list,
                   seed: int) -> bool:
    return all(evaluate(a, x) == evaluate(b, x) for x in points(lower, upper, seed))


KINDS = ["pinned", "dead", "scale", "order", "duplicate"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(targets(), st.lists(st.sampled_from(KINDS), min_size=1, max_size=6), st.integers(0, 10**6))
def test_function_preserving_edits_keep_the_seed(target, kinds, seed):
    lower, upper, layers = target
    rng = random.Random(seed)
    # a duplicate and a dead neuron made first, on both sides, so that the edits have something
    # to move: the property is about the edits, not about these targets
    base = edit(lower, upper, edit(lower, upper, layers, "make duplicate", rng), "make dead",
                rng)
    edited = base
    for kind in kinds:
        edited = edit(lower, upper, edited, kind, rng)
    assert _same_function(lower, upper, base, edited, seed)  # the edits are what §8.3 says
    a, b = document(lower, upper, base), document(lower, upper, edited)
    assert document_seed(a) == document_seed(b) == independent_seed_v2(b)


def test_the_edits_are_not_idle():
    """The same edits change the seed of the first rule (the weights as written) most of the
    time: the property above would fail for a seed that is not canonical."""
    rng = random.Random(11)
    changed = kept = 0
    for _ in range(60):
        lower, upper, layers = _example(rng)
        base = edit(lower, upper, edit(lower, upper, layers, "make duplicate", rng),
                    "make dead", rng)
        edited = base
        for kind in rng.choices(KINDS, k=4):
            edited = edit(lower, upper, edited, kind, rng)
        a, b = document(lower, upper, base), document(lower, upper, edited)
        if a == b:
            continue
        changed += document_seed(a, rule="target") != document_seed(b, rule="target")
        kept += document_seed(a) == document_seed(b)
    assert changed >= 30 and kept == changed, (changed, kept)


def _example(rng: random.Random) -> tuple[list[Fraction], list[Fraction], list]:
    """A target like :func:`targets`, from a seeded generator."""
    widths = [rng.randint(1, 4) for _ in range(rng.randint(2, 4))]
    lower = [Fraction(rng.randint(-2, 1)) for _ in range(widths[0])]
    upper = [lo + rng.choice([0, 1, 2]) for lo in lower]
    layers = [([[Fraction(rng.randint(-6, 6), 2) for _ in range(a)] for _ in range(b)],
               [Fraction(rng.randint(-6, 6), 2) for _ in range(b)],
               rng.choice(["relu", "relu", "identity"])) for a, b in zip(widths, widths[1:])]
    return lower, upper, layers


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(targets(), st.integers(0, 10**6))
def test_an_edit_that_changes_the_function_changes_the_seed(target, seed):
    lower, upper, layers = target
    rng = random.Random(seed)
    edited = _copy(layers)
    i = rng.randrange(len(edited))
    W, b, _ = edited[i]
    r = rng.randrange(len(W))
    delta = Fraction(rng.choice([-3, -1, 1, 2]), rng.randint(1, 3))
    if rng.random() < 0.5:
        b[r] += delta
    else:
        W[r][rng.randrange(len(W[r]))] += delta
    if _same_function(lower, upper, layers, edited, seed):
        return  # this edit happened to keep the function on the box: nothing to demand
    a, b2 = document(lower, upper, layers), document(lower, upper, edited)
    assert document_seed(a) != document_seed(b2)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(targets())
def test_the_checker_and_the_documentation_agree_on_random_chains(target):
    lower, upper, layers = target
    doc = document(lower, upper, layers)
    assert document_seed(doc) == independent_seed_v2(doc)


def test_the_checker_and_the_documentation_agree_on_residual_targets():
    """Targets whose layers read earlier nodes and add skips (a node a skip reads is never
    normalized), rebuilt from a random seed."""
    rng = random.Random(5)
    for trial in range(40):
        d0 = rng.randint(1, 3)
        lower = [Fraction(rng.randint(-2, 0)) for _ in range(d0)]
        upper = [lo + rng.randint(0, 2) for lo in lower]
        widths = [d0]
        layers = []
        for i in range(1, rng.randint(2, 5) + 1):
            p = rng.randrange(i) if rng.random() < 0.4 else i - 1
            w = rng.randint(1, 3)
            layer: dict[str, Any] = {
                "weight": [[f"{rng.randint(-6, 6)}/{rng.randint(1, 3)}" for _ in range(
                    widths[p])] for _ in range(w)],
                "bias": [f"{rng.randint(-4, 4)}/2" for _ in range(w)],
                "activation": rng.choice(["relu", "identity"])}
            if p != i - 1:
                layer["input"] = p
            if rng.random() < 0.4:
                q = rng.randrange(i)
                sel = [rng.choice([None] + list(range(widths[q]))) for _ in range(w)]
                layer["skip"] = {"from": q, "kind": "selection",
                                 "weight": {"selection": sel, "columns": widths[q]}}
            layers.append(layer)
            widths.append(w)
        doc = {"domain": {"lower": [str(x) for x in lower], "upper": [str(x) for x in upper]},
               "target": {"layers": layers}}
        assert document_seed(doc) == independent_seed_v2(doc), (trial, doc)


@pytest.mark.parametrize("v", [0, Fraction(1, 2)])
def test_the_grinding_edit_of_a_pinned_coordinate_keeps_the_seed(v):
    """The edit of the round: a weight on a coordinate the box pins (with the bias compensating
    when the pinned value is not 0). Rule ``target`` gives as many seeds as edits; rule
    ``target.v2`` one."""
    lower, upper = [Fraction(0), v], [Fraction(1), v]
    layers = [([[Fraction(1), Fraction(2)], [Fraction(-1), Fraction(3)]], [Fraction(1)] * 2,
               "relu"), ([[Fraction(1), Fraction(1)]], [Fraction(0)], "identity")]
    v1, v2 = set(), set()
    for k in range(40):
        edited = _copy(layers)
        edited[0][0][0][1] += k
        edited[0][1][0] -= k * v
        doc = document(lower, upper, edited)
        v1.add(document_seed(doc, rule="target"))
        v2.add(document_seed(doc))
    assert len(v1) == 40 and len(v2) == 1


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_targets(max_side=4, dense_head=True))
def test_convolutional_targets_certify_with_the_canonical_seed(g):
    """Convolution and pooling layers are hashed as written, their boxes feed the dense head's
    folding; the writer's seed is the checker's, in both arithmetics."""
    doc = api.certificate_document(api.certify(g, jobs=1))
    v = both(doc)
    assert v.ok and v.facts["seed_rule"] == SEED_RULE_TARGET, v
    assert v.facts["seed"] == document_seed(doc)


def _hostile(doc: dict, rng: random.Random) -> dict:
    """``doc`` with a few target numbers replaced by 0, their negative or a large negative bias
    (dead neurons, zero rows, pinned-looking coordinates)."""
    out = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 4)):
        layer = rng.choice(out["target"]["layers"])
        if "bias" not in layer:
            continue
        which = rng.choice(["weight", "bias"])
        value = layer[which]
        nums = value["num"] if isinstance(value, dict) else value
        if which == "weight":
            nums = rng.choice(nums)
        k = rng.randrange(len(nums))
        nums[k] = rng.choice([0, -1000, 1, "-7/3"]) if not isinstance(value, dict) else \
            rng.choice([0, -1000, 1])
    return out


def test_hostile_targets_get_the_same_verdict_from_both_arithmetics():
    """Targets the writer never produces (dead neurons, zero rows, equal rows), with seed rule
    target.v2 declared: a verdict, the same in both arithmetics, never an internal error; the
    seed the checker names is document_seed's."""
    from tests.certificate.test_golden_certificates import lenet_small
    from tests.checker.test_checker_residual import dense_residual_doc

    rng = random.Random(2)
    docs = [api.certificate_document(api.certify(lenet_small(), jobs=1)), dense_residual_doc(),
            api.certificate_document(api.certify(random_target((3, 4, 4, 2), seed=3)))]
    for doc in docs:
        for _ in range(15):
            bad = _hostile(doc, rng)
            bad["seed_rule"] = SEED_RULE_TARGET
            v = both(bad)
            if not v.ok and v.rule == "provenance" and "seed derived" in v.message:
                assert v.message.endswith(f"is {document_seed(bad)}"), v
