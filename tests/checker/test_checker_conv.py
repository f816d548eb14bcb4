"""The kernel's convolution and pooling rules (docs/certificate-format.md §8), in both
arithmetics, against a dense unfolded reference built from the document alone.

Every convolutional certificate is also written out as the equivalent *dense* certificate (each
convolution unfolded into its matrix on the C·H·W input, each per-channel γ and β repeated over
the positions, each pooling map written as its matrix) with code of this file only; the kernel's
dense rules, independent of its convolution rules, must reach the same verdict on it. Hostile
edits (a kernel entry, stride, padding, dilation, one channel's γ or β, a pooling window, a
non-pointwise inner layer) must be refused by both arithmetics with the same rule and message.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactnorm.certificate import certificate_document
from exactnorm.checker.regenerate import regenerate
from exactnorm.constructions.plan import construct
from exactnorm.exact.rationals import parse_number
from exactnorm.strategies import conv_targets
from tests.helpers import both


def _values(v: Any) -> list[Fraction]:
    if isinstance(v, dict):
        return [Fraction(int(n), int(v["den"])) for n in v["num"]]
    return [Fraction(parse_number(x)) for x in v]


def _rows(m: Any) -> list[list[Fraction]]:
    if isinstance(m, dict) and "random" in m:
        return [list(map(Fraction, r)) for r in regenerate(m["random"])]
    if isinstance(m, dict):
        return [[Fraction(int(x), int(m["den"])) for x in row] for row in m["num"]]
    return [[Fraction(parse_number(x)) for x in row] for row in m]


def _unfold(layer: dict, K: list[list[Fraction]]) -> list[list[Fraction]]:
    """The dense matrix of a convolution (or of an average pooling when K is None) on the C order
    vector of its input: row (o, y, x), column (c, row, col); with ``"group"`` G, output ``o``
    reads the C/G channels of its group, its row of K over their patch coordinates."""
    C, H, W = layer["input_shape"]
    G = layer.get("group", 1)
    kh, kw = layer["kernel_shape"]
    sh, sw = layer["stride"]
    ph, pw = layer["padding"]
    dh, dw = layer.get("dilation", [1, 1])
    Ho = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    Wo = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = []
    channels = len(K) if K is not None else C
    for o in range(channels):
        first = o // (channels // G) * (C // G)  # the group's first input channel
        for y in range(Ho):
            for x in range(Wo):
                row = [Fraction(0)] * (C * H * W)
                for c in range(first, first + C // G) if K is not None else [o]:
                    for u in range(kh):
                        for v in range(kw):
                            r, s = y * sh - ph + u * dh, x * sw - pw + v * dw
                            if 0 <= r < H and 0 <= s < W:
                                w = Fraction(1, kh * kw) if K is None else \
                                    K[o][((c - first) * kh + u) * kw + v]
                                row[(c * H + r) * W + s] += w
                out.append(row)
    return out


def _text(rows: list[list[Fraction]]) -> list[list[str]]:
    return [[str(x) for x in row] for row in rows]


def dense_equivalent(doc: dict) -> dict:
    """The version-1 dense certificate that a convolutional certificate stands for."""
    tl, nl = [], []
    for layer in doc["target"]["layers"]:
        kind = layer.get("kind", "dense")
        if kind == "dense":
            tl.append(layer)
            continue
        K = None if kind == "avgpool" else _rows(layer["weight"])
        M = _unfold(layer, K)
        per = len(M) // (len(K) if K is not None else layer["input_shape"][0])
        bias = ["0"] * len(M) if K is None else \
            [str(b) for b in _values(layer["bias"]) for _ in range(per)]
        tl.append({"weight": _text(M), "bias": bias, "activation": layer["activation"]})
    for layer in doc["network"]["layers"]:
        kind = layer.get("kind", "dense")
        if kind == "dense":
            out = {k: v for k, v in layer.items() if k != "source"}
            out["weight"] = _text(_rows(layer["weight"]))
            out["gamma"] = [str(x) for x in _values(layer["gamma"])]
            out["beta"] = [str(x) for x in _values(layer["beta"])]
            if "skip" in layer:
                out["skip"] = [{"from": s["from"], "kind": s["kind"],
                                "weight": _text(_skip_rows(s["weight"]))} for s in layer["skip"]]
            nl.append(out)
            continue
        K = None if kind == "avgpool" else _rows(layer["weight"])
        M = _unfold(layer, K)
        n = len(M)
        if K is None:
            gamma, beta = ["1"] * n, ["0"] * n
        else:
            per = n // len(K)
            gamma = [str(g) for g in _values(layer["gamma"]) for _ in range(per)]
            beta = [str(b) for b in _values(layer["beta"]) for _ in range(per)]
        nl.append({"input": layer["input"], "weight": _text(M), "gamma": gamma, "beta": beta,
                   "activation": layer["activation"]})
    return {"format": "exactnorm.certificate", "version": 1, "domain": doc["domain"],
            "target": {"layers": tl},
            "network": {"layers": nl, "checkpoints": doc["network"]["checkpoints"]}}


def _skip_rows(w: Any) -> list[list[Fraction]]:
    if isinstance(w, dict) and "identity" in w:
        n = w["identity"]
        return [[Fraction(int(r == c)) for c in range(n)] for r in range(n)]
    if isinstance(w, dict) and "selection" in w:
        return [[Fraction(int(t == c)) for c in range(w["columns"])] for t in w["selection"]]
    return _rows(w)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_targets(), st.integers(0, 3))
def test_convolutional_certificates_are_valid_as_their_dense_unfolding(t, seed):
    doc = certificate_document(construct(t, seed=seed))
    v = both(doc)
    assert v.ok, v
    dense = both(dense_equivalent(doc))
    assert dense.ok, dense


def _lenet_like() -> dict:
    from tests.model.test_conv import lenet_like

    return certificate_document(construct(lenet_like(), seed=0))


@pytest.fixture(scope="module")
def cnn_doc() -> dict:
    return _lenet_like()


def _conv_layers(doc: dict) -> list[dict]:
    return [L for L in doc["network"]["layers"] if L.get("kind") == "conv"]


def _plus_one(layer: dict, key: str) -> None:
    layer[key] = [x + 1 for x in layer[key]]


def _bump(v: dict, k: int, by: int = 1) -> None:
    v["num"][k] = str(int(v["num"][k]) + by * int(v["den"]))


def _target_plus_one(layer: dict, key: str) -> None:
    """Entry 0 (of row 0) of a target vector or matrix, plain or compact, increased by 1."""
    value = layer[key]
    if isinstance(value, dict):
        nums = value["num"][0] if isinstance(value["num"][0], list) else value["num"]
        nums[0] = str(int(nums[0]) + int(value["den"]))
        return
    row = value[0] if isinstance(value[0], list) else value
    row[0] = str(Fraction(parse_number(row[0])) + 1)


EDITS = {
    "target kernel entry": lambda d: _target_plus_one(d["target"]["layers"][0], "weight"),
    "target bias": lambda d: _target_plus_one(d["target"]["layers"][0], "bias"),
    "stride": lambda d: _plus_one(_conv_layers(d)[0], "stride"),
    "padding": lambda d: _plus_one(_conv_layers(d)[0], "padding"),
    "dilation": lambda d: _plus_one(_conv_layers(d)[0], "dilation"),
    "one channel's gamma": lambda d: _bump(_conv_layers(d)[0]["gamma"], 3),
    "one channel's beta": lambda d: _bump(_conv_layers(d)[1]["beta"], 1),
    "first beta too small": lambda d: _bump(_conv_layers(d)[0]["beta"], 0, -1000),
    "pooling window": lambda d: next(L for L in d["network"]["layers"]
                                     if L.get("kind") == "avgpool").__setitem__("stride", [1, 1]),
    "pointwise layer with a 3x3 kernel": lambda d: _conv_layers(d)[1].__setitem__(
        "kernel_shape", [3, 3]),
    "conv layer with a skip": lambda d: _conv_layers(d)[1].__setitem__(
        "skip", [{"from": 0, "kind": "random", "weight": [[1]]}]),
    "kernel record of another shape": lambda d: _conv_layers(d)[0]["weight"]["random"]
    .__setitem__("shape", [1, 1, 1, 1]),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_hostile_edits_of_a_convolutional_certificate_are_refused(cnn_doc, name):
    assert both(cnn_doc).ok
    doc = copy.deepcopy(cnn_doc)
    EDITS[name](doc)
    v = both(doc)
    assert not v.ok, (name, v)
    assert v.rule in {"identity", "stability", "shape", "segment", "skip", "provenance",
                      "width"}, v


def test_edits_of_the_dense_unfolding_are_refused_too(cnn_doc):
    """The reference is not vacuous: the same γ edit on the unfolded certificate fails."""
    doc = copy.deepcopy(cnn_doc)
    _bump(_conv_layers(doc)[0]["gamma"], 3)
    assert not both(dense_equivalent(doc)).ok


def test_stability_names_the_channel_and_positions(cnn_doc):
    doc = copy.deepcopy(cnn_doc)
    _bump(_conv_layers(doc)[0]["beta"], 0, -1)  # the integer shift has slack below 1
    v = both(doc)
    assert v.rule == "stability" and "channel 0" in v.message and "position" in v.message, v
