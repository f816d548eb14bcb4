"""The checker's rules for residual networks (docs/certificate-format.md §10), in both arithmetics.

* Certificates the package writes for small ResNets (identity, option-A selection and projection
  shortcuts, stride 2, padding; a dense residual target) are valid under both arithmetics, and the
  claim is cross-checked: the frozen network and the target, both evaluated from the document
  alone with plain Fractions (every convolution unfolded), agree at box corners and random points.
* Hostile edits are refused by both arithmetics with the same rule and message: a residual moved
  to another checkpoint, a selection replaced by the identity, a skip's matrix changed, a residual
  on a layer that is not a checkpoint, a missing or extra residual, a block's γ changed, a target
  ``input`` out of range, a segment layer reading a node outside its segment.
* Hand-made documents the writer never produces: a convolution segment built from channel blocks
  (masked k×k kernels as 2-d draw records with a column mask, 1×1 layers with identity skips,
  the checkpoint V_F; γ solved exactly here), valid and refused after one entry changes; a layer
  reading the segment input through another window, a non-identity skip inside a convolution
  segment, ``"stability": "hull"`` on a dense layer; the hull refusing what the positions accept.
"""

from __future__ import annotations

import copy
import random
from fractions import Fraction
from typing import Any

import pytest
from flint import fmpq, fmpq_mat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactnorm.certificate import certificate_document
from exactnorm.checker.regenerate import regenerate
from exactnorm.constructions.plan import construct
from tests.checker.hostile_round3 import conv_layer, document, fixed, record, target_conv
from tests.checker.test_checker_conv import _rows, _skip_rows, _unfold, _values
from tests.helpers import both, refused
from tests.model.test_residual_model import small_resnet

# ---------------------------------------------------------------- the document, evaluated alone


Sparse = list[list[tuple[int, Fraction]]]


def _sparse(M: list[list[Fraction]]) -> Sparse:
    return [[(t, w) for t, w in enumerate(row) if w] for row in M]


def _matvec(M: Sparse, a: list[Fraction]) -> list[Fraction]:
    return [sum((w * a[t] for t, w in row), Fraction(0)) for row in M]


def _affine_of(layer: dict) -> tuple[Sparse, int]:
    """The layer's matrix on the vector it reads (a convolution or pooling unfolded), and the
    number of positions each channel's γ, β or bias repeats over."""
    kind = layer.get("kind", "dense")
    if kind == "dense":
        return _sparse(_rows(layer["weight"])), 1
    K = None if kind == "avgpool" else _rows(layer["weight"])
    M = _unfold(layer, K)
    return _sparse(M), len(M) // (len(K) if K is not None else layer["input_shape"][0])


def _route(skip: dict, nodes: list[list[Fraction]]) -> list[Fraction]:
    return _matvec(_sparse(_skip_rows(skip["weight"])), nodes[skip["from"]])


def _act(z: list[Fraction], act: str) -> list[Fraction]:
    return [max(x, Fraction(0)) for x in z] if act == "relu" else z


def target_value(doc: dict, x: list[Fraction], maps: list) -> list[Fraction]:
    nodes = [x]
    for i, (layer, (M, per)) in enumerate(zip(doc["target"]["layers"], maps), 1):
        bias = [b for b in _values(layer["bias"]) for _ in range(per)] if "bias" in layer \
            else [Fraction(0)] * len(M)
        z = [u + b for u, b in zip(_matvec(M, nodes[layer.get("input", i - 1)]), bias)]
        if "skip" in layer:
            z = [u + s for u, s in zip(z, _route(layer["skip"], nodes))]
        nodes.append(_act(z, layer["activation"]))
    return nodes[-1]


def network_value(doc: dict, x: list[Fraction], maps: list) -> list[Fraction]:
    nodes = [x]
    for layer, (M, per) in zip(doc["network"]["layers"], maps):
        if "gamma" in layer:
            g = [v for v in _values(layer["gamma"]) for _ in range(per)]
            b = [v for v in _values(layer["beta"]) for _ in range(per)]
        else:
            g, b = [Fraction(1)] * len(M), [Fraction(0)] * len(M)
        z = [gi * u + bi for gi, u, bi in zip(g, _matvec(M, nodes[layer["input"]]), b)]
        if "residual" in layer:
            z = [u + s for u, s in zip(z, _route(layer["residual"], nodes))]
        h = _act(z, layer["activation"])
        for s in layer.get("skip", []):
            h = [u + v for u, v in zip(h, _route(s, nodes))]
        nodes.append(h)
    return nodes[-1]


