"""Structured fuzzing of what a layer reads (issue 30): node indices, skip sources, layer kinds,
windows and ``input_shape`` reinterpretations (``C′·H′·W′ = C·H·W``) of small dense,
convolution and pooling certificates. Every generated document must get the same verdict, rule
and message from both arithmetics and never an exception; an accepted one must compute its
target exactly at the corners and the centre of its box (an oracle that does not use the
checker: :func:`exactnorm.certificate.exact_agreement` evaluates both networks).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactnorm import checker, checker_flint
from tests.checker.test_fuzz import ACCEPTED, EXAMPLES, GENERATED

SHAPES = [(1, 2, 2), (1, 3, 3), (2, 2, 2), (1, 4, 4), (4, 1, 1), (2, 1, 3)]


def _factorizations(n: int) -> list[list[int]]:
    return [[c, h, n // (c * h)] for c in range(1, n + 1) if n % c == 0
            for h in range(1, n // c + 1) if (n // c) % h == 0]


def _out(shape: list[int], g: dict) -> tuple[int, int]:
    _, H, W = shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (g["kernel_shape"], g["stride"], g["padding"],
                                              g.get("dilation", [1, 1]))
    return (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1


@st.composite
def windows(draw: Any, shape: list[int], pool: bool = False) -> dict:
    C, H, W = shape
    kh, kw = draw(st.integers(1, max(1, H))), draw(st.integers(1, max(1, W)))
    g = {"input_shape": list(shape), "kernel_shape": [kh, kw],
         "stride": [draw(st.integers(1, 2)), draw(st.integers(1, 2))],
         "padding": [0, 0] if pool else [draw(st.integers(0, 1)), draw(st.integers(0, 1))]}
    if not pool:
        g["dilation"] = [1, 1] if draw(st.integers(0, 3)) else [2, 1]
    return g


def _matrix(draw: Any, rows: int, cols: int) -> Any:
    M = [[draw(st.integers(-2, 2)) for _ in range(cols)] for _ in range(rows)]
    return {"den": 2, "num": M} if draw(st.integers(0, 3)) == 0 else M


@st.composite
def documents(draw: Any) -> dict:
    shape = list(draw(st.sampled_from(SHAPES)))
    d0 = shape[0] * shape[1] * shape[2]
    # the target: kinds on a tensor of known shape; sometimes a reinterpreted input_shape
    target, widths, shapes = [], [d0], [shape]
    for _ in range(draw(st.integers(1, 3))):
        cur = shapes[-1]
        kind = draw(st.sampled_from(["dense", "conv", "avgpool"])) if cur else "dense"
        if kind != "dense" and draw(st.integers(0, 4)) == 0:
            cur = draw(st.sampled_from(_factorizations(widths[-1])))
        if kind == "dense":
            out = draw(st.integers(1, 3))
            target.append({"weight": _matrix(draw, out, widths[-1]),
                           "bias": [draw(st.integers(-1, 1)) for _ in range(out)],
                           "activation": draw(st.sampled_from(["relu", "identity"]))})
            widths.append(out)
            shapes.append(None)
            continue
        g = draw(windows(cur, pool=kind == "avgpool"))
        Ho, Wo = _out(cur, g)
        if Ho < 1 or Wo < 1:
            break
        if kind == "avgpool":
            target.append({"kind": "avgpool", **g, "activation": "identity"})
            widths.append(cur[0] * Ho * Wo)
            shapes.append([cur[0], Ho, Wo])
            continue
        c = draw(st.integers(1, 2))
        target.append({"kind": "conv", **g, "weight": _matrix(draw, c, cur[0] * g[
            "kernel_shape"][0] * g["kernel_shape"][1]), "bias": [draw(st.integers(-1, 1))
                                                             for _ in range(c)],
                       "activation": draw(st.sampled_from(["relu", "identity"]))})
        widths.append(c * Ho * Wo)
        shapes.append([c, Ho, Wo])
    # the network: per segment a few layers of any kind, reading any earlier node
    layers: list[dict] = []
    dims, tensors, checkpoints = [d0], [shape], []
    for tl in target:
        kind = tl.get("kind", "dense")
        for k in range(draw(st.integers(1, 3))):
            j = len(layers) + 1
            start = checkpoints[-1] if checkpoints else 0
            src = draw(st.one_of(st.just(start if k == 0 else j - 1), st.integers(0, j - 1)))
            lkind = kind if draw(st.integers(0, 5)) else draw(st.sampled_from(
                ["dense", "conv", "avgpool"]))
            if lkind == "dense":
                n = draw(st.integers(1, 3))
                layer = {"input": src, "weight": _matrix(draw, n, dims[src]),
                         "gamma": [draw(st.integers(-2, 2)) for _ in range(n)],
                         "beta": [draw(st.integers(-2, 2)) for _ in range(n)],
                         "activation": draw(st.sampled_from(["relu", "identity"]))}
                if draw(st.integers(0, 3)) == 0:
                    frm = draw(st.integers(0, j - 1))
                    layer["skip"] = [{"from": frm, "kind": draw(st.sampled_from(
                        ["identity", "selection", "random"])),
                        "weight": _matrix(draw, n, dims[frm])}]
                layers.append(layer)
                dims.append(n)
                tensors.append(None)
                continue
            read = tensors[src] if tensors[src] and draw(st.integers(0, 3)) else \
                draw(st.sampled_from(_factorizations(dims[src])))
            if lkind == "conv" and k > 0 and tensors[src] and draw(st.booleans()):
                g = {"input_shape": list(read), "kernel_shape": [1, 1], "stride": [1, 1],
                     "padding": [0, 0], "dilation": [1, 1]}
            elif k == 0 and kind != "dense" and draw(st.integers(0, 3)):
                g = {key: copy.deepcopy(value) for key, value in tl.items()
                     if key in ("input_shape", "kernel_shape", "stride", "padding", "dilation")}
            else:
                g = draw(windows(read, pool=lkind == "avgpool"))
            Ho, Wo = _out(g["input_shape"], g)
            if Ho < 1 or Wo < 1:
                continue
            if lkind == "avgpool":
                g.pop("dilation", None)
                layers.append({"kind": "avgpool", "input": src, **g, "activation": "identity"})
                dims.append(g["input_shape"][0] * Ho * Wo)
                tensors.append([g["input_shape"][0], Ho, Wo])
                continue
            c = draw(st.integers(1, 3))
            patch = g["input_shape"][0] * g["kernel_shape"][0] * g["kernel_shape"][1]
            layers.append({"kind": "conv", "input": src, **g, "weight": _matrix(draw, c, patch),
                           "gamma": [draw(st.integers(-2, 2)) for _ in range(c)],
                           "beta": [draw(st.integers(-2, 2)) for _ in range(c)],
                           "activation": draw(st.sampled_from(["relu", "identity"]))})
            dims.append(c * Ho * Wo)
            tensors.append([c, Ho, Wo])
        if len(layers) > (checkpoints[-1] if checkpoints else 0):
            checkpoints.append(len(layers))
    if draw(st.integers(0, 5)) == 0 and layers:
        checkpoints = sorted(set(draw(st.lists(st.integers(0, len(layers) + 1), max_size=3))))
    lows = [draw(st.sampled_from([0, -1, "1/2"])) for _ in range(d0)]
    return {"format": "exactnorm.certificate", "version": 1,
            "domain": {"lower": lows, "upper": [1] * d0}, "target": {"layers": target},
            "network": {"layers": layers, "checkpoints": checkpoints}}


def _solvable(doc: dict) -> dict:
    """A variant more likely to be valid: each checkpoint's target layer made equal to what a
    one-layer segment computes (its weight, γ = 1, β = 0), so the fuzzer reaches the walk."""
    out = copy.deepcopy(doc)
    cps = out["network"]["checkpoints"]
    for tl, cp in zip(out["target"]["layers"], cps):
        layer = out["network"]["layers"][cp - 1] if 0 < cp <= len(out["network"]["layers"]) \
            else None
        if layer is None or layer.get("kind", "dense") == "avgpool" or "weight" not in tl:
            continue
        if layer.get("kind", "dense") == tl.get("kind", "dense"):
            tl["weight"] = copy.deepcopy(layer["weight"])
            n = len(layer["gamma"])
            layer["gamma"], layer["beta"] = [1] * n, [0] * n
            tl["bias"] = [0] * n
            tl["activation"] = layer["activation"]
    return out


@settings(max_examples=max(20, EXAMPLES), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(documents(), st.booleans())
def test_both_arithmetics_agree_on_what_layers_read(doc, solvable):
    from exactnorm.certificate import exact_agreement

    GENERATED["structure"] += 1
    if solvable:
        doc = _solvable(doc)
    a = checker.check_certificate(copy.deepcopy(doc))
    b = checker_flint.check_certificate(copy.deepcopy(doc))
    assert (a.ok, a.rule, a.message, a.layer, a.neuron) == \
        (b.ok, b.rule, b.message, b.layer, b.neuron), (a, b)
    if a.ok:
        assert a.facts == b.facts  # the work counted alike, the same draws and bits
        assert exact_agreement(doc, points=3) == 3
        ACCEPTED["structured document"] += 1
