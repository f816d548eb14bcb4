"""Convolutional targets: construction against a dense unfolded reference, certificates, ONNX
import (BatchNorm folding, refused operators), export under onnxruntime, the CLI."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq, fmpq_mat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactnorm.certificate import (
    certificate_document,
    exact_agreement,
    load_certificate,
    write_certificate,
)
from exactnorm.certificate.read_kinds import read_networks as conv_networks_from_dict
from exactnorm.constructions.plan import construct
from exactnorm.errors import InputError, InvariantError, ShapeError
from exactnorm.exact.linalg import to_fmpq_mat
from exactnorm.model.network import (
    FrozenLayer,
    FrozenNetwork,
    TargetLayer,
    TargetNetwork,
    affine_interval,
)
from exactnorm.model.operators import AvgPool, Conv, ConvGeometry
from exactnorm.strategies import conv_targets
from tests.kinds.test_kind_contract import _q, _window_matrix

# ----------------------------------------------------------------- dense unfolded references


def _pool_matrix(g: ConvGeometry) -> fmpq_mat:
    """Average pooling as a dense matrix, built from the window definition directly."""
    C, H, W = g.input_shape
    (kh, kw), (sh, sw) = g.kernel_shape, g.stride
    ho, wo = g.output_hw
    M = fmpq_mat(C * ho * wo, C * H * W)
    for c in range(C):
        for y in range(ho):
            for x in range(wo):
                for u in range(kh):
                    for v in range(kw):
                        M[c * ho * wo + y * wo + x, c * H * W + (y * sh + u) * W + x * sw + v] \
                            += fmpq(1, kh * kw)
    return M


def unfolded_matrix(g: ConvGeometry, K: fmpq_mat, groups: int = 1) -> fmpq_mat:
    """The dense matrix of a convolution, from its definition (tests/kinds)."""
    M = _window_matrix(g, [[_q(x) for x in row] for row in K.tolist()], groups)
    return fmpq_mat([[fmpq(x.numerator, x.denominator) for x in row] for row in M])


def dense_target(t: TargetNetwork) -> TargetNetwork:
    """The target with every convolution and pooling unfolded into a dense layer."""
    layers = []
    for layer in t.layers:
        op = layer.operator
        if isinstance(op, Conv):
            P = op.geometry.positions
            layers.append(TargetLayer(unfolded_matrix(op.geometry, op.weight, op.groups),
                                      tuple(b for b in layer.bias for _ in range(P)),
                                      layer.activation))
        elif isinstance(op, AvgPool):
            M = _pool_matrix(op.geometry)
            layers.append(TargetLayer(M, (fmpq(0),) * M.nrows(), "identity"))
        else:
            layers.append(layer)
    return TargetNetwork(tuple(layers), t.lower, t.upper)


def _repeat(v, P):
    return tuple(x for x in v for _ in range(P))


def dense_frozen(net) -> FrozenNetwork:
    """The frozen network unfolded: per-channel γ, β repeated at every position."""
    layers = []
    for layer in net.layers:
        op = layer.operator
        if isinstance(op, Conv):
            P = op.geometry.positions
            layers.append(FrozenLayer(layer.input, unfolded_matrix(op.geometry, op.weight,
                                                                   op.groups),
                                      _repeat(layer.gamma, P), _repeat(layer.beta, P),
                                      layer.activation))
        elif isinstance(op, AvgPool):
            M = _pool_matrix(op.geometry)
            zeros = (fmpq(0),) * M.nrows()
            layers.append(FrozenLayer(layer.input, M, (fmpq(1),) * M.nrows(), zeros, "identity"))
        else:
            layers.append(layer)
    return FrozenNetwork(net.input_dim, tuple(layers), net.checkpoints)


def _points(t, n, seed):
    rng = random.Random(seed)
    yield list(t.lower)
    yield list(t.upper)
    for _ in range(n):
        yield [lo + (hi - lo) * fmpq(rng.randrange(0, 9), 8) for lo, hi in zip(t.lower, t.upper)]


def lenet_like(seed: int = 1) -> TargetNetwork:
    rng = random.Random(seed)

    def mat(r, c):
        return fmpq_mat(r, c, [fmpq(rng.randint(-8, 8), 8) for _ in range(r * c)])

    def vec(n):
        return tuple(fmpq(rng.randint(-8, 8), 8) for _ in range(n))

    g1 = ConvGeometry((1, 8, 8), (3, 3), padding=(1, 1))
    g2 = ConvGeometry((2, 4, 4), (3, 3), stride=(1, 1), dilation=(1, 1))
    return TargetNetwork(
        (TargetLayer(Conv(g1, mat(2, 9)), vec(2), "relu"),
         TargetLayer(AvgPool(ConvGeometry((2, 8, 8), (2, 2), stride=(2, 2)))),
         TargetLayer(Conv(g2, mat(3, 18)), vec(3), "relu"),
         TargetLayer(mat(2, 12), vec(2), "identity")),
        (fmpq(0),) * 64, (fmpq(1),) * 64)


# ----------------------------------------------------------------- model


def test_conv_layer_equals_unfolded_reference_with_stride_padding_dilation():
    rng = random.Random(0)
    g = ConvGeometry((2, 5, 4), (3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2))
    K = fmpq_mat(3, g.patch_size, [rng.randint(-3, 3) for _ in range(3 * g.patch_size)])
    layer = TargetLayer(Conv(g, K), (fmpq(1), fmpq(-1), fmpq(0)), "identity")
    U = unfolded_matrix(g, K)
    for _ in range(3):
        a = [fmpq(rng.randint(-5, 5), rng.randint(1, 4)) for _ in range(g.input_size)]
        ref = [(U * fmpq_mat([[x] for x in a]))[r, 0] for r in range(U.nrows())]
        P = g.positions
        assert layer.evaluate(a) == tuple(ref[r] + layer.bias[r // P] for r in range(len(ref)))
        floats = layer.evaluate_float(np.array([[float(x) for x in a]]))[0]
        assert np.allclose(floats, [float(v) for v in layer.evaluate(a)])


def test_interval_boxes_equal_the_unfolded_dense_boxes():
    t = lenet_like()
    assert t.interval_boxes() == dense_target(t).interval_boxes()


def test_geometry_that_does_not_fit_is_refused():
    with pytest.raises(ShapeError):
        ConvGeometry((1, 2, 2), (3, 3))
    with pytest.raises(ShapeError):
        ConvGeometry((1, 4, 4), (3, 3), stride=(0, 1))


# ----------------------------------------------------------------- construction


def test_construction_equals_dense_reference_on_a_lenet_shaped_target():
    t = lenet_like()
    c = construct(t, seed=0)
    ref_target, ref_net = dense_target(t), dense_frozen(c.network)
    for x in _points(t, 3, 0):
        nodes = c.network.evaluate_nodes(x)
        assert nodes == ref_net.evaluate_nodes(x)
        assert nodes[-1] == ref_target.evaluate(x) == t.evaluate(x)


def test_kernel_identity_and_stability_at_every_position():
    """V2·diag(γ1)·V1 = W exactly, and every first-layer channel is ≥ 0 on the box at every
    position (checked on the unfolded dense matrix, an independent path from the convolution's
    interval)."""
    t = lenet_like()
    c = construct(t, seed=0)
    boxes = t.interval_boxes()
    for i, cp in ((1, 2), (3, 5)):
        first, second = c.network.layers[cp - 2], c.network.layers[cp - 1]
        G = fmpq_mat(first.channels, first.channels)
        for j, gj in enumerate(first.gamma):
            G[j, j] = gj
        assert fmpq_mat(second.weight) * G * fmpq_mat(first.weight) == t.layers[i - 1].weight
        assert second.operator.geometry.pointwise
        assert first.operator.geometry == t.layers[i - 1].operator.geometry
        dense = dense_frozen(c.network).layers[cp - 2]
        lo, hi = affine_interval(dense.weight, (fmpq(0),) * dense.width, *boxes[i - 1])
        P = first.operator.geometry.positions
        lowest = [dense.gamma[r] * (lo[r] if dense.gamma[r] >= 0 else hi[r]) + dense.beta[r]
                  for r in range(dense.width)]
        assert all(m >= 0 for m in lowest)
        # β is the integer round-up of the smallest shift: each channel's lowest point over
        # all its positions lies in [0, 1)
        assert all(0 <= min(lowest[j * P:(j + 1) * P]) < 1 for j in range(first.channels))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_targets(), st.integers(0, 3))
def test_construction_equals_unfolded_reference_on_random_targets(t, seed):
    c = construct(t, seed=seed)
    ref_target, ref_net = dense_target(t), dense_frozen(c.network)
    for x in _points(t, 2, seed):
        nodes = c.network.evaluate_nodes(x)
        assert nodes == ref_net.evaluate_nodes(x)
        for layer_value, cp in zip(_target_values(ref_target, x), c.network.checkpoints):
            assert nodes[cp] == layer_value


def _target_values(t: TargetNetwork, x):
    from exactnorm.model.network import activate, column

    a = tuple(fmpq(v) for v in x)
    for layer in t.layers:
        z = layer.weight * column(a)
        a = activate(layer.activation, [z[r, 0] + layer.bias[r] for r in range(z.nrows())])
        yield a


# ----------------------------------------------------------------- certificate


def test_certificate_fields_and_streamed_bytes(tmp_path):
    c = construct(lenet_like(), seed=0)
    doc = certificate_document(c)
    layers = doc["network"]["layers"]
    assert sorted(layers[0]) == ["activation", "beta", "dilation", "gamma", "input",
                                 "input_shape", "kernel_shape", "kind", "padding", "stride",
                                 "weight"]
    assert layers[0]["weight"]["random"]["shape"] == [18, 1, 3, 3]
    assert layers[1]["weight"]["random"]["shape"] == [2, 18, 1, 1]
    assert sorted(layers[2]) == ["activation", "input", "input_shape", "kernel_shape", "kind",
                                 "padding", "stride"]
    assert doc["target"]["layers"][1]["kind"] == "avgpool"
    assert "kind" not in doc["target"]["layers"][3]
    write_certificate(c, tmp_path / "c.json.gz")
    with gzip.open(tmp_path / "c.json.gz", "rt") as fh:
        assert json.load(fh) == json.loads(json.dumps(doc))
    back_t, back_n = conv_networks_from_dict(load_certificate(tmp_path / "c.json.gz"))
    assert back_t == c.target and back_n.checkpoints == c.network.checkpoints
    assert [layer.weight for layer in back_n.layers if hasattr(layer, "weight")] == \
        [layer.weight for layer in c.network.layers if hasattr(layer, "weight")]
    explicit = certificate_document(c, frozen_weights="explicit")
    assert exact_agreement(explicit, points=2) == 2


@pytest.mark.parametrize("edit", ["gamma", "beta", "kernel", "padding", "stride", "pool"])
def test_exact_agreement_rejects_edited_certificates(edit):
    doc = certificate_document(construct(lenet_like(), seed=0))
    L = doc["network"]["layers"]
    if edit == "gamma":
        L[0]["gamma"]["num"][3] = str(int(L[0]["gamma"]["num"][3]) + 1)
    elif edit == "beta":
        L[3]["beta"]["num"][0] = str(int(L[3]["beta"]["num"][0]) + 1)
    elif edit == "kernel":
        L[0]["weight"]["random"]["key"][3] += 1
    elif edit == "padding":
        L[0]["padding"] = [0, 0]
        L[0]["input_shape"] = [1, 10, 10]
        doc["domain"] = {"lower": [0] * 100, "upper": [1] * 100}
    elif edit == "stride":
        L[3]["stride"] = [2, 2]
        L[3]["input_shape"] = [2, 5, 5]
    else:
        L[2]["kernel_shape"] = [1, 1]
        L[2]["stride"] = [1, 1]
    with pytest.raises((InvariantError, ShapeError, InputError)):
        exact_agreement(doc, points=3)


# ----------------------------------------------------------------- ONNX / state dicts


def _onnx_cnn(path, *, maxpool=False, bn=False, seed=0):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    r = np.random.default_rng(seed)
    arrays = {"W1": r.standard_normal((2, 1, 3, 3)) * 0.5, "b1": r.standard_normal(2) * 0.1,
              "W2": r.standard_normal((3, 2, 2, 2)) * 0.5, "b2": r.standard_normal(3) * 0.1,
              "G": r.standard_normal((12, 4)) * 0.5, "c": r.standard_normal(4) * 0.1}
    if bn:
        arrays.update(g=np.abs(r.standard_normal(2)) + 0.5, be=r.standard_normal(2),
                      mu=r.standard_normal(2), var=np.abs(r.standard_normal(2)) + 0.5)
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in arrays.items()]
    nodes = [helper.make_node("Conv", ["x", "W1", "b1"], ["c1"], name="conv1",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    last = "c1"
    if bn:
        nodes.append(helper.make_node("BatchNormalization", ["c1", "g", "be", "mu", "var"],
                                      ["bn1"], name="bn1", epsilon=1e-5))
        last = "bn1"
    nodes += [helper.make_node("Relu", [last], ["r1"], name="relu1"),
              helper.make_node("MaxPool" if maxpool else "AveragePool", ["r1"], ["p1"],
                               name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
              helper.make_node("Conv", ["p1", "W2", "b2"], ["c2"], name="conv2",
                               kernel_shape=[2, 2]),
              helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
              helper.make_node("Flatten", ["r2"], ["f"], name="flat", axis=1),
              helper.make_node("Gemm", ["f", "G", "c"], ["y"], name="fc")]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return arrays


def _ort_outputs(path, X):
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(str(path))
    name = s.get_inputs()[0].name
    shape = s.get_inputs()[0].shape
    n = int(np.prod(shape[1:]))
    kind = np.float64 if s.get_inputs()[0].type == "tensor(double)" else np.float32
    return np.concatenate([s.run(None, {name: x.reshape(1, *shape[1:]).astype(kind)})[0]
                           for x in X.reshape(-1, n)]).astype(np.float64)


@pytest.mark.parametrize("bn", [False, True])
def test_onnx_cnn_import_certifies_and_export_reproduces_it(tmp_path, bn):
    from exactnorm import api
    from exactnorm.outputs.export import onnx_model

    path = tmp_path / "cnn.onnx"
    _onnx_cnn(path, bn=bn)
    out = tmp_path / "cert.json.gz"
    c = api.certify(path, box=(0, 1), seed=0)
    api.write_certificate(c, out)
    assert [type(layer.operator).__name__ for layer in c.target.layers] == \
        ["Conv", "AvgPool", "Conv", "Dense"]
    assert exact_agreement(load_certificate(out), points=4) == 4
    for x in _points(c.target, 2, 1):
        assert c.network.evaluate(x) == dense_target(c.target).evaluate(x)
    X = np.random.default_rng(3).random((6, 36))
    original = _ort_outputs(path, X)
    assert np.abs(c.target.evaluate_float(X) - original).max() <= 1e-5 * np.abs(original).max()
    doc = load_certificate(out)
    for layout in ("im2col", "nchw"):
        exported = tmp_path / f"export_{layout}.onnx"
        dtype = "float64" if layout == "im2col" else "float32"
        exported.write_bytes(onnx_model(doc, dtype=dtype, layout=layout).SerializeToString())
        mine = _ort_outputs(exported, X)
        assert np.abs(mine - original).max() <= 1e-4 * np.abs(original).max()
        # the source's interface: its input and output names, float32 in and out
        ort = pytest.importorskip("onnxruntime")
        s = ort.InferenceSession(str(exported))
        assert [(i.name, i.type) for i in s.get_inputs()] == [("x", "tensor(float)")]
        assert [(o.name, o.type) for o in s.get_outputs()] == [("y", "tensor(float)")]
        if layout == "im2col":  # double precision: the float64 target itself, closely
            plain = tmp_path / "plain.onnx"
            plain.write_bytes(onnx_model(doc, dtype=dtype, layout=layout,
                                         interface="plain").SerializeToString())
            exact = c.target.evaluate_float(X)
            mine = _ort_outputs(plain, X)
            assert np.abs(mine - exact).max() <= 1e-9 * np.abs(exact).max()


def test_batchnorm_folding_is_exact(tmp_path):
    from exactnorm.model.interop import target_from_onnx

    a = _onnx_cnn(tmp_path / "bn.onnx", bn=True)
    layer = target_from_onnx(tmp_path / "bn.onnx", 0, 1).layers[0]
    f32 = {k: v.astype(np.float32).astype(np.float64) for k, v in a.items()}
    scale = f32["g"] / np.sqrt(f32["var"] + np.float32(1e-5).astype(np.float64))
    for o in range(2):
        s = Fraction(float(scale[o]))
        assert [Fraction(str(w)) for w in layer.weight.tolist()[o]] == \
            [s * Fraction(float(w)) for w in f32["W1"][o].reshape(-1)]
        assert Fraction(str(layer.bias[o])) == \
            s * (Fraction(float(f32["b1"][o])) - Fraction(float(f32["mu"][o]))) \
            + Fraction(float(f32["be"][o]))


def test_maxpool_is_refused_with_its_node_name(tmp_path):
    from exactnorm.model.interop import target_from_onnx

    _onnx_cnn(tmp_path / "max.onnx", maxpool=True)
    with pytest.raises(InputError, match="'pool1' \\(MaxPool\\) is not supported"):
        target_from_onnx(tmp_path / "max.onnx", 0, 1)


def test_state_dict_with_declared_architecture_equals_the_onnx_reading(tmp_path):
    from exactnorm.model.interop import target_from_onnx, target_from_state_dict
    from exactnorm.model.onnx_common import fold_batchnorm

    a = _onnx_cnn(tmp_path / "m.onnx", bn=True)
    _onnx_cnn(tmp_path / "plain.onnx", bn=False)
    f = {k: v.astype(np.float32) for k, v in a.items()}
    sd = {"0.weight": f["W1"], "0.bias": f["b1"], "3.weight": f["W2"], "3.bias": f["b2"],
          "6.weight": f["G"].T, "6.bias": f["c"]}
    t = target_from_state_dict(sd, 0, 1, architecture="conv(padding=1),relu,avgpool(2),conv,"
                               "relu,flatten,linear", input_shape=(1, 6, 6))
    assert t == target_from_onnx(tmp_path / "plain.onnx", 0, 1)
    bn = {"0.weight": f["W1"], "0.bias": f["b1"], "1.weight": f["g"], "1.bias": f["be"],
          "1.running_mean": f["mu"], "1.running_var": f["var"]}
    folded = target_from_state_dict(bn, 0, 1, architecture="conv(padding=1),bn",
                                    input_shape=(1, 6, 6)).layers[0]
    W, b = fold_batchnorm([[Fraction(float(w)) for w in f["W1"][o].reshape(-1)]
                           for o in range(2)], [Fraction(float(x)) for x in f["b1"]],
                          f["g"], f["be"], f["mu"], f["var"], 1e-5)  # PyTorch's eps, a double
    assert folded.weight == to_fmpq_mat(W)
    assert folded.bias == tuple(to_fmpq_mat([b]).entries())
    with pytest.raises(InputError, match="modules with parameters"):
        target_from_state_dict(sd, 0, 1, architecture="conv,relu,linear", input_shape=(1, 6, 6))


def test_torch_style_export_reproduces_the_target():
    from exactnorm.outputs.export import evaluate_state_dict, torch_state_dict

    t = lenet_like()
    c = construct(t, seed=0)
    sd = torch_state_dict(c)
    assert sd["blocks.0.conv.weight"].ndim == 4 and "blocks.0.norm.running_var" in sd
    X = np.random.default_rng(0).random((5, 64))
    y = evaluate_state_dict(sd, [layer.activation for layer in c.network.layers], X,
                            kinds=[layer.kind for layer in c.network.layers])
    ref = t.evaluate_float(X)
    assert np.abs(y - ref).max() <= 1e-9 * np.abs(ref).max()


# ----------------------------------------------------------------- CLI


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "exactnorm", *args], cwd=cwd,
                          capture_output=True, text=True)


def test_cli_certifies_a_cnn_with_the_box_only(tmp_path):
    _onnx_cnn(tmp_path / "model.onnx")
    r = _cli("certify", "--target", "model.onnx", "--box", "0:1", "--no-check", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "conv (run by run): target layer 1 conv: Theorem 1 over channels" in r.stdout
    doc = load_certificate(tmp_path / "certificate.json")
    assert [L.get("kind", "dense") for L in doc["network"]["layers"]][:3] == \
        ["conv", "conv", "avgpool"]
    r = _cli("certify", "--target", "model.onnx", "--box", "0:1", "--routing", "mask",
             "--force", cwd=tmp_path)
    assert r.returncode == 2 and "--routing applies to a whole-target construction only" \
        in r.stderr and "conv, avgpool, dense" in r.stderr
    # --block is the convolutions' channels per block (conv2 reads 2 channels: 2 blocks)
    r = _cli("certify", "--target", "model.onnx", "--box", "0:1", "--block", "1", "--force",
             "--no-check", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "target layer 3 conv: 2 channel blocks of 1" in r.stdout
    r = _cli("certify", "model.onnx", "--box", "0:1", "--format-version", "1", "--force",
             cwd=tmp_path)
    assert r.returncode == 2 and "need certificate --format-version 2 or later" in r.stderr


def test_cli_certificate_of_a_cnn_is_valid_for_both_checkers(tmp_path):
    _onnx_cnn(tmp_path / "model.onnx")
    r = _cli("certify", "--target", "model.onnx", "--box", "0:1", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("certify", "--target", "model.onnx", "--box", "0:1", "--pure", "--force",
             cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("check", "certificate.json", "--both", cwd=tmp_path)
    assert r.returncode == 0 and "VALID" in r.stdout, r.stdout + r.stderr


@settings(max_examples=15, deadline=None)
@given(conv_targets(dense_head=True), st.integers(0, 2))
def test_integer_checkpoint_evaluation_equals_the_reference(t, seed):
    c = construct(t, seed=seed)
    for x in _points(t, 1, seed):
        nodes = c.network.evaluate_nodes(x)
        assert c.network.evaluate_checkpoints(x) == [nodes[cp] for cp in c.network.checkpoints]


def test_every_frozen_matrix_draws_from_its_own_stream():
    """The dense head is numbered from its true target layer (first_layer), so no stream key
    of the head repeats one of the convolutions'."""
    doc = certificate_document(construct(lenet_like(), seed=0))
    keys = []
    for L in doc["network"]["layers"]:
        for entry in [L, *L.get("skip", [])]:
            w = entry.get("weight")
            if isinstance(w, dict) and "random" in w:
                keys.append(tuple(w["random"]["key"]))
    assert len(keys) == len(set(keys)) and {k[0] for k in keys} == {1, 3, 4}