def points(doc: dict, n: int, seed: int) -> list[list[Fraction]]:
    lo, hi = _values(doc["domain"]["lower"]), _values(doc["domain"]["upper"])
    rng = random.Random(seed)
    out = [lo, hi]
    for _ in range(n):
        out.append([a + (b - a) * Fraction(rng.randint(0, 64), 64) for a, b in zip(lo, hi)])
    return out


def assert_claim(doc: dict, n: int = 2) -> None:
    """What a valid verdict claims, evaluated from the document alone: f = g at the points."""
    tmaps = [_affine_of(L) for L in doc["target"]["layers"]]
    fmaps = [_affine_of(L) for L in doc["network"]["layers"]]
    for x in points(doc, n, 7):
        assert network_value(doc, x, fmaps) == target_value(doc, x, tmaps)


# ---------------------------------------------------------------- the writer's certificates


@pytest.fixture(scope="module")
def resnet_doc() -> dict:
    return certificate_document(construct(small_resnet(), seed=0))


def dense_residual_doc() -> dict:
    """A dense target whose layers 2 and 3 read earlier nodes: layer 2 adds an identity skip
    from x, layer 3 reads x and adds a square selection of node 1 (a zero row included)."""
    from exactnorm.model.layers import TargetLayer
    from exactnorm.model.network import TargetNetwork, Wiring
    from exactnorm.model.routes import Route, Skip

    rng = random.Random(3)

    def layer(rows: int, cols: int, act: str) -> TargetLayer:
        W = fmpq_mat([[fmpq(rng.randint(-6, 6), 4) for _ in range(cols)] for _ in range(rows)])
        return TargetLayer(W, tuple(fmpq(rng.randint(-4, 4), 2) for _ in range(rows)), act)

    g = TargetNetwork((layer(3, 3, "relu"), layer(3, 3, "relu"), layer(3, 3, "relu"),
                       layer(2, 3, "identity")),
                      (fmpq(-1),) * 3, (fmpq(2),) * 3,
                      wiring=(Wiring(0), Wiring(1, Skip(0, Route.identity(3), "identity")),
                              Wiring(0, Skip(1, Route((2, None, 0), 3), "selection")),
                              Wiring(3)))
    return certificate_document(construct(g, seed=1))


def test_the_writers_resnet_is_valid_in_both_arithmetics(resnet_doc):
    v = both(resnet_doc)
    assert v.ok, v
    assert_claim(resnet_doc)


def test_a_dense_residual_certificate_is_valid_in_both_arithmetics():
    doc = dense_residual_doc()
    v = both(doc)
    assert v.ok, v
    assert_claim(doc, 6)


def test_a_residual_certificate_with_the_target_seed_is_valid():
    from exactnorm.certificate.write import seed_of_target

    g = small_resnet(1)
    doc = certificate_document(construct(g, seed=seed_of_target(g)))
    doc["seed_rule"] = "target.v2"
    v = both(doc)
    assert v.ok, v


# ---------------------------------------------------------------- hostile edits


def _layer(doc: dict, j: int) -> dict:
    return doc["network"]["layers"][j - 1]


def _with_residual(doc: dict) -> list[int]:
    return [j for j, L in enumerate(doc["network"]["layers"], 1) if "residual" in L]


def _edit(doc: dict, how: Any) -> dict:
    out = copy.deepcopy(doc)
    how(out)
    return out


def test_residual_moved_to_another_checkpoint(resnet_doc):
    carriers = _with_residual(resnet_doc)  # checkpoints 6, 10 and 16 of the small ResNet
    last = carriers[-1]
    # the same residual read from another earlier checkpoint of the same width
    assert _layer(resnet_doc, last)["residual"]["from"] == 12
    doc = _edit(resnet_doc, lambda d: _layer(d, last)["residual"].__setitem__("from", 14))
    refused(doc, "skip", f"checkpoint layer {last}: residual from node 14, target layer 8's skip "
                         f"is from its node 6, whose checkpoint is node 12")
    # the residual moved from its checkpoint (6) to the one before (4, of the same width)
    first = carriers[0]
    doc = _edit(resnet_doc, lambda d: _layer(d, first - 2).__setitem__(
        "residual", _layer(d, first).pop("residual")))
    refused(doc, "skip", f"checkpoint layer {first - 2} carries a residual, target layer 2 has "
                         f"no skip")


