"""The channel-block trade-off for convolutions (exactnorm.constructions.convblocks).

Every frozen network built here is compared with its target exactly, by two independent paths:
the model's exact evaluation, and a dense unfolding of every frozen layer written from the
definitions with plain ``Fraction`` arithmetic (tests/kinds/test_kind_contract.py's window
matrices; skips and residuals applied from their routes' picks). Positions, keys and masks are
checked against docs/certificate-format.md §4 (block ``t`` at layers ``2t − 1, 2t``, ``V_F``
last) and the masked draw records against §2. Whether the trusted checker accepts blocked
segments is not tested here: the checker's rules for them are being written beside this
construction (the lead runs the checker on merged documents).
"""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from flint import fmpq, fmpq_mat

from exactnorm.certificate import certificate_document
from exactnorm.certificate.float_read import float_network
from exactnorm.certificate.read_kinds import read_networks as conv_networks_from_dict
from exactnorm.constructions.choice import estimate_pair
from exactnorm.constructions.convblocks import (
    block_columns,
    channel_blocks,
    channel_shift,
    hull_box,
    realize_conv_blocks,
    stability_family,
)
from exactnorm.constructions.kinds.base import Options
from exactnorm.constructions.kinds.conv import conv_choice
from exactnorm.constructions.plan import construct, plan_certify
from exactnorm.errors import InputError, LimitExceededError
from exactnorm.model.layers import FrozenLayer, TargetLayer
from exactnorm.model.network import FrozenNetwork, TargetNetwork
from exactnorm.model.operators import AvgPool, Conv, ConvGeometry
from tests.kinds.test_kind_contract import _act, _affine, _frozen_ref
from tests.model.test_residual_model import _frac, reference_nodes, small_resnet


def _q(rng: random.Random, den: int = 4) -> fmpq:
    return fmpq(rng.randint(-3 * den, 3 * den), den)


def _conv(rng: random.Random, shape: tuple[int, int, int], cout: int, k: int, *,
          stride: int = 1, pad: int = 0, act: str = "relu") -> TargetLayer:
    g = ConvGeometry(shape, (k, k), stride=(stride, stride), padding=(pad, pad))
    W = fmpq_mat([[_q(rng) for _ in range(g.patch_size)] for _ in range(cout)])
    return TargetLayer(Conv(g, W), tuple(_q(rng) for _ in range(cout)), act)


def _box(n: int) -> tuple[tuple[fmpq, ...], tuple[fmpq, ...]]:
    return (fmpq(-1),) * n, (fmpq(1),) * n


def _points(n: int, count: int, seed: int, lo: int = -8, hi: int = 8) -> list[list[Fraction]]:
    rng = random.Random(seed)
    return [[Fraction(rng.randint(lo, hi), 8) for _ in range(n)] for _ in range(count)]


def _picks_apply(weight: Any, v: list[Fraction]) -> list[Fraction]:
    return [v[c] if c is not None else Fraction(0) for c in weight.picks]


def frozen_reference(net: FrozenNetwork, x: list[Fraction]) -> list[list[Fraction]]:
    """Every frozen node by dense unfolding (definitions only): ``σ(γ ⊙ (M a) + β + R h_r)``
    plus the post-activation skips, routes applied from their picks."""
    nodes = [list(x)]
    residuals = dict(net.residuals)
    for j, layer in enumerate(net.layers, 1):
        M, g, b = _frozen_ref(layer)
        u = [gi * m + bi for gi, m, bi in zip(g, _affine(M, nodes[layer.input]), b)]
        if j in residuals:
            r = residuals[j]
            u = [a + c for a, c in zip(u, _picks_apply(r.weight, nodes[r.source]))]
        h = _act(layer.activation, u)
        for s in layer.skips:
            h = [a + c for a, c in zip(h, _picks_apply(s.weight, nodes[s.source]))]
        nodes.append(h)
    return nodes


def _network(layer: TargetLayer, frozen: list[FrozenLayer]) -> FrozenNetwork:
    return FrozenNetwork(layer.input_size, tuple(frozen), (len(frozen),))


