"""Models in and drop-in models out (issue 34): an skl2onnx StandardScaler + MLPClassifier
pipeline (ai.onnx.ml Scaler, label and probability outputs), an MLP with BatchNormalization
after a linear layer and MLPs with a Softmax/LogSoftmax head certify VALID with default options,
and their ONNX exports run unchanged in the source's float32 pipeline: the same input and output
names and types, the same heads, the same predictions on the digits data.

Exactness is cross-checked against Fraction forward passes written here from the raw arrays
(the folds by hand, not through exactnorm) and against onnxruntime on the source model.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from exactnorm import api
from exactnorm.cli import main
from exactnorm.errors import InputError
from exactnorm.model.interop import target_from_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def mlp(digits):
    """A small trained relu MLP on the digits (sklearn), as float32 arrays."""
    from sklearn.neural_network import MLPClassifier

    X, y = digits
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MLPClassifier(hidden_layer_sizes=(8,), max_iter=60, random_state=0).fit(X / 16, y)
    return [(W.T.astype(np.float32), b.astype(np.float32))
            for W, b in zip(m.coefs_, m.intercepts_)]


def _session(path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _interface(session):
    return ([(i.name, i.type, i.shape[1:]) for i in session.get_inputs()],
            [(o.name, o.type) for o in session.get_outputs()])


def _as_array(value):
    if isinstance(value, list):  # ZipMap: a list of {class: probability}
        return np.array([[row[k] for k in sorted(row)] for row in value])
    return np.asarray(value)


def _certify_and_export(tmp_path, model_path, box="0:16"):
    cert = tmp_path / "c.json"
    assert main(["certify", str(model_path), "--box", box, "--out", str(cert)]) == 0
    out = tmp_path / "e.onnx"
    assert main(["export", str(cert), "--format", "onnx", "--out", str(out)]) == 0
    return cert, out


def _drop_in(source, export, X):
    """The export stands in for the source: same interface, same labels, close numbers."""
    s, e = _session(source), _session(export)
    assert _interface(e) == _interface(s)
    name = s.get_inputs()[0].name
    theirs, mine = s.run(None, {name: X}), e.run(None, {name: X})
    for o, a, b in zip(s.get_outputs(), theirs, mine):
        a, b = _as_array(a), _as_array(b)
        if a.dtype.kind in "iu":
            assert np.array_equal(a, b), o.name
        else:
            assert np.max(np.abs(a - b)) <= 1e-4 * max(1.0, float(np.max(np.abs(a)))), o.name
    return theirs, mine


@pytest.mark.parametrize("zipmap", [True, False])
def test_skl2onnx_scaler_pipeline_certifies_and_its_export_drops_in(tmp_path, digits, zipmap):
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = digits
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(8,),
                                                             max_iter=60, random_state=0))
        pipe.fit(X, y)
    options = None if zipmap else {MLPClassifier: {"zipmap": False}}
    model = skl2onnx.to_onnx(pipe, X[:1], options=options)
    assert any(n.op_type == "Scaler" and n.domain == "ai.onnx.ml" for n in model.graph.node)
    path = tmp_path / "pipe.onnx"
    onnx.save(model, path)
    # the Scaler folds exactly: x' = (x − offset)·scale into the first MatMul, by hand here
    scaler = next(n for n in model.graph.node if n.op_type == "Scaler")
    attrs = {a.name: helper.get_attribute_value(a) for a in scaler.attribute}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    W1, b1 = inits["coefficient"].T, inits["intercepts"].reshape(-1)
    with pytest.warns(UserWarning, match="certifies the logits"):
        g = target_from_onnx(path, [0] * 64, [16] * 64)
    x = [Fraction(int(v)) for v in X[5]]
    scaled = [(xk - Fraction(float(np.float32(o)))) * Fraction(float(np.float32(s)))
              for xk, o, s in zip(x, attrs["offset"], attrs["scale"])]
    first = [sum((Fraction(float(w)) * v for w, v in zip(row, scaled)), Fraction(0))
             + Fraction(float(c)) for row, c in zip(W1, b1)]
    W, b = g.layers[0].weight, g.layers[0].bias

    def q(v):
        return Fraction(int(v.p), int(v.q))

    ours = [sum((q(W[r, k]) * x[k] for k in range(64)), q(b[r])) for r in range(len(b))]
    assert ours == first
    cert, out = _certify_and_export(tmp_path, path)
    doc = api.load_certificate(cert)
    assert doc["provenance"]["source"]["head"]["nodes"][0]["op"] == "Softmax"
    theirs, _ = _drop_in(path, out, X)
    assert np.mean(theirs[0] == y) > 0.85  # a classifier, and the export's labels are its own


def _mlp_graph(path, layers, *, bn=False, head=None, opset=15):
    """Gemm(transB) [→ BatchNormalization] → Relu → Gemm [→ head], float32, batch N."""
    (W1, b1), (W2, b2) = layers
    rng = np.random.default_rng(4)
    n = len(b1)
    arrays = {"W1": W1, "b1": b1, "W2": W2, "b2": b2,
              "g": rng.uniform(0.5, 2, n).astype(np.float32),
              "be": rng.normal(size=n).astype(np.float32),
              "mu": rng.normal(size=n).astype(np.float32),
              "var": rng.uniform(0.5, 2, n).astype(np.float32)}
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["z1"], name="fc1", transB=1)]
    last = "z1"
    if bn:
        nodes.append(helper.make_node("BatchNormalization", ["z1", "g", "be", "mu", "var"],
                                      ["n1"], name="bn1", epsilon=1e-5))
        last = "n1"
    nodes += [helper.make_node("Relu", [last], ["r1"], name="relu1"),
              helper.make_node("Gemm", ["r1", "W2", "b2"], ["logits"], name="fc2", transB=1)]
    out = "logits"
    if head:
        nodes.append(helper.make_node(head, ["logits"], ["probs"], name="head", axis=1))
        out = "probs"
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", 10])],
        [numpy_helper.from_array(v, k) for k, v in arrays.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return arrays


def _forward(arrays, x, bn):
    """The exact function of _mlp_graph, the batch normalization folded by hand."""
    F = Fraction
    z = [sum((F(float(w)) * v for w, v in zip(row, x)), F(0)) + F(float(c))
         for row, c in zip(arrays["W1"], arrays["b1"])]
    if bn:
        s = arrays["g"].astype(np.float64) / np.sqrt(arrays["var"].astype(np.float64)
                                                     + np.float32(1e-5).astype(np.float64))
        z = [F(float(sk)) * (zk - F(float(m))) + F(float(t))
             for zk, sk, m, t in zip(z, s, arrays["mu"], arrays["be"])]
    r = [max(v, F(0)) for v in z]
    return [sum((F(float(w)) * v for w, v in zip(row, r)), F(0)) + F(float(c))
            for row, c in zip(arrays["W2"], arrays["b2"])]


def test_batchnorm_after_a_linear_layer_folds_exactly_and_drops_in(tmp_path, digits, mlp):
    X, y = digits
    path = tmp_path / "bn.onnx"
    arrays = _mlp_graph(path, mlp, bn=True)
    g = target_from_onnx(path, [0] * 64, [16] * 64)
    for i in (0, 7, 100):
        x = [Fraction(int(v)) for v in X[i]]
        assert [Fraction(int(v.p), int(v.q)) for v in g.evaluate(x)] == _forward(arrays, x, True)
    theirs = _session(path).run(None, {"x": X})[0]
    assert np.max(np.abs(g.evaluate_float(X.astype(np.float64)) - theirs)) < 1e-3
    _, out = _certify_and_export(tmp_path, path)
    a, b = _drop_in(path, out, X)
    assert np.array_equal(np.argmax(a[0], axis=1), np.argmax(b[0], axis=1))


@pytest.mark.parametrize("head", ["Softmax", "LogSoftmax"])
def test_softmax_head_certifies_the_logits_and_the_export_keeps_it(tmp_path, digits, mlp,
                                                                   head, capsys):
    X, y = digits
    path = tmp_path / "sm.onnx"
    arrays = _mlp_graph(path, mlp, head=head)
    with pytest.warns(UserWarning, match=rf"ends in {head} \(probs\): exactnorm certifies the "
                                         r"logits 'logits'"):
        g = target_from_onnx(path, [0] * 64, [16] * 64)
    x = [Fraction(int(v)) for v in X[3]]
    assert [Fraction(int(v.p), int(v.q)) for v in g.evaluate(x)] == _forward(arrays, x, False)
    capsys.readouterr()
    cert, out = _certify_and_export(tmp_path, path)
    assert "note: the ONNX graph ends in" in capsys.readouterr().err  # said on the command line
    a, b = _drop_in(path, out, X)
    assert np.array_equal(np.argmax(a[0], axis=1), np.argmax(b[0], axis=1))
    assert [n.op_type for n in onnx.load(out).graph.node][-1] == head
    # the report says what is certified
    md = api.report(cert, None, float_points=0).markdown
    assert f"before its classifier head ({head})" in md


def test_a_plain_interface_is_available(tmp_path, mlp):
    path = tmp_path / "sm.onnx"
    _mlp_graph(path, mlp, head="Softmax")
    cert = tmp_path / "c.json"
    assert main(["certify", str(path), "--box", "0:16", "--out", str(cert)]) == 0
    out = tmp_path / "plain.onnx"
    assert main(["export", str(cert), "--format", "onnx", "--out", str(out), "--interface",
                 "plain"]) == 0
    assert _interface(_session(out)) == ([("x", "tensor(double)", [64])],
                                         [("y", "tensor(double)")])


def test_affine_operators_fold_before_and_after_linear_layers(tmp_path):
    """Sub/Div on the input (a normalization), Mul after a Gemm, BatchNormalization after a
    Relu: each folds exactly into the neighbouring linear layer."""
    rng = np.random.default_rng(1)
    arrays = {"mean": rng.normal(size=3).astype(np.float32),
              "std": rng.uniform(1, 2, 3).astype(np.float32),
              "W1": rng.normal(size=(4, 3)).astype(np.float32),
              "k": np.float32([2.5]),
              "g": rng.uniform(0.5, 2, 4).astype(np.float32),
              "be": rng.normal(size=4).astype(np.float32),
              "mu": rng.normal(size=4).astype(np.float32),
              "var": rng.uniform(0.5, 2, 4).astype(np.float32),
              "W2": rng.normal(size=(2, 4)).astype(np.float32)}
    nodes = [helper.make_node("Sub", ["x", "mean"], ["c"], name="center"),
             helper.make_node("Div", ["c", "std"], ["s"], name="scale"),
             helper.make_node("MatMul", ["s", "W1T"], ["m1"], name="fc1"),
             helper.make_node("Mul", ["m1", "k"], ["m2"], name="times"),
             helper.make_node("Relu", ["m2"], ["r"], name="relu"),
             helper.make_node("BatchNormalization", ["r", "g", "be", "mu", "var"], ["n"],
                              name="bn_after_relu"),
             helper.make_node("Gemm", ["n", "W2"], ["y"], name="fc2", transB=1)]
    inits = dict(arrays, W1T=arrays["W1"].T.copy())
    del inits["W1"]
    graph = helper.make_graph(
        nodes, "affine", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    g = target_from_onnx(model, [-1] * 3, [1] * 3)
    assert g.widths == (3, 4, 2)
    F = Fraction
    s = arrays["g"].astype(np.float64) / np.sqrt(arrays["var"].astype(np.float64) + 1e-5)
    for x in ([F(1, 2), F(-1, 4), F(1)], [F(0), F(1, 8), F(-1)]):
        u = [(xk - F(float(m))) / F(float(d)) for xk, m, d in zip(x, arrays["mean"],
                                                                    arrays["std"])]
        h = [max(F(5, 2) * sum((F(float(w)) * v for w, v in zip(row, u)), F(0)), F(0))
             for row in arrays["W1"]]
        n = [F(float(sk)) * (hk - F(float(m))) + F(float(t))
             for hk, sk, m, t in zip(h, s, arrays["mu"], arrays["be"])]
        want = [sum((F(float(w)) * v for w, v in zip(row, n)), F(0)) for row in arrays["W2"]]
        assert [F(int(v.p), int(v.q)) for v in g.evaluate(x)] == want
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    X = rng.uniform(-1, 1, (10, 3)).astype(np.float32)
    assert np.max(np.abs(g.evaluate_float(X.astype(np.float64))
                         - sess.run(None, {"x": X})[0])) < 1e-4


def _single(op, domain="", **attrs):
    W = np.ones((2, 3), dtype=np.float32)
    nodes = [helper.make_node(op, ["x"], ["t"], name="pre", domain=domain or None, **attrs),
             helper.make_node("Gemm", ["t", "W"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(W, "W")])
    opsets = [helper.make_opsetid("", 15), helper.make_opsetid("ai.onnx.ml", 3)]
    return helper.make_model(graph, opset_imports=opsets)


@pytest.mark.parametrize("op,domain,attrs,hint", [
    ("Normalizer", "ai.onnx.ml", {"norm": "L2"}, "not affine"),
    ("Binarizer", "ai.onnx.ml", {}, "target_from_sklearn"),
    ("MaxPool", "", {"kernel_shape": [1]}, "AveragePool"),
    ("Tanh", "", {}, "not piecewise linear"),
])
def test_every_refusal_names_the_node_and_what_works_instead(op, domain, attrs, hint):
    with pytest.raises(InputError, match=rf"ONNX node 'pre' \(.*{op}\) is not supported: .*"
                                         rf"{hint}"):
        target_from_onnx(_single(op, domain, **attrs), [0] * 3, [1] * 3)


def test_a_head_inside_the_network_is_refused_by_name(tmp_path, mlp):
    (W1, b1), (W2, b2) = mlp
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["z"], name="fc1", transB=1),
             helper.make_node("Softmax", ["z"], ["p"], name="inner_softmax", axis=1),
             helper.make_node("Gemm", ["p", "W2", "b2"], ["y"], name="fc2", transB=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
        [numpy_helper.from_array(v, k) for k, v in
         {"W1": W1, "b1": b1, "W2": W2, "b2": b2}.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    with pytest.raises(InputError, match=r"'inner_softmax' \(Softmax\) is not supported: .*"
                                         r"final classifier head.*'fc2' \(Gemm\) follows it"):
        target_from_onnx(model, [0] * 64, [1] * 64)


def test_convolutional_export_keeps_a_softmax_head_and_the_output_name(tmp_path):
    """A CNN with a Softmax head (and a Conv bias given as an Add): the logits are certified,
    the export has the source's input and output names and the head."""
    rng = np.random.default_rng(2)
    arrays = {"K": rng.normal(size=(2, 1, 2, 2)).astype(np.float32),
              "cb": rng.normal(size=(1, 2, 1, 1)).astype(np.float32),
              "W": rng.normal(size=(3, 2 * 3 * 3)).astype(np.float32),
              "b": rng.normal(size=3).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["image", "K"], ["c"], name="conv", kernel_shape=[2, 2]),
             helper.make_node("Add", ["c", "cb"], ["cc"], name="conv_bias"),
             helper.make_node("Relu", ["cc"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["f"], name="flat", axis=1),
             helper.make_node("Gemm", ["f", "W", "b"], ["scores"], name="fc", transB=1),
             helper.make_node("Softmax", ["scores"], ["probabilities"], name="sm", axis=1)]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                     ["N", 1, 4, 4])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(v, k) for k, v in arrays.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "cnn.onnx"
    onnx.save(model, path)
    cert, out = _certify_and_export(tmp_path, path, box="0:1")
    X = rng.uniform(0, 1, (20, 1, 4, 4)).astype(np.float32)
    _drop_in(path, out, X)