def test_old_network_names_are_deprecated_aliases_of_the_one_network():
    import exactnorm.model.conv as old

    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert old.ConvTargetNetwork is TargetNetwork
    with pytest.warns(DeprecationWarning):
        assert old.ConvFrozenNetwork is FrozenNetwork
    with pytest.raises(AttributeError):
        old.NoSuchName  # noqa: B018
    t = lenet_like()
    assert "kinds=conv,avgpool,conv,dense" in repr(t) and len(repr(t)) < 200


def test_one_writer_for_every_kind_refuses_a_version_without_the_kind(tmp_path):
    """The kind-free frame writes a CNN exactly like a dense network's certificate (streamed
    bytes equal the document's), and version 1 — which has no convolutions — is refused before
    anything is written, naming the parameter."""
    from exactnorm.certificate import certificate_bytes, require_version

    c = construct(lenet_like(), seed=0)
    write_certificate(c, tmp_path / "c.json")
    assert (tmp_path / "c.json").read_bytes() == certificate_bytes(certificate_document(c))
    with pytest.raises(InputError) as info:
        certificate_document(c, version=1)
    assert info.value.parameter == "version" and "conv layers need certificate version 2" \
        in str(info.value)
    with pytest.raises(InputError):
        write_certificate(c, tmp_path / "v1.json", version=1)
    assert not (tmp_path / "v1.json").exists()
    require_version(c.target.layers[3:], 1)  # a dense layer has every version