# ------------------------------------------------------------------ one blocked convolution

@pytest.mark.parametrize("shape,cout,k,stride,pad,block,stability", [
    ((3, 5, 5), 2, 3, 2, 1, 1, None),          # stride 2, padding: 3 blocks
    ((3, 5, 5), 2, 3, 2, 1, 2, "hull"),        # blocks of 2 and 1, hull boxes
    ((4, 4, 4), 3, 2, 1, 1, 3, "positions"),   # 2 blocks, even kernel with padding
    ((2, 4, 5), 2, 3, 1, 0, 1, "hull"),        # no padding, non-square image
])
def test_blocked_convolution_equals_the_target(shape, cout, k, stride, pad, block, stability):
    rng = random.Random(hash((shape, block)) % 1000)
    layer = _conv(rng, shape, cout, k, stride=stride, pad=pad, act="identity")
    n = layer.input_size
    frozen, report = realize_conv_blocks(layer, _box(n), block=block, seed=3, index=1,
                                         input_node=0, stability=stability)
    T = len(channel_blocks(shape[0], block))
    assert len(frozen) == 2 * T + 1 and report.systems == T
    assert report.system_ranks == tuple((cout * len(S) * k * k,) * 2
                                        for S in channel_blocks(shape[0], block))
    net = _network(layer, frozen)
    for x in _points(n, 3, 7):
        target = _frac(layer.evaluate(tuple(fmpq(v.numerator, v.denominator) for v in x)))
        assert _frac(net.evaluate(x)) == target
        assert frozen_reference(net, x)[-1] == target
        # the frozen network's own evaluation of every node equals the unfolded reference
        assert [_frac(v) for v in net.evaluate_nodes(x)] == frozen_reference(net, x)


def test_every_relu_channel_is_stable_on_the_box():
    # the shifts (positions and hull) make every hidden ReLU the identity on the whole box: no
    # pre-activation is negative at a corner-heavy sample of the box (a shift one too small
    # fails this)
    rng = random.Random(11)
    layer = _conv(rng, (3, 4, 4), 2, 3, stride=1, pad=1)
    n = layer.input_size
    for stability in ("positions", "hull"):
        frozen, _ = realize_conv_blocks(layer, _box(n), block=1, seed=0, index=1,
                                        input_node=0, stability=stability,
                                        shift_mode="neuron")
        net = _network(layer, frozen)
        pts = _points(n, 4, 5) + [[Fraction(rng.choice((-1, 1))) for _ in range(n)]
                                  for _ in range(8)]
        for x in pts:
            nodes = net.evaluate_nodes(x)
            for j, fl in enumerate(frozen[:-1], 1):
                assert min(fl.pre_activation(nodes[fl.input])) >= 0, (stability, j)


def test_hull_shifts_are_looser_and_hull_box_is_the_hull():
    rng = random.Random(2)
    layer = _conv(rng, (2, 4, 4), 2, 3, stride=1, pad=1)
    g = layer.operator.geometry
    lo = tuple(fmpq(rng.randint(-4, 0), 2) for _ in range(g.input_size))
    hi = tuple(v + fmpq(rng.randint(0, 4), 2) for v in lo)
    hlo, hhi = hull_box(g, lo, hi)
    plo, phi = g.patches(lo), g.patches(hi)
    for r in range(g.patch_size):
        assert hlo[r] == min(plo[r, p] for p in range(g.positions))
        assert hhi[r] == max(phi[r, p] for p in range(g.positions))
    ones = tuple(fmpq(1) for _ in range(2))
    pos = channel_shift(ones, layer.weight, g, lo, hi, "neuron", "positions")
    hull = channel_shift(ones, layer.weight, g, lo, hi, "neuron", "hull")
    assert all(h >= p for h, p in zip(hull, pos)) and hull != pos
    with pytest.raises(InputError):
        channel_shift(ones, layer.weight, g, lo, hi, "neuron", "everywhere")