def test_selection_replaced_by_the_identity():
    doc = dense_residual_doc()
    carrier = _with_residual(doc)[-1]
    assert _layer(doc, carrier)["residual"]["kind"] == "selection"
    edited = _edit(doc, lambda d: _layer(d, carrier).__setitem__(
        "residual", {"from": _layer(d, carrier)["residual"]["from"], "kind": "identity",
                     "weight": {"identity": 3}}))
    refused(edited, "skip", "residual of kind identity, target layer 3's skip has kind selection")
    # the target's selection replaced by the identity, the residual kept
    edited = _edit(doc, lambda d: d["target"]["layers"][2].__setitem__(
        "skip", {"from": 1, "kind": "identity", "weight": {"identity": 3}}))
    refused(edited, "skip", "residual of kind selection, target layer 3's skip has kind identity")
    # the kind word alone: the form no longer matches it
    edited = _edit(doc, lambda d: _layer(d, carrier)["residual"].__setitem__("kind", "identity"))
    refused(edited, "skip", "compact skips are")


def test_a_skip_matrix_changed(resnet_doc):
    carrier = next(j for j in _with_residual(resnet_doc)
                   if _layer(resnet_doc, j)["residual"]["kind"] == "selection")

    def residual_entry(d: dict) -> None:
        _layer(d, carrier)["residual"]["weight"]["selection"][1] = 3

    refused(_edit(resnet_doc, residual_entry), "skip", "row 1 picks column 3, the target's skip "
                                                       "column 2")

    def target_entry(d: dict) -> None:
        skip = next(L["skip"] for L in d["target"]["layers"] if L.get("skip", {}).get("kind")
                    == "selection")
        skip["weight"]["selection"][0] = None

    refused(_edit(resnet_doc, target_entry), "skip", "row 0 picks column 0, the target's skip "
                                                     "column null")


def test_residual_on_a_layer_that_is_not_a_checkpoint(resnet_doc):
    carrier = _with_residual(resnet_doc)[0]  # layer 5 before it: 36 channels on 6x6
    doc = _edit(resnet_doc, lambda d: _layer(d, carrier - 1).__setitem__(
        "residual", {"from": 2, "kind": "selection",
                     "weight": {"selection": [0] * 1296, "columns": 72}}))
    refused(doc, "skip", f"network layer {carrier - 1} carries a residual, but it is not a "
                         f"checkpoint")


def test_missing_and_extra_residuals(resnet_doc):
    carrier = _with_residual(resnet_doc)[0]
    refused(_edit(resnet_doc, lambda d: _layer(d, carrier).pop("residual")), "skip",
            "carries no residual")
    cps = resnet_doc["network"]["checkpoints"]
    plain = cps[0]  # the stem's checkpoint: its target layer has no skip

    def extra(d: dict) -> None:
        _layer(d, plain)["residual"] = {"from": 0, "kind": "selection",
                                        "weight": {"selection": [None] * 72, "columns": 36}}

    refused(_edit(resnet_doc, extra), "skip", f"checkpoint layer {plain} carries a residual, "
                                              f"target layer 1 has no skip")
    # a residual the target's skip does not ask for is refused even when it adds nothing


def _bump_gamma(layer: dict, k: int) -> None:
    g = layer["gamma"]
    g["num"][k] = str(int(g["num"][k]) + int(g["den"]))


@pytest.mark.parametrize("where", ["checkpoint", "inner"])
def test_a_blocks_gamma_changed(resnet_doc, where):
    carrier = _with_residual(resnet_doc)[0]
    j = carrier if where == "checkpoint" else carrier - 1
    v = both(_edit(resnet_doc, lambda d: _bump_gamma(_layer(d, j), 0)))
    assert not v.ok and v.rule in {"identity", "stability"} and v.layer == j, v


