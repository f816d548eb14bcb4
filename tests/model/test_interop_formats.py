"""Targets from ONNX graphs, ``.pt`` state dicts and scikit-learn pipelines: exact, and every
refusal of issue 18 (unsupported operators, undeclared or non piecewise-linear activations, two
boxes, missing optional packages).

Exactness is cross-checked against independent Fraction forward passes written here from the raw
arrays (not through exactnorm), and against the framework's own float evaluation.
"""

from __future__ import annotations

import sys
import warnings
from fractions import Fraction

import numpy as np
import pytest

from exactnorm.api import load_target
from exactnorm.cli import main
from exactnorm.errors import InputError, MissingExtraError
from exactnorm.exact.sampling import layer_rng
from exactnorm.model.interop import target_from_onnx, target_from_sklearn

BOX = (Fraction(-1), Fraction(1))


def _fwd(layers, x):
    """Exact forward pass: ``layers`` = [(W (out,in) floats, b floats, act)], ``x`` Fractions."""
    a = list(x)
    for W, b, act in layers:
        z = [sum((Fraction(float(w)) * ak for w, ak in zip(row, a)), Fraction(0))
             + Fraction(float(bk)) for row, bk in zip(W, b)]
        a = [max(v, Fraction(0)) for v in z] if act == "relu" else z
    return a


def _q(v):
    return Fraction(str(v))


# --------------------------------------------------------------------------- ONNX

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # the onnx extra; the other formats are still tested
    onnx = None

needs_onnx = pytest.mark.skipif(onnx is None, reason="needs the onnx extra")


def _graph(nodes, inits, d_in=3, d_out=2, elem=None, extra_inputs=()):
    elem = TensorProto.FLOAT if elem is None else elem
    graph = helper.make_graph(
        nodes, "t", [helper.make_tensor_value_info("x", elem, ["N", d_in]), *extra_inputs],
        [helper.make_tensor_value_info("y", elem, ["N", d_out])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])


def _mlp_onnx(rng, dtype=np.float32):
    """Flatten → Gemm(transB=1, α, β) → Relu → MatMul+Add → Relu → Identity → Gemm(transB=0)."""
    W1 = rng.normal(size=(4, 3)).astype(dtype)        # (out, in) with transB = 1
    c1 = rng.normal(size=4).astype(dtype)
    B2 = rng.normal(size=(4, 5)).astype(dtype)        # (in, out) for MatMul
    c2 = rng.normal(size=5).astype(dtype)
    B3 = rng.normal(size=(5, 2)).astype(dtype)        # (in, out) with transB = 0
    c3 = rng.normal(size=(1, 2)).astype(dtype)
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], name="flat", axis=1),
        helper.make_node("Gemm", ["f", "W1", "c1"], ["z1"], name="fc1", transB=1, alpha=0.5,
                         beta=2.0),
        helper.make_node("Relu", ["z1"], ["a1"], name="relu1"),
        helper.make_node("MatMul", ["a1", "B2"], ["m2"], name="fc2"),
        helper.make_node("Add", ["c2", "m2"], ["z2"], name="fc2_bias"),
        helper.make_node("Relu", ["z2"], ["a2"], name="relu2"),
        helper.make_node("Identity", ["a2"], ["i2"], name="noop"),
        helper.make_node("Gemm", ["i2", "B3", "c3"], ["y"], name="fc3"),
    ]
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    model = _graph(nodes, {"W1": W1, "c1": c1, "B2": B2, "c2": c2, "B3": B3, "c3": c3},
                   elem=elem)
    ref = [(0.5 * W1.astype(np.float64), 2.0 * c1.astype(np.float64), "relu"),
           (B2.T, c2, "relu"), (B3.T, c3.reshape(-1), "identity")]
    return model, ref


@needs_onnx
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_onnx_mlp_is_exact(tmp_path, dtype):
    rng = layer_rng(11, 1)
    model, ref = _mlp_onnx(rng, dtype)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    g = load_target(path, box=BOX)
    assert g.widths == (3, 4, 5, 2)
    assert [layer.activation for layer in g.layers] == ["relu", "relu", "identity"]
    for _ in range(5):
        x = [Fraction(int(v), 64) for v in rng.integers(-64, 65, size=3)]
        assert [_q(v) for v in g.evaluate(x)] == _fwd(ref, x)
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    X = rng.uniform(-1, 1, size=(20, 3)).astype(dtype)
    got = sess.run(None, {"x": X})[0]
    exact = np.array([[float(v) for v in g.evaluate([Fraction(float(t)) for t in row])]
                      for row in X])
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert np.max(np.abs(got - exact)) <= tol * max(1.0, np.max(np.abs(exact)))


