"""ONNX files as mainstream exporters write them: scikit-learn through skl2onnx (an input Cast,
label and probability outputs after a Softmax: the logits are certified, and the reader says so)
and PyTorch's default exporter (Reshape as flatten with a Constant shape, weights behind
Identity nodes). Each is certified from the CLI and compared with the float model."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from exactnorm import api
from exactnorm.errors import InputError
from exactnorm.model.interop import target_from_onnx

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _sklearn_classifier_onnx(path, zipmap: bool):
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.datasets import load_iris
    from sklearn.neural_network import MLPClassifier

    X, y = load_iris(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MLPClassifier(hidden_layer_sizes=(5,), max_iter=50, random_state=0).fit(X, y)
    options = {} if zipmap else {"zipmap": False}
    path.write_bytes(skl2onnx.to_onnx(m, X[:1].astype(np.float32),
                                      options=options).SerializeToString())
    return m, X


@pytest.mark.parametrize("zipmap", [False, True])
def test_skl2onnx_classifier_certifies_its_logits(tmp_path, zipmap):
    m, X = _sklearn_classifier_onnx(tmp_path / "m.onnx", zipmap)
    with pytest.warns(UserWarning, match="certifies the logits"):
        g = target_from_onnx(tmp_path / "m.onnx", [0] * 4, [8] * 4)
    x = X[7]
    logits = np.maximum(x @ m.coefs_[0] + m.intercepts_[0], 0) @ m.coefs_[1] + m.intercepts_[1]
    exact = [float(v) for v in g.evaluate([Fraction(float(v)) for v in x])]
    assert np.allclose(exact, logits, rtol=1e-5, atol=1e-5)
    c = api.certify(g)
    assert api.check(api.certificate_document(c)).ok


def _torch_like_onnx(path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The graph torch.onnx.export writes for Sequential(Flatten, Linear, ReLU, Linear): a
    Reshape with a Constant shape, Gemm with transB and weights behind Identity nodes."""
    rng = np.random.default_rng(0)
    W1, b1 = rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=6).astype(np.float32)
    W2, b2 = rng.normal(size=(3, 6)).astype(np.float32), rng.normal(size=3).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((W1, "fc1.weight"), (b1, "fc1.bias"), (W2, "fc2.weight"), (b2, "fc2.bias"))]
    nodes = [
        helper.make_node("Constant", [], ["shape"], value=numpy_helper.from_array(
            np.array([-1, 4], dtype=np.int64))),
        helper.make_node("Reshape", ["input", "shape"], ["flat"], name="/flatten/Reshape"),
        helper.make_node("Identity", ["fc1.weight"], ["w1"]),
        helper.make_node("Gemm", ["flat", "w1", "fc1.bias"], ["h"], name="/fc1/Gemm",
                         transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="/relu/Relu"),
        helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["output"], name="/fc2/Gemm",
                         transB=1),
    ]
    graph = helper.make_graph(
        nodes, "torch_jit", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 2, 2])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3])], inits)
    onnx.save(helper.make_model(graph), path)
    return W1, b1, W2, b2


def test_torch_default_exporter_graph_certifies_from_the_cli(tmp_path):
    from exactnorm.cli import main

    W1, b1, W2, b2 = _torch_like_onnx(tmp_path / "t.onnx")
    g = target_from_onnx(tmp_path / "t.onnx", [-1] * 4, [1] * 4)
    x = np.array([0.5, -0.25, 1.0, 0.0])
    want = np.maximum(x @ W1.T.astype(np.float64) + b1, 0) @ W2.T.astype(np.float64) + b2
    got = [float(v) for v in g.evaluate([Fraction(v) for v in x])]
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    assert main(["certify", str(tmp_path / "t.onnx"), "--box", "-1:1",
                 "--out", str(tmp_path / "c.json")]) == 0


def test_reshape_that_is_not_a_flatten_and_a_cast_to_integers_are_refused(tmp_path):
    _torch_like_onnx(tmp_path / "t.onnx")
    model = onnx.load(tmp_path / "t.onnx")
    model.graph.node[0].attribute[0].t.CopyFrom(numpy_helper.from_array(
        np.array([2, 2, 1], dtype=np.int64)))
    onnx.save(model, tmp_path / "bad.onnx")
    with pytest.raises(InputError, match="flatten"):
        target_from_onnx(tmp_path / "bad.onnx", [-1] * 4, [1] * 4)
    model = onnx.load(tmp_path / "t.onnx")
    model.graph.node.insert(2, helper.make_node("Cast", ["flat"], ["flat_int"],
                                                to=TensorProto.INT32))
    model.graph.node[4].input[0] = "flat_int"
    onnx.save(model, tmp_path / "cast.onnx")
    with pytest.raises(InputError, match="cast"):
        target_from_onnx(tmp_path / "cast.onnx", [-1] * 4, [1] * 4)


def test_export_keeps_the_source_models_names_and_input_shape(tmp_path):
    """certify records the model's input name and shape and its output name; the ONNX export
    takes the same input (a 2 × 2 image, flattened as the source did) under the same names,
    and computes the certified network (measured by --verify against the exact target)."""
    ort = pytest.importorskip("onnxruntime")
    from exactnorm.cli import main

    _torch_like_onnx(tmp_path / "t.onnx")
    cert = tmp_path / "c.json"
    assert main(["certify", str(tmp_path / "t.onnx"), "--box", "-1:1", "--out", str(cert)]) == 0
    doc = api.load_certificate(cert)
    assert doc["provenance"]["source"] == {
        "format": "onnx", "output": {"name": "output", "dtype": "float32"},
        "input": {"name": "input", "shape": [1, 2, 2], "dtype": "float32"},
        "outputs": [{"name": "output", "type": {"tensor": "float32", "shape": [1, 3]}}]}
    # the API certifies the same file to the same bytes
    api.save_certificate(api.certificate_document(api.certify(
        api.load_target(tmp_path / "t.onnx", box="-1:1"))), tmp_path / "api.json")
    assert (tmp_path / "api.json").read_bytes() == cert.read_bytes()
    out = tmp_path / "e.onnx"
    assert main(["export", str(cert), "--format", "onnx", "--out", str(out), "--verify", "6"]) == 0
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    (inp,), (outp,) = session.get_inputs(), session.get_outputs()
    assert (inp.name, inp.shape[1:], outp.name) == ("input", [2, 2], "output")
    source = ort.InferenceSession(str(tmp_path / "t.onnx"), providers=["CPUExecutionProvider"])
    x = np.array([[[0.5, -0.25], [1.0, 0.0]]])
    assert (inp.type, outp.type) == ("tensor(float)", "tensor(float)")  # as the source's
    ours = session.run(None, {"input": x.astype(np.float32)})[0]
    theirs = source.run(None, {"input": x.astype(np.float32)})[0]
    assert np.allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    # without a recorded source (a target from lists), the export keeps x and y
    plain = api.certificate_document(api.certify(api.demo_target(), seed=1))
    api.export(plain, tmp_path / "p.onnx", format="onnx")
    s2 = ort.InferenceSession(str(tmp_path / "p.onnx"), providers=["CPUExecutionProvider"])
    assert (s2.get_inputs()[0].name, s2.get_outputs()[0].name) == ("x", "y")