def test_target_input_out_of_range(resnet_doc):
    t = resnet_doc["target"]["layers"]
    k = next(i for i, L in enumerate(t, 1) if "input" in L)
    refused(_edit(resnet_doc, lambda d: d["target"]["layers"][k - 1].__setitem__("input", k)),
            "format", f"target layer {k} reads node {k}, not an earlier node")
    refused(_edit(resnet_doc, lambda d: d["target"]["layers"][k - 1].__setitem__("input", -1)),
            "format")
    # an earlier node of another width
    refused(_edit(resnet_doc, lambda d: d["target"]["layers"][k - 1].__setitem__("input", 1)),
            "shape")
    # a skip from a later node, or of another width
    refused(_edit(resnet_doc, lambda d: d["target"]["layers"][2]["skip"].__setitem__("from", 3)),
            "format", "target layer 3 skip reads node 3")
    refused(_edit(resnet_doc, lambda d: d["target"]["layers"][2]["skip"].__setitem__("from", 0)),
            "shape")


def test_a_segment_layer_reading_outside_its_segment(resnet_doc):
    t = resnet_doc["target"]["layers"]
    cps = resnet_doc["network"]["checkpoints"]
    k = next(i for i, L in enumerate(t, 1) if "input" in L)  # reads an earlier node than k - 1
    first = cps[k - 2] + 1  # the first layer of segment k
    seg_in = cps[t[k - 1]["input"] - 1]
    assert _layer(resnet_doc, first)["input"] == seg_in != cps[k - 2]
    # a checkpoint of the same width that is not its input: refused
    refused(_edit(resnet_doc, lambda d: _layer(d, first).__setitem__("input", cps[3])),
            "segment", f"network layer {first} reads node {cps[3]}, outside its segment "
                       f"(its input node {seg_in})")
    # the checkpoint just before the segment is not its input either (a dense target whose
    # layer 3 reads x: its segment reads node 0, not checkpoint c_2 of the same width)
    doc = dense_residual_doc()
    c2 = doc["network"]["checkpoints"][1]
    assert _layer(doc, c2 + 1)["input"] == 0
    refused(_edit(doc, lambda d: _layer(d, c2 + 1).__setitem__("input", c2)), "segment",
            f"network layer {c2 + 1} reads node {c2}, outside its segment (its input node 0)")


def test_residual_documents_need_version_3():
    doc = dense_residual_doc()
    doc["version"] = 2
    for key in ("seed_rule", "redraws"):
        doc.pop(key, None)
    refused(doc, "format", "needs version 3 (this document is version 2)")


# ---------------------------------------------------------------- channel blocks, by hand


def _solve(K: list[list[Fraction]], y: list[Fraction]) -> list[Fraction] | None:
    """K·v = y for a square K (Gauss–Jordan over Fractions); None when K is singular."""
    n = len(K)
    A = [row[:] + [y[r]] for r, row in enumerate(K)]
    for c in range(n):
        p = next((r for r in range(c, n) if A[r][c]), None)
        if p is None:
            return None
        A[c], A[p] = A[p], A[c]
        A[c] = [x / A[c][c] for x in A[c]]
        for r in range(n):
            if r != c and A[r][c]:
                A[r] = [x - A[r][c] * z for x, z in zip(A[r], A[c])]
    return [A[r][n] for r in range(n)]


def _vec(xs: list[Fraction]) -> list[str]:
    return [str(x) for x in xs]


