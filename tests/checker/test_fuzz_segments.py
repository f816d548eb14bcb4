"""Structural mutants of every document kind (issue 38): checkpoints moved, a layer of every kind
placed in every segment kind, node reads and skips rewired — over the corpus of valid documents
(:mod:`tests.checker.corpus`: certificates of versions 1 to 3 with dense, convolution and
pooling segments, residual targets and checkpoints, channel blocks with identity skips, skips of
every form, and impossibility documents of every witness kind).

Every mutant must get a verdict — never an exception, an internal error of either arithmetic —
and the same verdict (ok, rule, message, layer, neuron, facts) from both arithmetics. The
systematic families are enumerated whole (every checkpoint moved by ±1 and ±2, every layer
replaced by a layer of every kind, every read and every skip source set to every earlier node);
a Hypothesis test composes a few of them at random. The counts per document and family are
printed with ``-s``.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactnorm import checker, checker_flint
from tests.checker import corpus
from tests.checker.test_fuzz import EXAMPLES

COUNTS: Counter[str] = Counter()
KINDS = ("dense", "conv", "avgpool", "globalavgpool")


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    print(f"\nstructural mutants checked: {sum(COUNTS.values())} ({dict(sorted(COUNTS.items()))})")


def verdict(doc: dict) -> checker.Verdict:
    """Both arithmetics, no exception, the same verdict."""
    a = checker.check_certificate(copy.deepcopy(doc))
    b = checker_flint.check_certificate(copy.deepcopy(doc))
    assert a == b, (a, b)
    assert a.ok or (a.rule and a.message and "\n" not in a.message), a
    return a


# ---------------------------------------------------------------- widths of the nodes


def _count(v: Any) -> int:
    return len(v["num"]) if isinstance(v, dict) else len(v)


def _out(g: dict) -> tuple[int, int]:
    _, H, W = g["input_shape"]
    (kh, kw), (sh, sw), (ph, pw) = g["kernel_shape"], g["stride"], g["padding"]
    dh, dw = g.get("dilation", [1, 1])
    return (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1


def node_widths(doc: dict) -> list[int]:
    """The width of every frozen node (0: the input), as §0 and §8 define them."""
    dims = [len(doc["domain"]["lower"]) if isinstance(doc["domain"]["lower"], list)
            else len(doc["domain"]["lower"]["num"])]
    for layer in doc["network"]["layers"]:
        kind = layer.get("kind", "dense")
        if kind == "globalavgpool":
            dims.append(layer["input_shape"][0])
        elif kind == "avgpool":
            Ho, Wo = _out(layer)
            dims.append(layer["input_shape"][0] * Ho * Wo)
        elif "gamma" in layer:  # dense, conv
            n = _count(layer["gamma"])
            if kind == "conv":
                Ho, Wo = _out(layer)
                n *= Ho * Wo
            dims.append(n)
        else:  # an impossibility document's frozen layer
            w = layer["weight"]
            dims.append(w["random"]["shape"][0] if isinstance(w, dict) and "random" in w
                        else _count(w))
    return dims


def _shapes(n: int) -> list[list[int]]:
    """Every ``[C, H, W]`` of ``n`` values (a few)."""
    out = [[c, h, n // (c * h)] for c in range(1, n + 1) if n % c == 0
           for h in range(1, n // c + 1) if (n // c) % h == 0]
    return out[:3] + out[-2:]


# ---------------------------------------------------------------- the families


Mutant = tuple[str, dict]


def moved_checkpoints(doc: dict) -> Iterator[Mutant]:
    cps = doc["network"].get("checkpoints")
    for i in range(len(cps or [])):
        for delta in (-2, -1, 1, 2):
            out = copy.deepcopy(doc)
            out["network"]["checkpoints"][i] += delta
            yield "checkpoint moved", out


def layer_of(kind: str, src: int, width: int, like: dict, variant: int) -> dict:
    """A frozen layer of ``kind`` reading node ``src`` of ``width`` values; ``like`` is the layer
    it replaces (its window is reused where it has one)."""
    shape = _shapes(width)[variant % len(_shapes(width))]
    if kind == "dense":
        n = 1 + variant % 3
        return {"input": src, "weight": [[(r + t) % 3 - 1 for t in range(width)]
                                         for r in range(n)],
                "gamma": [1] * n, "beta": [0] * n,
                "activation": ("relu", "identity")[variant % 2]}
    if kind == "globalavgpool":
        return {"kind": kind, "input": src, "input_shape": shape, "activation": "identity"}
    window = {k: copy.deepcopy(like[k]) for k in ("input_shape", "kernel_shape", "stride",
                                                 "padding", "dilation") if k in like}
    if "kernel_shape" not in window or variant % 2:
        window = {"input_shape": shape, "kernel_shape": [1, 1], "stride": [1, 1],
                  "padding": [0, 0], "dilation": [1, 1]}
    if kind == "avgpool":
        window["padding"] = [0, 0]
        window.pop("dilation", None)
        return {"kind": kind, "input": src, **window, "activation": "identity"}
    c = 1 + variant % 2
    patch = window["input_shape"][0] * window["kernel_shape"][0] * window["kernel_shape"][1]
    return {"kind": "conv", "input": src, **window,
            "weight": [[(r + t) % 3 - 1 for t in range(patch)] for r in range(c)],
            "gamma": [1] * c, "beta": [0] * c, "activation": "relu"}


def _segment_kinds(doc: dict) -> list[str]:
    """The kind of the segment of every frozen layer (its target layer's kind)."""
    cps = doc["network"]["checkpoints"]
    kinds = [t.get("kind", "dense") for t in doc["target"]["layers"]]
    return [next((kinds[i] for i, c in enumerate(cps) if j <= c and i < len(kinds)), "no")
            for j in range(1, len(doc["network"]["layers"]) + 1)]


def replaced_layers(doc: dict) -> Iterator[Mutant]:
    """Every frozen layer replaced by a layer of every kind reading the same node."""
    if "checkpoints" not in doc["network"]:
        return
    dims = node_widths(doc)
    segments = _segment_kinds(doc)
    for j, layer in enumerate(doc["network"]["layers"]):
        for kind in KINDS:
            for variant in range(2):
                out = copy.deepcopy(doc)
                new = layer_of(kind, layer["input"], dims[layer["input"]], layer, variant)
                if doc["version"] >= 2 and "weight" in new:
                    new["source"] = {"kind": "fixed", "why": "a fuzzed layer"}
                out["network"]["layers"][j] = new
                yield f"{kind} layer placed in a {segments[j]} segment", out


def inserted_layers(doc: dict) -> Iterator[Mutant]:
    """A layer of every kind inserted before each checkpoint (later reads and checkpoints
    shifted), reading the node before it."""
    if "checkpoints" not in doc["network"]:
        return
    dims = node_widths(doc)
    segments = _segment_kinds(doc)
    for c in doc["network"]["checkpoints"]:
        for kind in KINDS:
            out = copy.deepcopy(doc)
            layers = out["network"]["layers"]
            new = layer_of(kind, c - 1, dims[c - 1], layers[c - 1], c)
            if doc["version"] >= 2 and "weight" in new:
                new["source"] = {"kind": "fixed", "why": "a fuzzed layer"}
            for later in layers[c - 1:]:
                if later["input"] >= c - 1:
                    later["input"] += 1
                for s in later.get("skip", []):
                    if s["from"] >= c - 1:
                        s["from"] += 1
                if "residual" in later and later["residual"]["from"] >= c - 1:
                    later["residual"]["from"] += 1
            layers.insert(c - 1, new)
            out["network"]["checkpoints"] = [x + (x >= c) for x in out["network"]["checkpoints"]]
            yield f"{kind} layer inserted in a {segments[c - 1]} segment", out


def replaced_target_layers(doc: dict) -> Iterator[Mutant]:
    """An impossibility document's target layers replaced by target layers of every kind
    reading the same node (its reader reads every kind and names what it refuses)."""
    if doc["format"] != "exactnorm.impossibility":
        return
    width = len(doc["domain"]["lower"])
    for i, layer in enumerate(doc["target"]["layers"]):
        for kind in KINDS[1:]:
            new = layer_of(kind, 0, width, {}, i)
            new.pop("input")
            for key in ("gamma", "beta"):
                new.pop(key, None)
            if kind == "conv":
                new["bias"] = [0] * len(new["weight"])
            out = copy.deepcopy(doc)
            out["target"]["layers"][i] = new
            yield f"target {kind} layer placed", out
        width = _count(layer["weight"])  # the rows of this dense layer: the next one's input


def rewired_reads(doc: dict) -> Iterator[Mutant]:
    """Every frozen layer's input, and every target layer's (version 3 and impossibility
    documents), set to every earlier node."""
    for j, layer in enumerate(doc["network"]["layers"], 1):
        if "input" not in layer:
            continue
        for s in range(j):
            if s != layer["input"]:
                out = copy.deepcopy(doc)
                out["network"]["layers"][j - 1]["input"] = s
                yield "frozen read rewired", out
    if doc.get("version") == 3 or doc["format"] == "exactnorm.impossibility":
        for i in range(1, len(doc["target"]["layers"]) + 1):
            for p in range(i - 1):
                out = copy.deepcopy(doc)
                out["target"]["layers"][i - 1]["input"] = p
                yield "target read rewired", out


def _skips(doc: dict) -> Iterator[tuple[Callable[[dict], dict], int]]:
    """Every skip of the document (its object in a copy, the number of nodes it may read)."""
    for j, layer in enumerate(doc["network"]["layers"], 1):
        for t, _ in enumerate(layer.get("skip", [])):
            yield (lambda d, j=j, t=t: d["network"]["layers"][j - 1]["skip"][t]), j
        if "residual" in layer:
            yield (lambda d, j=j: d["network"]["layers"][j - 1]["residual"]), j
    for i, layer in enumerate(doc["target"]["layers"], 1):
        if "skip" in layer:
            yield (lambda d, i=i: d["target"]["layers"][i - 1]["skip"]), i


def rewired_skips(doc: dict) -> Iterator[Mutant]:
    """Every skip's source set to every earlier node, and an identity skip added to every
    layer that has none (from the node before it, as wide as the layer or not)."""
    for skip, limit in _skips(doc):
        for s in range(limit):
            out = copy.deepcopy(doc)
            if skip(out)["from"] != s:
                skip(out)["from"] = s
                yield "skip rewired", out
    if "checkpoints" not in doc["network"]:
        return
    dims = node_widths(doc)
    for j, layer in enumerate(doc["network"]["layers"], 1):
        if "skip" in layer or j < 2:
            continue
        out = copy.deepcopy(doc)
        out["network"]["layers"][j - 1]["skip"] = [
            {"from": j - 1, "kind": "identity", "weight": {"identity": dims[j - 1]}}]
        yield "skip added", out


FAMILIES = (moved_checkpoints, replaced_layers, inserted_layers, replaced_target_layers,
            rewired_reads, rewired_skips)
NAMES = list(corpus.documents())


@pytest.mark.parametrize("name", NAMES)
def test_every_structural_mutant_gets_one_verdict_from_both_arithmetics(name):
    doc = corpus.documents()[name]
    assert verdict(doc).ok
    seen = 0
    for family in FAMILIES:
        for what, mutant in family(doc):
            verdict(mutant)
            COUNTS[f"{name}: {what}"] += 1
            seen += 1
    assert seen > 0


def test_the_families_reach_every_kind_in_every_segment_kind():
    """Placed and inserted layers of each kind stand in segments of each kind of the corpus."""
    pairs = set()
    for doc in corpus.documents().values():
        for family in (replaced_layers, inserted_layers):
            for what, _ in family(doc):
                words = what.split()
                pairs.add((words[0], words[-2]))
    assert pairs >= {(k, s) for k in KINDS for s in KINDS}, sorted(pairs)


@st.composite
def composed(draw: Any) -> dict:
    """A document of the corpus with one to three mutations of the families composed."""
    doc = corpus.documents()[draw(st.sampled_from(NAMES))]
    for _ in range(draw(st.integers(1, 3))):
        family = draw(st.sampled_from(FAMILIES))
        mutants = [m for _, m in family(doc)]
        if mutants:
            doc = draw(st.sampled_from(mutants))
    return doc


@settings(max_examples=max(20, EXAMPLES), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(composed())
def test_composed_mutants_get_one_verdict_from_both_arithmetics(doc):
    verdict(doc)
    COUNTS["composed"] += 1
