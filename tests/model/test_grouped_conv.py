"""Grouped and depthwise convolutions (ONNX ``Conv`` with ``group`` > 1): the operator against
the block-diagonal unfolded map, a MobileNet-style block read from ONNX (depthwise 3×3 with
BatchNorm and ReLU, pointwise 1×1, global pooling, a dense head; seeded, written here with the
``onnx`` helper API from its definition), its construction group by group, a certificate valid in
both arithmetics that reads back to the same networks, hostile ``group`` fields refused alike by
both, and the exports (ONNX in both layouts under onnxruntime, npz, JSON, the PyTorch layout).
"""

from __future__ import annotations

import copy
import dataclasses
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from flint import fmpq, fmpq_mat

from exactnorm import api
from exactnorm.certificate import exact_agreement, read_networks
from exactnorm.errors import ShapeError, SingularSystemError
from exactnorm.model.batch import from_columns, to_columns
from exactnorm.model.layers import TargetLayer
from exactnorm.model.network import TargetNetwork
from exactnorm.model.operators import Conv, ConvGeometry
from exactnorm.outputs.floatnet import box_points
from tests.helpers import ROOT, both, refused
from tests.kinds.test_kind_contract import _affine, _rows, _window_matrix

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _q(x: Any) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def _kernel(seed: int, rows: int, cols: int) -> fmpq_mat:
    rng = np.random.default_rng(seed)
    return fmpq_mat(rows, cols, [fmpq(int(v), 4) for v in rng.integers(-6, 7, rows * cols)])


# --------------------------------------------------------------------------- the operator