def block_doc(seed: int = 0) -> dict:
    """One 2×2 target convolution on a 2×3×3 input, realized by two channel blocks (docs §10):
    block t is a masked 2×2 conv on input channel t (a 4×8 draw keeping columns 4t … 4t+3), then a
    1×1 conv to one channel (block 2 adds block 1's output by an identity skip), and the
    checkpoint V_F (1×1). γ of each masked conv solves its 4×4 Khatri–Rao system exactly; every
    shift makes its ReLU active on the box [0, 1]^18."""
    W = [Fraction(k - 3, 2) for k in range(8)]  # the target kernel (1 × 8), bias 1/3
    b = Fraction(1, 3)
    draws = {k: regenerate(record([1, k, 0, 0], shape, seed=seed, **extra))
             for k, shape, extra in [(1, [4, 8], {"mask": {"columns": [0, 1, 2, 3]}}),
                                     (2, [1, 4], {}),
                                     (3, [4, 8], {"mask": {"columns": [4, 5, 6, 7]}}),
                                     (4, [1, 4], {}), (5, [1, 1], {})]}
    vf = Fraction(draws[5][0][0])
    layers, consts = [], []
    for t in range(2):
        Vin = [[Fraction(x) for x in row] for row in draws[2 * t + 1]]
        Vout = [Fraction(x) for x in draws[2 * t + 2][0]]
        cols = range(4 * t, 4 * t + 4)
        K = [[Vout[k] * Vin[k][c] for k in range(4)] for c in cols]
        gamma = _solve(K, [W[c] / vf for c in cols])
        if gamma is None:
            return block_doc(seed + 1)
        beta = [-sum(min(Fraction(0), gamma[k] * x) for x in Vin[k]) for k in range(4)]
        Wt = [sum(Vout[k] * gamma[k] * Vin[k][c] for k in range(4)) for c in range(8)]
        c_t = -sum(min(Fraction(0), x) for x in Wt)  # the block's output: Wt·patch + c_t
        beta2 = c_t - sum(v * bb for v, bb in zip(Vout, beta))
        consts.append(c_t)
        src = 0 if t == 0 else 2
        layers.append(conv_layer(0, [2, 3, 3], [2, 2],
                                 {"random": record([1, 2 * t + 1, 0, 0], [4, 8], seed=seed,
                                                   mask={"columns": list(cols)})},
                                 _vec(gamma), _vec(beta), "relu"))
        layers.append(conv_layer(2 * t + 1, [4, 2, 2], [1, 1],
                                 {"random": record([1, 2 * t + 2, 0, 0], [1, 4], seed=seed)},
                                 ["1"], _vec([beta2]), "relu"))
        if t:
            layers[-1]["skip"] = [{"from": src, "kind": "identity", "weight": {"identity": 4}}]
    layers.append(conv_layer(4, [1, 2, 2], [1, 1],
                             {"random": record([1, 5, 0, 0], [1, 1], seed=seed)},
                             ["1"], _vec([b - vf * sum(consts)]), "identity"))
    return document([0] * 18, [1] * 18, [target_conv([2, 3, 3], [2, 2], [_vec(W)], [str(b)])],
                    layers, [5], version=3)


def test_a_hand_made_channel_block_segment_is_valid():
    doc = block_doc()
    v = both(doc)
    assert v.ok, v
    assert_claim(doc, 4)


def test_the_hull_is_accepted_where_it_is_stable():
    doc = block_doc()
    for layer in doc["network"]["layers"][:4]:
        layer["stability"] = "hull"
    v = both(doc)
    assert v.ok, v


@pytest.mark.parametrize("j, key", [(1, "gamma"), (2, "beta"), (3, "gamma"), (5, "beta")])
def test_a_hand_made_block_segment_with_one_entry_changed_is_refused(j, key):
    doc = block_doc()
    layer = _layer(doc, j)
    layer[key][0] = str(Fraction(layer[key][0]) + Fraction(1, 7))
    v = both(doc)
    assert not v.ok and v.rule in {"identity", "stability"}, v


def test_a_block_reading_the_segment_input_through_another_window_is_refused():
    doc = block_doc()
    layer = _layer(doc, 3)
    layer["stride"], layer["padding"] = [2, 2], [1, 1]  # the same 2x2 output grid
    refused(doc, "segment", "network layer 3 reads node 0, the input of the convolution segment "
                            "of target layer 1, with kernel 2x2, stride 2x2, padding 1x1")
    doc = block_doc()
    _layer(doc, 1)["stride"], _layer(doc, 1)["padding"] = [2, 2], [1, 1]  # rule identity
    v = both(doc)
    assert not v.ok and v.rule in {"identity", "segment"}, v


def test_a_skip_of_another_kind_inside_a_convolution_segment_is_refused():
    doc = block_doc()
    _layer(doc, 4)["skip"] = [{"from": 2, "kind": "selection",
                               "weight": {"selection": [0, 1, 2, 3], "columns": 4}}]
    refused(doc, "skip", "a conv layer's skip is")
    doc = block_doc()
    _layer(doc, 4)["skip"][0]["from"] = 0  # the segment input holds pixels
    refused(doc, "shape")  # 18 pixel values, not the 4 of the layer