@needs_onnx
@pytest.mark.parametrize("op,attrs", [("Tanh", {}), ("Sigmoid", {}), ("Gelu", {}),
                                      ("LeakyRelu", {"alpha": 0.1})])
def test_onnx_unsupported_activation_named(tmp_path, op, attrs):
    """An activation inside the network is refused by name (a final Sigmoid would be a
    classifier head: tests/model/test_interop_heads.py)."""
    rng = layer_rng(2, 1)
    nodes = [helper.make_node("Gemm", ["x", "W"], ["z"], name="fc", transB=1),
             helper.make_node(op, ["z"], ["a"], name="act_1", **attrs),
             helper.make_node("Gemm", ["a", "W2"], ["y"], name="fc2", transB=1)]
    model = _graph(nodes, {"W": rng.normal(size=(2, 3)).astype(np.float32),
                           "W2": rng.normal(size=(2, 2)).astype(np.float32)})
    with pytest.raises(InputError, match=rf"'act_1' \({op}\) is not supported: .*retrain"
                                         rf"|'act_1' \({op}\) is not supported: .*only Relu"
                                         rf"|'act_1' \({op}\) is not supported: .*final"):
        target_from_onnx(model, [0] * 3, [1] * 3)


@needs_onnx
def test_onnx_structural_refusals():
    W = np.ones((2, 3), dtype=np.float32)
    cases = [
        ([helper.make_node("Relu", ["x"], ["r"], name="r0"),
          helper.make_node("Gemm", ["r", "W"], ["y"], name="fc", transB=1)],
         {"W": W}, "does not directly follow a linear layer"),
        ([helper.make_node("Add", ["x", "b"], ["y"], name="shift")],
         {"b": np.ones(3, dtype=np.float32)}, "not followed by a linear layer to fold into"),
        ([helper.make_node("Gemm", ["x", "W"], ["y"], name="fc", transA=1)],
         {"W": W}, "transA"),
        ([helper.make_node("Flatten", ["x"], ["f"], name="fl", axis=2),
          helper.make_node("Gemm", ["f", "W"], ["y"], name="fc", transB=1)],
         {"W": W}, "axis = 1"),
        ([helper.make_node("Gemm", ["x", "W"], ["z"], name="fc", transB=1),
          helper.make_node("Gemm", ["x", "W"], ["y"], name="branch", transB=1)],
         {"W": W}, "'fc' \\(Gemm\\) does not lead to the output"),
        ([helper.make_node("Identity", ["x"], ["y"], name="only")], {}, "no Gemm or MatMul"),
    ]
    for nodes, inits, message in cases:
        with pytest.raises(InputError, match=message):
            target_from_onnx(_graph(nodes, inits, d_out=2), [0] * 3, [1] * 3)
    # a weight computed at run time (a second graph input) is not a stored constant
    extra = helper.make_tensor_value_info("W", TensorProto.FLOAT, [2, 3])
    with pytest.raises(InputError, match="data inputs"):
        target_from_onnx(_graph([helper.make_node("Gemm", ["x", "W"], ["y"], name="fc",
                                                  transB=1)], {}, extra_inputs=[extra]),
                         [0] * 3, [1] * 3)


@needs_onnx
def test_onnx_file_needs_box_and_refuses_activations(tmp_path, capsys):
    model, _ = _mlp_onnx(layer_rng(1, 1))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(InputError, match="pass --box"):
        load_target(path)
    with pytest.raises(InputError, match="records its activations itself"):
        load_target(path, box=BOX, activations="relu,relu,identity")
    (tmp_path / "junk.onnx").write_bytes(b"\x00not protobuf\xff" * 5)
    assert main(["certify", "--target", str(tmp_path / "junk.onnx"), "--box", "0:1",
                 "--out", str(tmp_path / "c.json")]) == 2
    assert "not an ONNX model" in capsys.readouterr().err


@needs_onnx
def test_cli_certifies_an_onnx_model(tmp_path, capsys):
    from exactnorm.certificate import expand_document, load_certificate

    rng = layer_rng(5, 1)
    W = rng.normal(size=(3, 2)).astype(np.float32)
    V = rng.normal(size=(1, 3)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "W"], ["z"], name="fc1", transB=1),
             helper.make_node("Relu", ["z"], ["a"], name="r"),
             helper.make_node("Gemm", ["a", "V"], ["y"], name="fc2", transB=1)]
    onnx.save(_graph(nodes, {"W": W, "V": V}, d_in=2, d_out=1), tmp_path / "m.onnx")
    out = tmp_path / "c.json"
    assert main(["certify", "--target", str(tmp_path / "m.onnx"), "--box", "-1:1",
                 "--out", str(out)]) == 0
    doc = expand_document(load_certificate(out))
    assert [[_q(v) for v in row] for row in doc["target"]["layers"][0]["weight"]] == [
        [Fraction(float(v)) for v in row] for row in W]
    assert "VALID" in capsys.readouterr().out