def test_stability_family_by_cost():
    small = ConvGeometry((2, 4, 4), (3, 3), padding=(1, 1))
    big = ConvGeometry((32, 28, 28), (3, 3), padding=(1, 1))
    assert stability_family(18, small) == "positions"
    assert stability_family(288, big) == "hull"
    assert stability_family(10**9, ConvGeometry((2, 3, 3), (3, 3))) == "positions"  # 1 position


def test_keys_masks_and_skips_are_where_the_format_says():
    rng = random.Random(4)
    layer = _conv(rng, (3, 5, 5), 2, 3, stride=2, pad=1)
    frozen, report = realize_conv_blocks(layer, _box(layer.input_size), block=1, seed=9,
                                         index=4, input_node=6, stability="hull")
    T = 3
    for t in range(1, T + 1):
        hidden, out = frozen[2 * t - 2], frozen[2 * t - 1]
        cols = block_columns([t - 1], 3, 3)
        assert hidden.input == 6 and hidden.operator.geometry == layer.operator.geometry
        assert hidden.record["key"][:3] == [4, 2 * t - 1, 0]
        assert hidden.record["shape"] == [2 * 9, 27]
        assert hidden.record["mask"] == {"columns": cols}
        assert hidden.drawn_columns == tuple(cols)
        assert hidden.frozen_parameters == 18 * 9
        assert all(hidden.weight[r, c] == 0 for r in range(18) for c in range(27)
                   if c not in cols)
        assert out.input == 6 + 2 * t - 1 and out.operator.geometry.pointwise
        assert out.record["key"][:3] == [4, 2 * t, 0] and out.record["shape"] == [2, 18, 1, 1]
        assert "mask" not in out.record
        if t == 1:
            assert out.skips == ()
        else:
            (s,) = out.skips
            assert s.kind == "identity" and s.source == 6 + 2 * t - 2
            assert s.weight.is_identity and s.weight.nrows() == out.width
        assert hidden.stability == out.stability == "hull"
    final = frozen[-1]
    assert final.input == 6 + 2 * T and final.record["key"][:3] == [4, 2 * T + 1, 0]
    assert final.record["shape"] == [2, 2, 1, 1] and final.gamma == (1, 1)
    assert report.witness["blocks"] == [[0], [1], [2]]


def test_the_accumulator_skip_matters():
    # without the identity skips the frozen network is another function: the equality tests
    # above can fail
    rng = random.Random(5)
    layer = _conv(rng, (2, 4, 4), 2, 3, pad=1, act="identity")
    frozen, _ = realize_conv_blocks(layer, _box(layer.input_size), block=1, seed=0, index=1,
                                    input_node=0)
    cut = [dataclasses.replace(fl, skips=()) for fl in frozen]
    x = _points(layer.input_size, 1, 1)[0]
    target = _frac(layer.evaluate(tuple(fmpq(v.numerator, v.denominator) for v in x)))
    assert _frac(_network(layer, frozen).evaluate(x)) == target
    assert _frac(_network(layer, cut).evaluate(x)) != target


# ------------------------------------------------------------------ inside whole networks

def _chain_cnn(seed: int) -> TargetNetwork:
    rng = random.Random(seed)
    L1 = _conv(rng, (2, 6, 6), 3, 3, stride=2, pad=1)            # → (3, 3, 3)
    L2 = _conv(rng, (3, 3, 3), 4, 3, pad=1)                       # → (4, 3, 3)
    L3 = TargetLayer(AvgPool(ConvGeometry((4, 3, 3), (3, 3))))  # → (4, 1, 1)
    L4 = TargetLayer(fmpq_mat([[_q(rng) for _ in range(4)] for _ in range(2)]),
                     tuple(_q(rng) for _ in range(2)), "identity")
    return TargetNetwork((L1, L2, L3, L4), *_box(72))