@pytest.mark.parametrize("C, c_out, groups", [(3, 3, 3), (4, 6, 2), (4, 8, 4), (2, 2, 1)])
def test_a_grouped_convolution_is_its_block_diagonal_map(C, c_out, groups):
    g = ConvGeometry((C, 4, 5), (3, 2), stride=(1, 2), padding=(1, 1), dilation=(1, 1))
    op = Conv(g, _kernel(C + c_out, c_out, g.patch_size // groups), groups)
    M = _window_matrix(g, _rows(op.weight), groups)  # from the definition (tests/kinds)
    rng = np.random.default_rng(1)
    pts = [[Fraction(int(v), 3) for v in rng.integers(-3, 4, g.input_size)] for _ in range(3)]
    for x in pts:
        assert [_q(v) for v in op.apply(tuple(fmpq(v.numerator, v.denominator) for v in x))] \
            == _affine(M, x)
    X = fmpq_mat([[fmpq(x[r].numerator, x[r].denominator) for x in pts]
                  for r in range(g.input_size)])
    cols = to_columns(op.apply_columns(from_columns(X)))
    assert [[_q(v) for v in row] for row in cols.tolist()] == \
        [list(c) for c in zip(*(_affine(M, x) for x in pts))]
    A = np.array([[float(v) for v in x] for x in pts])
    assert np.allclose(op.apply_float(A), [[float(v) for v in _affine(M, x)] for x in pts])
    lo, hi = (fmpq(-1),) * g.input_size, (fmpq(2),) * g.input_size
    mn, mx = op.interval(lo, hi)
    assert [_q(v) for v in mn] == [sum((w * (-1 if w > 0 else 2) for w in row), Fraction(0))
                                   for row in M]
    assert [_q(v) for v in mx] == [sum((w * (2 if w > 0 else -1) for w in row), Fraction(0))
                                   for row in M]


@pytest.mark.parametrize("C, rows, cols, groups", [(3, 3, 9, 2), (4, 6, 36, 2), (4, 3, 9, 3)])
def test_inconsistent_groups_are_refused(C, rows, cols, groups):
    with pytest.raises(ShapeError):
        Conv(ConvGeometry((C, 3, 3), (3, 3)), fmpq_mat(rows, cols), groups)


# --------------------------------------------------------------------------- a MobileNet block


def mobilenet_block(C: int = 4, side: int = 5, c2: int = 6, classes: int = 3, *,
                    seed: int = 0, group: int | None = None, bn: bool = True) -> Any:
    """x [1, C, side, side] → Conv 3×3 pad 1 with ``group`` (default C: depthwise) → BatchNorm
    → Relu → Conv 1×1 C → c2 → BatchNorm → Relu → GlobalAveragePool → Flatten → Gemm; weights
    multiples of 1/8, BatchNorm statistics as a trained model has them."""
    rng = np.random.default_rng(seed)
    group = C if group is None else group
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, a: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(a, dtype=np.float32), name))
        return name

    def weight(name: str, shape: tuple[int, ...]) -> str:
        return const(name, np.round(rng.normal(size=shape) * 0.6 * 8) / 8)

    def node(op: str, inputs: list[str], name: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def conv(name: str, x: str, cin: int, cout: int, k: int, groups: int) -> str:
        inputs = [x, weight(f"{name}.weight", (cout, cin // groups, k, k))]
        if not bn:
            inputs.append(weight(f"{name}.bias", (cout,)))
        h = node("Conv", inputs, name, kernel_shape=[k, k], pads=[k // 2] * 4, group=groups)
        if not bn:
            return h
        return node("BatchNormalization",
                    [h, const(f"{name}_bn.weight", rng.uniform(0.5, 1.5, cout)),
                     const(f"{name}_bn.bias", rng.normal(size=cout) * 0.3),
                     const(f"{name}_bn.mean", rng.normal(size=cout) * 0.2),
                     const(f"{name}_bn.var", rng.uniform(0.5, 2.0, cout))],
                    f"{name}_bn", epsilon=1e-5)

    h = node("Relu", [conv("dw", "x", C, C, 3, group)], "dw_relu")
    h = node("Relu", [conv("pw", h, C, c2, 1, 1)], "pw_relu")
    flat = node("Flatten", [node("GlobalAveragePool", [h], "pool")], "flat", axis=1)
    nodes.append(helper.make_node("Gemm", [flat, weight("fc.weight", (classes, c2)),
                                           weight("fc.bias", (classes,))], ["y"], transB=1))
    graph = helper.make_graph(
        nodes, "mobilenet_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, side, side])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _onnx_outputs(model: Any, X: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    shape = [1, *(int(d.dim_value) for d in model.graph.input[0].type.tensor_type.shape.dim[1:])]
    dtype = np.float64 if inp.type == "tensor(double)" else np.float32
    return np.concatenate([session.run(None, {inp.name: x.reshape(shape).astype(dtype)})[0]
                           for x in X]).astype(np.float64)


def _exact(t: TargetNetwork, X: np.ndarray) -> np.ndarray:
    return np.array([[float(v) for v in t.evaluate([Fraction(a) for a in x])] for x in X])


@pytest.mark.parametrize("group, bn", [(None, True), (2, True), (None, False)])
def test_onnx_reads_depthwise_and_grouped_convolutions(group, bn):
    from exactnorm.model.interop import target_from_onnx

    model = mobilenet_block(seed=1, group=group, bn=bn)
    t = target_from_onnx(model, (fmpq(0),) * 100, (fmpq(1),) * 100)
    first = t.layers[0].operator
    assert isinstance(first, Conv) and first.groups == (group or 4)
    assert [layer.kind for layer in t.layers] == ["conv", "conv", "globalavgpool", "dense"]
    X = np.random.default_rng(2).random((5, 100))
    want = _onnx_outputs(model, X)
    assert np.allclose(_exact(t, X), want, rtol=1e-4, atol=1e-4)
    assert np.allclose(t.evaluate_float(X), want, rtol=1e-4, atol=1e-4)


def test_a_group_that_does_not_divide_the_channels_is_refused_by_the_reader():
    from exactnorm.model.interop import target_from_onnx

    model = mobilenet_block(C=4, seed=3, group=2)
    bad = copy.deepcopy(model)
    for n in bad.graph.node:
        if n.op_type == "Conv":
            for a in n.attribute:
                if a.name == "group":
                    a.i = 3
    with pytest.raises(ShapeError, match="group"):
        target_from_onnx(bad, (fmpq(0),) * 100, (fmpq(1),) * 100)


@pytest.fixture(scope="module")
def mobilenet() -> tuple[Any, Any, dict]:
    from exactnorm.model.interop import target_from_onnx

    model = mobilenet_block(C=3, side=4, c2=4, classes=2, seed=0)
    t = target_from_onnx(model, (fmpq(0),) * 48, (fmpq(1),) * 48)
    c = api.certify(t, seed=0, jobs=1)
    return model, c, api.certificate_document(c)


def test_the_mobilenet_block_is_realized_group_by_group(mobilenet):
    _, c, doc = mobilenet
    first, second = c.network.layers[:2]
    assert (first.operator.groups, second.operator.groups) == (3, 3)
    assert (first.channels, second.channels) == (27, 3)  # 9 per group, then one per group
    assert first.record["shape"] == [27, 1, 3, 3] and second.record["shape"] == [3, 9, 1, 1]
    report = c.reports[0]
    assert (report.systems, report.system_size) == (3, 9)
    written = doc["network"]["layers"]
    assert written[0]["group"] == written[1]["group"] == 3 == doc["target"]["layers"][0]["group"]
    assert "group" not in written[2]  # the pointwise convolution: one group, not written


def test_the_mobilenet_block_certifies_valid_in_both_arithmetics(mobilenet):
    model, c, doc = mobilenet
    verdict = both(doc)
    assert verdict.ok, verdict
    target, network = read_networks(doc)
    assert target == c.target and network == c.network
    assert exact_agreement(doc, points=3, seed=1) == 3
    X = np.array([[float(v) for v in x] for x in box_points(c.target.lower, c.target.upper, 4,
                                                            seed=1)])
    assert np.allclose(_exact(c.target, X), _onnx_outputs(model, X), rtol=1e-4, atol=1e-4)


def test_hostile_group_fields_are_refused_by_both(mobilenet):
    _, _, doc = mobilenet
    def frozen(j: int, **fields: Any) -> Any:
        return lambda d: d["network"]["layers"][j].update(fields)

    def target(**fields: Any) -> Any:
        return lambda d: d["target"]["layers"][0].update(fields)

    edits = {  # edit → the rule and words of the refusal (both arithmetics alike)
        "frozen group removed": (lambda d: d["network"]["layers"][0].pop("group"),
                                 "shape", "draw record shape [27, 1, 3, 3]"),
        "frozen group 1, the whole patch": (frozen(1, group=1), "shape",
                                            "draw record shape [3, 9, 1, 1]"),
        "group not a divisor": (frozen(0, group=2), "shape", "group 2 must be an integer from 1"),
        "group 0": (target(group=0), "shape", "group 0 must be"),
        # not a JSON integer: the closed schema's type check (rule format), before any value
        "group a string": (target(group="3"), "format", '"group" must be an integer'),
        "group true": (frozen(0, group=True), "format", '"group" must be an integer'),
        "target ungrouped": (lambda d: d["target"]["layers"][0].pop("group"),
                             "shape", "has 9 entries, expected 27"),
        "target over-grouped": (target(group=1, weight={"den": 1, "num": [[1] * 27] * 3}),
                                "identity", ""),
    }
    for edit, rule, words in edits.values():
        bad = copy.deepcopy(doc)
        edit(bad)
        # "" : a well-formed ungrouped map, another function: the identity rule
        refused(bad, rule, words)


def test_a_grouped_target_against_an_ungrouped_equal_map_is_the_same_function(mobilenet):
    """The checker reads a grouped kernel as the block-diagonal kernel of the whole patch: the
    target written ungrouped with that kernel is the same map, and the certificate stays valid
    (the identity rule compares maps, not spellings); its derived seed is the same too."""
    _, c, doc = mobilenet
    layer = c.target.layers[0]
    op = layer.operator
    kh, kw = op.geometry.kernel_shape
    whole = fmpq_mat(op.channels, op.geometry.patch_size)
    d = kh * kw
    for r in range(op.channels):
        for t in range(d):
            whole[r, r * d + t] = op.weight[r, t]
    plain = dataclasses.replace(layer, operator=Conv(op.geometry, whole))
    target = TargetNetwork((plain, *c.target.layers[1:]), c.target.lower, c.target.upper)
    for x in box_points(c.target.lower, c.target.upper, 3, seed=4):
        assert target.evaluate(x) == c.target.evaluate(x)
    from exactnorm.certificate.write import seed_of_target

    assert seed_of_target(target) == seed_of_target(c.target)
    swapped = copy.deepcopy(doc)
    from exactnorm.certificate.write import target_sections

    swapped["target"] = target_sections(target, compact=True)["target"]
    assert both(swapped).ok


@pytest.mark.parametrize("seed, grouped", [(0, False), (6, False), (1, True), (2, True)])
def test_a_singular_group_makes_the_layer_ungrouped_not_redrawn(seed, grouped):
    """Format 3 proves redraws of whole Khatri–Rao pairs only: when a group's system is
    singular at attempt 0 (seeds 0 and 6 here: two 2×2 systems), the plan realizes the layer as
    the ungrouped convolution of its block-diagonal kernel, and says so; the certificate is
    valid either way."""
    from exactnorm.constructions.kinds.conv import _grouped_pair
    from exactnorm.constructions.plan import plan_certify

    g = ConvGeometry((2, 2, 3), (1, 2))
    layer = TargetLayer(Conv(g, fmpq_mat([[1, 2], [1, -1]]), 2), (fmpq(1), fmpq(0)), "relu")
    t = TargetNetwork((layer,), (fmpq(0),) * 12, (fmpq(1),) * 12)
    if grouped:
        _grouped_pair(layer, seed, 1, "nonzero:8")
    else:
        with pytest.raises(SingularSystemError, match="of 2\\) is singular"):
            _grouped_pair(layer, seed, 1, "nonzero:8")
    plan = plan_certify(t, seed=seed)
    assert (plan.runs[0].choice["mode"] == "grouped") == grouped
    assert ("not realized apart" in plan.note) != grouped
    c = api.certify(t, seed=seed, jobs=1)
    assert [fl.operator.groups for fl in c.network.layers] == ([2, 2] if grouped else [1, 1])
    assert both(api.certificate_document(c)).ok


def test_the_trained_mobilenet_block_certifies_and_exports(tmp_path):
    """benchmarks/mobilenet_digits.onnx (benchmarks/train_mobilenet_block.py: PyTorch's
    exporter, BatchNormalization nodes kept): its depthwise convolution read with 4 groups, the
    BatchNorm folded into its rows, realized group by group, valid in both arithmetics, and its
    drop-in export agrees with the trained model under onnxruntime."""
    path = ROOT / "benchmarks" / "mobilenet_digits.onnx"
    c = api.certify(path, box=(0, 1), seed=0, jobs=1)
    assert [getattr(layer.operator, "groups", 1) for layer in c.target.layers] == [1, 4, 1, 1, 1]
    assert [fl.operator.groups for fl in c.network.layers[2:4]] == [4, 4]
    doc = api.certificate_document(c)
    assert both(doc).ok
    out = tmp_path / "export.onnx"
    api.export(doc, out, format="onnx")
    X = np.random.default_rng(0).random((16, 64)).astype(np.float32)
    original = onnx.load(str(path))
    exported = onnx.load(str(out))
    assert np.allclose(_onnx_outputs(exported, X), _onnx_outputs(original, X), rtol=1e-4,
                       atol=1e-4)


# --------------------------------------------------------------------------- exports


def test_the_mobilenet_block_exports(mobilenet, tmp_path):
    from exactnorm.outputs.export import (
        evaluate_npz_export,
        evaluate_state_dict,
        onnx_model,
        read_exported_json,
        torch_state_dict,
    )

    _, c, doc = mobilenet
    # float32 points: the export keeps the source model's float32 input
    X = np.array([[float(v) for v in x] for x in box_points(c.target.lower, c.target.upper, 6,
                                                            seed=2)], dtype=np.float32)
    X = X.astype(np.float64)
    exact = _exact(c.target, X)
    scale = max(1.0, float(np.max(np.abs(exact))))
    # the body in float64 (interface plain), in float32 with Conv on NCHW, and inside the
    # source model's float32 interface
    for options, tol in (({"interface": "plain"}, 1e-9), ({"dtype": "float32", "layout": "nchw"},
                                                          1e-3), ({}, 1e-6)):
        path = tmp_path / "m.onnx"
        model = onnx_model(doc, **options)
        groups = [a.i for n in model.graph.node if n.op_type == "Conv" for a in n.attribute
                  if a.name == "group"]
        assert (groups[:2], set(groups[2:])) == \
            (([3, 3], {1}) if "layout" in options else ([], set()))
        path.write_bytes(model.SerializeToString())
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        inp = session.get_inputs()[0]
        dtype = np.float64 if inp.type == "tensor(double)" else np.float32
        shape = [d for d in inp.shape[1:]]
        feed = X.reshape(len(X), *shape) if all(isinstance(d, int) for d in shape) else X
        got = np.asarray(session.run(None, {inp.name: feed.astype(dtype)})[0], np.float64)
        assert np.max(np.abs(got - exact)) <= tol * scale, options
    api.export(doc, tmp_path / "m.npz", format="npz", mean="1/3", scale="2")
    assert np.max(np.abs(evaluate_npz_export(tmp_path / "m.npz", X) - exact)) <= 1e-9 * scale
    api.export(doc, tmp_path / "m.json", format="json", mean="1/3", scale="2")
    assert read_exported_json(tmp_path / "m.json") == read_networks(doc)[1]
    state = torch_state_dict(doc, mean="1/4", scale="2", eps=1e-3)
    assert tuple(state["blocks.0.conv.weight"].shape) == (27, 1, 3, 3)
    kinds = [layer.kind for layer in c.network.layers]
    Y = evaluate_state_dict(state, [layer.activation for layer in c.network.layers], X,
                            eps=1e-3, kinds=kinds)
    assert np.max(np.abs(Y - exact)) <= 1e-9 * scale
    torch = pytest.importorskip("torch")
    from exactnorm.outputs.export import torch_module

    module = torch_module(doc, mean="1/4", scale="2", eps=1e-3)
    assert module.blocks[0].conv.groups == 3
    with torch.no_grad():
        out = module(torch.from_numpy(X)).numpy()
    assert np.max(np.abs(out - exact)) <= 1e-9 * scale