@needs_onnx
def test_missing_onnx_names_the_extra(tmp_path, monkeypatch, capsys):
    model, _ = _mlp_onnx(layer_rng(1, 1))
    onnx.save(model, tmp_path / "m.onnx")
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'exactnorm\[onnx\]'"):
        load_target(tmp_path / "m.onnx", box=BOX)
    assert main(["certify", "--target", str(tmp_path / "m.onnx"), "--box", "0:1",
                 "--out", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exactnorm[onnx]" in err


# --------------------------------------------------------------------------- boxes, activations


def test_box_given_twice_is_refused(tmp_path):
    from exactnorm.certificate import save_target
    from exactnorm.model.targets import demo_target

    save_target(demo_target(), tmp_path / "t.json")
    with pytest.raises(InputError, match="own 'domain' and box was given"):
        load_target(tmp_path / "t.json", box=BOX)
    np.savez(tmp_path / "w.npz", W1=np.ones((1, 2)), b1=np.zeros(1), lower=np.zeros(2),
             upper=np.ones(2))
    with pytest.raises(InputError, match="own bounds"):
        load_target(tmp_path / "w.npz", box=BOX)
    with pytest.raises(InputError, match="applies to state dicts"):
        load_target(tmp_path / "w.npz", activations="identity")


@pytest.mark.parametrize("declared", ["tanh,identity", "relu,gelu", "Sigmoid,identity",
                                      "relu,softmax"])
def test_state_dict_unsupported_activation(tmp_path, declared):
    np.savez(tmp_path / "sd.npz", **{"0.weight": np.ones((2, 2)), "0.bias": np.zeros(2),
                                     "2.weight": np.ones((1, 2)), "2.bias": np.zeros(1)})
    bad = [a for a in declared.split(",") if a.lower() not in ("relu", "identity")][0]
    with pytest.raises(InputError, match=rf"'{bad.lower()}' .* not piecewise linear"):
        load_target(tmp_path / "sd.npz", box=BOX, activations=declared)
    with pytest.raises(InputError, match="2 activations declared for 2|3 activations declared"):
        load_target(tmp_path / "sd.npz", box=BOX, activations="relu,relu,identity")


def test_custom_module_npz_names_its_key(tmp_path):
    """A state dict of a custom module (not nn.Sequential) is named as such, not 'no W1'."""
    np.savez(tmp_path / "custom.npz", **{"fc1.weight": np.ones((2, 2)), "fc1.bias": np.zeros(2)})
    with pytest.raises(InputError, match="'fc1.weight' is not '<index>.weight'.*nn.Sequential"):
        load_target(tmp_path / "custom.npz", box=BOX, activations="relu")


def test_relu_after_the_last_layer_is_certified_as_declared(tmp_path):
    from exactnorm import api

    np.savez(tmp_path / "sd.npz", **{"0.weight": np.array([[1.0, 2.0], [-1.0, 0.5]]),
                                     "0.bias": np.zeros(2), "2.weight": np.array([[1.0, -1.0]]),
                                     "2.bias": np.array([-0.25])})
    g = load_target(tmp_path / "sd.npz", box=BOX, activations="relu,relu")
    doc = api.certificate_document(api.certify(g, seed=0))
    assert api.check(doc).ok and api.check(doc, pure=True).ok
    assert [L["activation"] for L in doc["target"]["layers"]] == ["relu", "relu"]
    # at x = (-1, 1): hidden relu(1·-1 + 2·1, -1·-1 + 0.5·1) = (1, 1.5); out relu(-0.75) = 0
    assert [_q(v) for v in g.evaluate([-1, 1])] == [0]


# --------------------------------------------------------------------------- PyTorch .pt


def _torch_mlp(torch, act_cls, last_relu=False):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(3, 4), act_cls(), torch.nn.Linear(4, 2)]
    if last_relu:
        layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).double()