@pytest.mark.parametrize("first", [True, False])
def test_a_skip_from_the_pixels_of_a_convolution_segment_is_refused(first):
    """An identity of the widths fits (2 channels on 3x3, a 3x3 window with padding 1 keeps the
    grid) but the segment input holds pixels: the walk would add patch coordinates instead."""
    K = [[0] * 9 + [0] * 4 + [1] + [0] * 4, [0] * 4 + [1] + [0] * 13]  # the centre pixels
    layers = [conv_layer(0, [2, 3, 3], [3, 3], K, [1, 1], [0, 0], "relu", padding=[1, 1]),
              conv_layer(1, [2, 3, 3], [1, 1], [[1, 0], [0, 1]], [1, 1], [0, 0], "relu"),
              conv_layer(2, [2, 3, 3], [1, 1], [[1, 0], [0, 1]], [1, 1], [0, 0], "identity")]
    for layer in layers:
        layer["source"] = fixed()
    layers[0 if first else 1]["skip"] = [{"from": 0, "kind": "identity",
                                          "weight": {"identity": 18}}]
    doc = document([0] * 18, [1] * 18,
                   [target_conv([2, 3, 3], [3, 3], K, [0, 0], padding=[1, 1])], layers, [3],
                   version=3)
    refused(doc, "segment", f"network layer {1 if first else 2}: a skip inside the convolution "
                            f"segment of target layer 1 reads node 0, the segment input")
    del layers[0 if first else 1]["skip"]
    assert both(doc).ok
    doc = block_doc()
    _layer(doc, 5)["skip"] = [{"from": 4, "kind": "identity", "weight": {"identity": 4}}]
    refused(doc, "skip", "checkpoint layer 5 has a skip connection")


def test_hull_is_refused_outside_convolution_layers():
    doc = dense_residual_doc()
    _layer(doc, 1)["stability"] = "hull"
    refused(doc, "format", 'network layer 1: unknown key "stability"')
    doc = block_doc()
    _layer(doc, 1)["stability"] = "everywhere"
    refused(doc, "format", "stability \"everywhere\"")


def hull_doc(stability: str) -> dict:
    """A 1x2 kernel on a 1x1x3 input with x_0 in [1, 2], x_1 in [0, 1], x_2 = 0: the channel
    10·u − v is at least 9 at position 0 and at least 0 at position 1, but the hull of the patch
    boxes ([0, 2] × [0, 1]) lets it reach −1."""
    layers = [conv_layer(0, [1, 1, 3], [1, 2], [[10, -1]], [1], [0], "relu"),
              conv_layer(1, [1, 1, 2], [1, 1], [[1]], [1], [0], "identity")]
    layers[0]["weight"], layers[1]["weight"] = [[10, -1]], [[1]]
    layers[0]["source"] = layers[1]["source"] = fixed()
    layers[0]["stability"] = stability
    return document([1, 0, 0], [2, 1, 0], [target_conv([1, 1, 3], [1, 2], [[10, -1]], [0])],
                    layers, [2], version=3)


def test_the_hull_is_looser_than_the_positions():
    assert both(hull_doc("positions")).ok
    refused(hull_doc("hull"), "stability", "network layer 1 channel 0 is not stable on the box: "
                                           "min -1 < 0 < max 20 (on the hull of the patch boxes")