@pytest.mark.parametrize("block", [1, 2])
def test_chain_cnn_with_blocks_equals_the_target(block):
    g = _chain_cnn(0)
    c = construct(g, block=block, seed=1)
    convs = [fl for fl in c.network.layers if fl.kind == "conv"]
    assert any(fl.skips for fl in convs) and any(fl.drawn_columns for fl in convs)
    for x in _points(72, 3, 2):
        ref = frozen_reference(c.network, x)
        target = _frac(g.evaluate(tuple(fmpq(v.numerator, v.denominator) for v in x)))
        assert ref[-1] == target and _frac(c.network.evaluate(x)) == target
        a = x
        for layer, cp in zip(g.layers, c.network.checkpoints):
            a = _frac(layer.evaluate(tuple(fmpq(v.numerator, v.denominator) for v in a)))
            assert ref[cp] == a


@pytest.mark.parametrize("block", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_small_resnet_with_blocks_equals_the_dense_reference(block):
    # identity, option-A (selection) and projection shortcuts, stride 2, padding
    g = small_resnet()
    c = construct(g, block=block, seed=0)
    assert c.network.residuals
    blocked = [r for r in c.reports if r.systems > 1]
    assert len(blocked) >= (6 if block == 1 else 0)
    for x in _points(36, 2, 4, lo=0, hi=8):
        ref = reference_nodes(g, x)
        mine = frozen_reference(c.network, x)
        assert [mine[cp] for cp in c.network.checkpoints] == ref[1:]
        assert [_frac(v) for v in c.network.evaluate_checkpoints(x)] == ref[1:]


# ------------------------------------------------------------------ the plan and the cost model

def _wide(C: int, cout: int, side: int = 4) -> TargetLayer:
    g = ConvGeometry((C, side, side), (3, 3), padding=(1, 1))
    return TargetLayer(Conv(g, fmpq_mat(cout, g.patch_size)), (fmpq(0),) * cout, "relu")


def test_cost_model_picks_blocks_for_a_wide_layer_and_plain_for_a_tiny_one():
    wide = conv_choice(_wide(32, 32), Options(), "nonzero:8")
    assert wide["mode"] == "blocks" and wide["estimate"].system_size <= 300
    # the choice is by estimated time: blocks are faster than the one system of size 9216
    assert wide["estimate"].seconds < estimate_pair(9216, k=288, d_out=32).seconds
    assert conv_choice(_wide(2, 4), Options(), "nonzero:8")["mode"] == "plain"
    # m = 1152 is within max_system: plain or blocks, whichever is estimated faster
    middle = conv_choice(_wide(8, 16), Options(), "nonzero:8")
    plain = conv_choice(_wide(8, 16), Options(block=8), "nonzero:8")
    assert plain["mode"] == "plain"
    assert middle["estimate"].seconds <= plain["estimate"].seconds
    # the option overrides: blocks for a tiny layer, plain for a wide one
    forced = conv_choice(_wide(4, 2), Options(block=2), "nonzero:8")
    assert forced["mode"] == "blocks" and forced["estimate"].systems == 2
    assert conv_choice(_wide(8, 8), Options(block=8), "nonzero:8")["mode"] == "plain"
    # one pair of the wide layer would write γ the checker refuses: refused before any work
    with pytest.raises(LimitExceededError, match="checker refuses"):
        conv_choice(_wide(32, 32), Options(block=32), "nonzero:8")
    # a distribution with zeros rules out blocks whose rows of 9 entries are often all zero
    assert conv_choice(_wide(32, 32), Options(), "set:0,1")["block"] > 1


def test_the_plan_prints_the_blocks_before_any_work():
    rng = random.Random(0)
    L = _conv(rng, (32, 3, 3), 32, 3, pad=1)
    g = TargetNetwork((L,), *_box(L.input_size))
    p = plan_certify(g, seed=0)
    assert "32 channel blocks of 1" in p.note and "≤ 288" in p.note
    assert p.runs[0].choice == {"mode": "blocks", "block": 1}
    assert plan_certify(small_resnet(), seed=0).runs[1].choice == {"mode": "plain"}


# ------------------------------------------------------------------ the certificate

def test_certificate_writes_masks_skips_and_stability_and_reads_back():
    g = _chain_cnn(3)
    c = construct(g, block=1, seed=0)
    doc = certificate_document(c)
    layers = doc["network"]["layers"]
    masked = [L for L in layers if "mask" in L.get("weight", {}).get("random", {})]
    assert masked and all(len(L["weight"]["random"]["shape"]) == 2 for L in masked)
    skipped = [L for L in layers if "skip" in L]
    assert skipped and all(L["skip"][0]["kind"] == "identity"
                           and set(L["skip"][0]["weight"]) == {"identity"} for L in skipped)
    assert all("stability" not in L for L in layers)  # cheap layers: positions, not written
    _, net = conv_networks_from_dict(doc)
    assert net == c.network  # γ, β, kernels, masks, skips read back equal
    x = _points(72, 2, 9)
    X = np.array([[float(v) for v in p] for p in x])
    exact = np.array([[float(v) for v in c.network.evaluate(p)] for p in x])
    assert np.allclose(float_network(doc).forward(X), exact, rtol=1e-9, atol=1e-9)


def test_hull_is_written_and_read_back():
    rng = random.Random(8)
    layer = _conv(rng, (2, 4, 4), 2, 3, pad=1, act="identity")
    frozen, _ = realize_conv_blocks(layer, _box(layer.input_size), block=1, seed=0, index=1,
                                    input_node=0, stability="hull")
    from exactnorm.certificate.kinds.conv import CODEC
    entries = [CODEC.frozen_json(fl, j, 3, "reference") for j, fl in enumerate(frozen, 1)]
    assert [e.get("stability") for e in entries] == ["hull"] * 4 + [None]
    with pytest.raises(InputError):
        FrozenLayer(0, Conv(layer.operator.geometry, layer.weight), (fmpq(1),) * 2,
                    (fmpq(0),) * 2, "relu", stability="sometimes")


def test_onnx_export_of_blocked_convolutions_agrees_with_the_exact_network(tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from exactnorm.outputs.export import onnx_model

    g = _chain_cnn(5)
    c = construct(g, block=1, seed=0)
    doc = certificate_document(c)
    model = onnx_model(doc)
    # the accumulator skips are Adds of the node itself, not n × n constants
    assert not any(i.name.startswith("P") for i in model.graph.initializer)
    path = tmp_path / "blocks.onnx"
    path.write_bytes(model.SerializeToString())
    s = ort.InferenceSession(str(path))
    x = _points(72, 3, 6)
    X = np.array([[float(v) for v in p] for p in x])
    name = s.get_inputs()[0].name
    shape = [d if isinstance(d, int) else len(X) for d in s.get_inputs()[0].shape]
    got = s.run(None, {name: X.reshape(shape)})[0]
    exact = np.array([[float(v) for v in c.network.evaluate(p)] for p in x])
    assert np.allclose(got, exact, rtol=1e-9, atol=1e-9)


def test_resnet8_wiring_reproduces_the_trained_onnx_model():
    # resnet8() (T10's target and the benchmark's hook) wires the BasicBlocks as PyTorch's
    # exporter wrote them: the float evaluation of the exact target built from the ONNX
    # initializers agrees with onnxruntime on the shipped model
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import importlib.util
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    spec = importlib.util.spec_from_file_location("bench_resnet_hook",
                                                  bench / "bench_resnet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    target = module.target_from_initializers(bench / "resnet8_digits.onnx")
    assert target.depth == 11 and not target.is_chain
    X = np.random.default_rng(0).random((3, 784))
    s = ort.InferenceSession(str(bench / "resnet8_digits.onnx"))
    name = s.get_inputs()[0].name
    want = np.concatenate([s.run(None, {name: x.reshape(1, 1, 28, 28).astype(np.float32)})[0]
                           for x in X])
    got = target.evaluate_float(X)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_blocks_solved_by_two_processes_give_the_same_layers():
    rng = random.Random(12)
    layer = _conv(rng, (3, 4, 4), 2, 3, stride=2, pad=1)
    box = _box(layer.input_size)
    one, r1 = realize_conv_blocks(layer, box, block=1, seed=0, index=2, input_node=1)
    two, r2 = realize_conv_blocks(layer, box, block=1, seed=0, index=2, input_node=1, jobs=2)
    assert one == two and [fl.record for fl in one] == [fl.record for fl in two]
    assert r1.witness == r2.witness