def test_pt_state_dict_exact_and_declared(tmp_path):
    torch = pytest.importorskip("torch")
    model = _torch_mlp(torch, torch.nn.ReLU, last_relu=True)
    path = tmp_path / "m.pt"
    torch.save(model.state_dict(), path)
    with pytest.raises(InputError, match="does not record its activations.*--activations"):
        load_target(path, box=BOX)
    # the trailing ReLU is invisible in the state dict: the declaration says it is there
    g = load_target(path, box=BOX, activations="relu,relu")
    sd = {k: v.numpy() for k, v in model.state_dict().items()}
    ref = [(sd["0.weight"], sd["0.bias"], "relu"), (sd["2.weight"], sd["2.bias"], "relu")]
    rng = layer_rng(3, 1)
    X = rng.uniform(-1, 1, size=(6, 3))
    with torch.no_grad():
        pred = model(torch.from_numpy(X)).numpy()
    for x, p in zip(X, pred):
        xq = [Fraction(float(v)) for v in x]
        exact = [_q(v) for v in g.evaluate(xq)]
        assert exact == _fwd(ref, xq)
        assert np.allclose([float(v) for v in exact], p, rtol=1e-12, atol=1e-14)
    # declared inside the file, with its box
    torch.save({**model.state_dict(), "activations": ["relu", "relu"],
                "lower": torch.zeros(3), "upper": torch.ones(3)}, tmp_path / "d.pt")
    g2 = load_target(tmp_path / "d.pt")
    assert [layer.activation for layer in g2.layers] == ["relu", "relu"]
    assert [_q(v) for v in g2.upper] == [1, 1, 1]
    with pytest.raises(InputError, match="own bounds .* box was given too"):
        load_target(tmp_path / "d.pt", box=BOX)


def test_pt_refusals(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    model = _torch_mlp(torch, torch.nn.Tanh)
    torch.save(model.state_dict(), tmp_path / "tanh.pt")
    with pytest.raises(InputError, match="'tanh' of Linear layer 1 is not piecewise linear"):
        load_target(tmp_path / "tanh.pt", box=BOX, activations="tanh,identity")
    (tmp_path / "junk.pt").write_bytes(b"PK\x03\x04 not a zip at all")
    with pytest.raises(InputError, match="not a weights-only state dict"):
        load_target(tmp_path / "junk.pt", box=BOX, activations="relu,identity")
    torch.save([1, 2], tmp_path / "list.pt")
    with pytest.raises(InputError, match="holds a list, not a state dict"):
        load_target(tmp_path / "list.pt", box=BOX, activations="relu,identity")
    torch.save(model, tmp_path / "whole.pt")  # the pickled module, not its state dict
    with pytest.raises(InputError, match="not a weights-only state dict"):
        load_target(tmp_path / "whole.pt", box=BOX, activations="relu,identity")

    class Custom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(2, 1)

    torch.save(Custom().state_dict(), tmp_path / "custom.pt")
    with pytest.raises(InputError, match="'fc.weight' is not '<index>.weight'"):
        load_target(tmp_path / "custom.pt", box=BOX, activations="relu")
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingExtraError, match="needs torch"):
        load_target(tmp_path / "tanh.pt", box=BOX, activations="relu,identity")