def test_the_target_seed_of_a_global_pooling_target():
    """``certify`` derives the seed from the target by default; a global pooling layer has no
    weight, and its input shape enters the seed's text (it crashed the derivation before)."""
    from exactnorm import api
    from exactnorm.model.layers import TargetLayer
    from exactnorm.model.network import TargetNetwork
    from exactnorm.model.operators import Conv, ConvGeometry, GlobalAvgPool

    conv = TargetLayer(Conv(ConvGeometry((1, 4, 4), (2, 2)),
                            fmpq_mat([[1, -1, 2, 0], [0, 1, 1, -1]])), (fmpq(1), fmpq(-1)), "relu")
    head = TargetLayer(fmpq_mat([[1, 2], [-1, fmpq(1, 2)]]), (fmpq(0), fmpq(1)), "identity")
    seeds = set()
    for shape in [(2, 3, 3), (2, 9, 1)]:  # the same widths, two different global poolings
        t = TargetNetwork((conv, TargetLayer(GlobalAvgPool(shape)), head), (fmpq(0),) * 16,
                          (fmpq(1),) * 16)
        doc = api.certificate_document(api.certify(t, jobs=1))
        assert doc["seed_rule"] == "target.v2"
        v = both(doc)
        assert v.ok and v.facts["seed_rule"] == "target.v2", v
        seeds.add(v.facts["seed"])
        from exactnorm.checker.document import document_seed
        from tests.checker.test_format_details import independent_seed

        assert v.facts["seed"] == document_seed(doc)
        assert document_seed(doc, rule="target") == independent_seed(doc)
    assert len(seeds) == 2


def test_the_target_seed_depends_on_the_topology(resnet_doc):
    from exactnorm.checker.document import document_seed
    from tests.checker.test_format_details import independent_seed
    from tests.checker.test_seed_canonical import independent_seed_v2

    doc = dense_residual_doc()
    for d in (doc, resnet_doc):  # the lines of docs/generator.md §8, written independently
        assert document_seed(d, rule="target") == independent_seed(d)
    assert document_seed(doc) == independent_seed_v2(doc)
    seeds = {document_seed(doc)}
    moved = copy.deepcopy(doc)
    moved["target"]["layers"][2]["skip"]["weight"]["selection"][1] = 1
    seeds.add(document_seed(moved))
    chain = copy.deepcopy(doc)
    for L in chain["target"]["layers"]:
        L.pop("input", None)
        L.pop("skip", None)
    seeds.add(document_seed(chain))
    assert len(seeds) == 3


def test_the_checker_folder_copied_alone_checks_a_residual_network(resnet_doc, tmp_path):
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "exactnorm" / "checker", tmp_path / "checker")
    bad = copy.deepcopy(resnet_doc)
    _layer(bad, _with_residual(bad)[0])["residual"]["from"] = 0
    for name, doc, code, head in (("ok.json", resnet_doc, 0, "VALID"),
                                  ("bad.json", bad, 1, "INVALID [")):
        (tmp_path / name).write_text(json.dumps(doc))
        res = subprocess.run([sys.executable, "-I", "-c", "import runpy, sys; sys.path.insert"
                              "(0, '.'); sys.argv[1:] = [sys.argv[1]]; runpy.run_module("
                              "'checker', run_name='__main__')", name], cwd=tmp_path,
                             capture_output=True, text=True, check=False)
        assert res.returncode == code and head in res.stdout, (res.stdout, res.stderr)


def test_a_huge_identity_skip_costs_nothing_to_read():
    """``{"identity": n}`` names ``n`` rows with one number: a 1x1 convolution padded to a
    4095 x 4095 grid of 64 channels has a width of about 10^9, and a target skip, a residual and
    a seed over it must be read without building ``n`` of anything (then rule ``limit``)."""
    pad, c = 2047, 64
    side = 2 * pad + 1
    n = c * side * side
    t1 = target_conv([1, 1, 1], [1, 1], [[1]] * c, [0] * c, "relu", padding=[pad, pad])
    t2 = target_conv([c, side, side], [1, 1], [[1] * c] * c, [0] * c, "relu")
    t2["skip"] = {"from": 1, "kind": "identity", "weight": {"identity": n}}
    layers = [conv_layer(0, [1, 1, 1], [1, 1], [[1]] * c, [1] * c, [0] * c, "relu",
                         padding=[pad, pad]),
              conv_layer(1, [c, side, side], [1, 1], [[1] * c] * c, [1] * c, [0] * c, "relu")]
    for layer in layers:
        layer["source"] = fixed()
    layers[1]["residual"] = {"from": 1, "kind": "identity", "weight": {"identity": n}}
    doc = document([0], [1], [t1, t2], layers, [1, 2], version=3)
    doc["seed_rule"] = "target.v2"
    refused(doc, "limit")


# ---------------------------------------------------------------- structured fuzzing