def test_pt_without_torch_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "m.pt").write_bytes(b"whatever")
    monkeypatch.setitem(sys.modules, "torch", None)
    assert main(["certify", "--target", str(tmp_path / "m.pt"), "--box", "0:1",
                 "--activations", "relu", "--out", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install torch" in err


# --------------------------------------------------------------------------- scikit-learn


def _pipeline(scalers, activation="relu"):
    pytest.importorskip("sklearn")
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline

    rng = layer_rng(4, 1)
    X = rng.normal(loc=3.0, scale=5.0, size=(60, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + np.abs(X[:, 0])
    pipe = make_pipeline(*scalers, MLPRegressor(hidden_layer_sizes=(5,), activation=activation,
                                                random_state=0, max_iter=60))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, y)
    return pipe, X


def _scaled(pipe, x):
    """The scalers applied to a Fraction vector straight from their fitted arrays."""
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    v = list(x)
    for _, step in pipe.steps[:-1]:
        if isinstance(step, StandardScaler):
            v = [(vi - Fraction(float(m))) / Fraction(float(s))
                 for vi, m, s in zip(v, step.mean_, step.scale_)]
        elif isinstance(step, MinMaxScaler):
            v = [vi * Fraction(float(s)) + Fraction(float(m))
                 for vi, s, m in zip(v, step.scale_, step.min_)]
    return v


@pytest.mark.parametrize("kinds", [("standard",), ("minmax",), ("standard", "minmax")])
def test_sklearn_pipeline_folds_scalers_exactly(kinds):
    pytest.importorskip("sklearn")
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    scalers = [StandardScaler() if k == "standard" else MinMaxScaler() for k in kinds]
    pipe, X = _pipeline(scalers)
    lo, hi = X.min(axis=0), X.max(axis=0)
    g = target_from_sklearn(pipe, lo, hi)
    mlp = pipe.steps[-1][1]
    ref = [(C.T, b, act)
           for C, b, act in zip(mlp.coefs_, mlp.intercepts_, ["relu", "identity"])]
    for x in X[:6]:
        xq = [Fraction(float(v)) for v in x]
        assert [_q(v) for v in g.evaluate(xq)] == _fwd(ref, _scaled(pipe, xq))
    pred = pipe.predict(X[:6])
    exact = [float(g.evaluate([Fraction(float(v)) for v in x])[0]) for x in X[:6]]
    assert np.allclose(exact, pred, rtol=1e-10, atol=1e-10)
    # the box stays in raw coordinates; given in scaled coordinates it is mapped back exactly
    assert [_q(v) for v in g.lower] == [Fraction(float(v)) for v in lo]
    s_lo, s_hi = _scaled(pipe, [Fraction(float(v)) for v in lo]), _scaled(
        pipe, [Fraction(float(v)) for v in hi])
    g_scaled = target_from_sklearn(pipe, s_lo, s_hi, box_space="scaled")
    assert g_scaled.lower == g.lower and g_scaled.upper == g.upper


def test_sklearn_refusals():
    pytest.importorskip("sklearn")
    from sklearn.decomposition import PCA
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    pipe, X = _pipeline([PCA(n_components=3)])
    with pytest.raises(InputError, match="'pca' is a PCA; only StandardScaler and MinMaxScaler"):
        target_from_sklearn(pipe, X.min(0), X.max(0))
    pipe, X = _pipeline([MinMaxScaler(clip=True)])
    with pytest.raises(InputError, match="clip=True"):
        target_from_sklearn(pipe, X.min(0), X.max(0))
    for activation in ("tanh", "logistic", "identity"):
        pipe, X = _pipeline([StandardScaler()], activation=activation)
        with pytest.raises(InputError, match=f"activation '{activation}'.*relu MLPs only"):
            target_from_sklearn(pipe, X.min(0), X.max(0))
    unfitted = make_pipeline(StandardScaler(), MLPRegressor())
    with pytest.raises(InputError, match="MLPRegressor is not fitted"):
        target_from_sklearn(unfitted, [0] * 3, [1] * 3)
    with pytest.raises(InputError, match="box_space"):
        target_from_sklearn(unfitted, [0] * 3, [1] * 3, box_space="other")


# --------------------------------------------------------------------------- the example


@needs_onnx
def test_interop_roundtrip_example():
    """examples/interop_roundtrip.py: every import certifies, f = g exactly, exports close."""
    pytest.importorskip("sklearn")
    pytest.importorskip("onnxruntime")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "interop_roundtrip.py"
    spec = importlib.util.spec_from_file_location("interop_roundtrip", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    facts = module.main(hidden=4, max_iter=30, torch_steps=3, n_points=8, verbose=False)
    assert facts["onnx_import_is_the_file_exactly"]
    assert 0 < facts["onnx_file_vs_sklearn_weights"] < 1e-12
    assert facts["sklearn_predict_vs_exact"] < 1e-12
    for name in ("sklearn", "onnx", "state_dict"):
        r = facts[name]
        assert r["valid"] and r["f_equals_g_exactly"]
        for kind, err in r["max_errors"].items():
            assert err < (1e-3 if "float32" in kind else 1e-9), (name, kind, err)


def test_api_and_cli_read_the_same_state_dict(tmp_path, capsys):
    """api.load_target goes through the CLI's loader: same file, same declaration, same g."""
    from exactnorm import api

    arrays = {"0.weight": np.array([[0.5, -1.0], [2.0, 0.25]]), "0.bias": np.array([0.1, 0.0]),
              "2.weight": np.array([[1.0, -3.0]]), "2.bias": np.array([0.5])}
    np.savez(tmp_path / "sd.npz", **arrays)
    with pytest.raises(InputError, match="does not record its activations"):
        api.load_target(tmp_path / "sd.npz", box=(-1, 1))
    g = api.load_target(tmp_path / "sd.npz", box=(-1, 1), activations="relu,identity")
    assert g == load_target(tmp_path / "sd.npz", box=BOX, activations="relu,identity")
    out = tmp_path / "c.json"
    assert main(["certify", "--target", str(tmp_path / "sd.npz"), "--box", "-1:1",
                 "--activations", "relu,identity", "--out", str(out)]) == 0
    from exactnorm.certificate import expand_document, load_certificate, read_target

    assert read_target(expand_document(load_certificate(out))) == g
    capsys.readouterr()