@st.composite
def residual_documents(draw: Any) -> dict:
    """A small dense residual target and the frozen network that realizes it one checkpoint per
    target layer (its weight, γ = 1, β = its bias, the target's skip as the residual), sometimes
    after an identity layer inside the segment; then, often, one hostile edit of the topology
    (an input, a residual's source, kind or picks, a residual dropped or added, a weight entry)."""
    d0 = draw(st.integers(1, 3))
    widths, target = [d0], []
    for i in range(1, draw(st.integers(1, 4)) + 1):
        p = draw(st.one_of(st.just(i - 1), st.integers(0, i - 1)))
        out = draw(st.integers(1, 3))
        layer: dict[str, Any] = {
            "weight": [[draw(st.integers(-2, 2)) for _ in range(widths[p])] for _ in range(out)],
            "bias": [draw(st.integers(-2, 2)) for _ in range(out)],
            "activation": draw(st.sampled_from(["relu", "identity"]))}
        if p != i - 1:
            layer["input"] = p
        if draw(st.booleans()):
            q = draw(st.integers(0, i - 1))
            if widths[q] == out and draw(st.booleans()):
                layer["skip"] = {"from": q, "kind": "identity", "weight": {"identity": out}}
            else:
                picks = [draw(st.one_of(st.none(), st.integers(0, widths[q] - 1)))
                         for _ in range(out)]
                layer["skip"] = {"from": q, "kind": "selection",
                                 "weight": {"selection": picks, "columns": widths[q]}}
        target.append(layer)
        widths.append(out)
    layers: list[dict] = []
    cps: list[int] = []
    for i, tl in enumerate(target, 1):
        p = tl.get("input", i - 1)
        src = 0 if p == 0 else cps[p - 1]
        if draw(st.integers(0, 3)) == 0:  # an identity layer inside the segment
            n = widths[p]
            layers.append({"input": src, "weight": [[int(r == c) for c in range(n)]
                                                    for r in range(n)],
                           "source": fixed(), "gamma": [1] * n, "beta": [0] * n,
                           "activation": "identity"})
            src = len(layers)
        out = widths[i]
        layer = {"input": src, "weight": copy.deepcopy(tl["weight"]), "source": fixed(),
                 "gamma": [1] * out, "beta": list(tl["bias"]), "activation": tl["activation"]}
        if "skip" in tl:
            q = tl["skip"]["from"]
            layer["residual"] = dict(copy.deepcopy(tl["skip"]), **{"from": 0 if q == 0
                                                                   else cps[q - 1]})
        layers.append(layer)
        cps.append(len(layers))
    doc = document([draw(st.sampled_from([-1, 0])) for _ in range(d0)], [1] * d0, target,
                   layers, cps, version=3)
    edit = draw(st.integers(0, 7))
    j = draw(st.integers(1, len(layers)))
    L = doc["network"]["layers"][j - 1]
    if edit == 1:
        L["input"] = draw(st.integers(0, j - 1))
    elif edit == 2 and "residual" in L:
        L["residual"]["from"] = draw(st.integers(0, j - 1))
    elif edit == 3 and "residual" in L:
        del L["residual"]
    elif edit == 4 and "residual" not in L:
        frm = draw(st.integers(0, j - 1))
        L["residual"] = {"from": frm, "kind": "selection", "weight": {
            "selection": [draw(st.one_of(st.none(), st.just(0))) for _ in L["gamma"]],
            "columns": len(layers[frm - 1]["gamma"]) if frm else d0}}
    elif edit == 5 and "residual" in L and L["residual"]["kind"] == "selection":
        picks = L["residual"]["weight"]["selection"]
        r = draw(st.integers(0, len(picks) - 1))
        picks[r] = None if picks[r] is not None else 0
    elif edit == 6:
        L["weight"][0][0] += 1
    elif edit == 7 and "skip" in doc["target"]["layers"][0]:
        doc["target"]["layers"][0]["skip"]["from"] = 0
    return doc


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(residual_documents())
def test_both_arithmetics_agree_on_residual_documents(doc):
    """Same verdict, rule and message from both arithmetics, never an exception; an accepted
    document computes its target exactly at the corners and random points of its box (the
    evaluator above, written from the document alone)."""
    v = both(doc)
    assert v.rule != "internal", v
    if v.ok:
        assert_claim(doc, 3)
