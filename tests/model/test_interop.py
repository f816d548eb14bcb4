"""Real models in: scikit-learn MLPs, PyTorch state dicts as .npz, load_target."""

from __future__ import annotations

import importlib.util
import json
import sys
import warnings
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import exactnorm.model.interop
import exactnorm.outputs.export
import exactnorm.outputs.report
from exactnorm.api import load_target
from exactnorm.certificate import expand_document, save_target
from exactnorm.errors import InputError, NumberFormatError
from exactnorm.exact.linalg import to_fractions
from exactnorm.exact.sampling import layer_rng
from exactnorm.model.interop import is_state_dict_keys, target_from_sklearn, target_from_state_dict
from exactnorm.model.targets import demo_target

ROOT = Path(__file__).resolve().parents[2]


def _fraction_forward(weights, biases, acts, x):
    """Independent exact forward pass with Fractions straight from float64 arrays."""
    a = [Fraction(v) for v in x]
    for W, b, act in zip(weights, biases, acts):
        z = [sum((Fraction(float(w)) * ak for w, ak in zip(row, a)), Fraction(0))
             + Fraction(float(bk)) for row, bk in zip(W, b)]
        a = [max(v, Fraction(0)) for v in z] if act == "relu" else z
    return a


def _load_example():
    path = ROOT / "examples" / "sklearn_mlp.py"
    spec = importlib.util.spec_from_file_location("sklearn_mlp", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sklearn_example_certifies_and_checks_exactly():
    pytest.importorskip("sklearn")
    result = _load_example().main(hidden=(4,), n_features=3, max_iter=40, verbose=False)
    assert result["target_widths"] == (3, 4, 1)
    assert result["checker_pure_ok"] and result["checker_ok"], result["checker_message"]
    assert result["exact_agree"] and result["export_json_agree"] and result["points"] == 5
    model, doc, points = result["model"], result["certificate"], result["test_points"]
    doc = expand_document(doc)
    # the box is the data's min/max, each float as its exact dyadic rational
    from sklearn.datasets import load_diabetes

    X = load_diabetes(return_X_y=True)[0][:, :3]
    assert [Fraction(str(v)) for v in doc["domain"]["lower"]] == [Fraction(v) for v in X.min(0)]
    assert [Fraction(str(v)) for v in doc["domain"]["upper"]] == [Fraction(v) for v in X.max(0)]
    # the exact outputs equal an independent Fraction forward pass over the model's own arrays
    acts = ["relu", "identity"]
    ref = [_fraction_forward([C.T for C in model.coefs_], model.intercepts_, acts, x)[0]
           for x in points]
    assert [Fraction(v) for v in result["exact_outputs"]] == ref
    # floats are not the certified object: they agree with scikit-learn to float precision
    pred = model.predict(points)
    assert np.allclose(result["pred_g_float"], pred, rtol=1e-13, atol=0)
    assert np.allclose(result["pred_export_float"], pred, rtol=1e-12, atol=0)
    assert result["max_rel_err_float_export"] < 1e-12
    assert "NOT certified" in result["export_warning"]


def test_example_without_sklearn_is_an_input_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)  # import → ImportError
    with pytest.raises(InputError, match=r"pip install 'exactnorm\[sklearn\]'"):
        _load_example().main(verbose=False)


def test_sklearn_target_is_the_model_exactly():
    pytest.importorskip("sklearn")
    from sklearn.neural_network import MLPClassifier

    rng = layer_rng(7, 1)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > X[:, 1]).astype(int)
    model = MLPClassifier(hidden_layer_sizes=(4, 3), random_state=0, max_iter=50)
    with warnings.catch_warnings():  # not converged in 50 iterations: irrelevant here
        warnings.simplefilter("ignore")
        model.fit(X, y)
    g = target_from_sklearn(model, [-3, -3], [3, 3])
    assert g.widths == (2, 4, 3, 1)
    assert [layer.activation for layer in g.layers] == ["relu", "relu", "identity"]
    # weights are the transposed coefs_, each float as the exact dyadic rational it denotes
    for layer, C, b in zip(g.layers, model.coefs_, model.intercepts_):
        assert to_fractions(layer.weight) == [[Fraction(float(v)) for v in row] for row in C.T]
        assert list(map(Fraction, map(str, layer.bias))) == [Fraction(float(v)) for v in b]
    # g is the logits: compare with an independent Fraction forward pass and with sklearn
    x = X[0]
    exact = g.evaluate([Fraction(float(v)) for v in x])
    ref = _fraction_forward([C.T for C in model.coefs_], model.intercepts_,
                            ["relu", "relu", "identity"], x)
    assert [Fraction(str(v)) for v in exact] == ref
    prob = 1 / (1 + np.exp(-float(ref[0])))
    assert np.isclose(prob, model.predict_proba(X[:1])[0, 1], rtol=1e-12)


@pytest.mark.parametrize("activation", ["tanh", "logistic"])
def test_non_piecewise_linear_activation_refused(activation):
    model = SimpleNamespace(coefs_=[np.ones((2, 2)), np.ones((2, 1))],
                            intercepts_=[np.zeros(2), np.zeros(1)], activation=activation)
    with pytest.raises(InputError, match="not piecewise linear"):
        target_from_sklearn(model, [0, 0], [1, 1])


def test_unfitted_model_refused():
    with pytest.raises(InputError, match="not fitted"):
        target_from_sklearn(SimpleNamespace(activation="relu"), [0], [1])


def _state_dict(widths, seed):
    """nn.Sequential(Linear, ReLU, …) keys: Linear modules at 0, 2, 4, … (10 sorts after 2)."""
    rng = layer_rng(seed, 2)
    arrays = {}
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
        arrays[f"{2 * i}.weight"] = rng.normal(size=(d_out, d_in))
        arrays[f"{2 * i}.bias"] = rng.normal(size=d_out).astype(np.float32)
    return arrays


def test_state_dict_npz_round_trip(tmp_path):
    widths = [3, 2, 4, 2, 3, 2, 1]  # six Linear layers: keys 0 … 10
    arrays = _state_dict(widths, seed=3)
    path = tmp_path / "model.npz"
    np.savez(path, **arrays)
    g = load_target(path, box=(Fraction(-1), Fraction(2)),
                        activations="relu,relu,relu,relu,relu,identity")
    assert g.widths == tuple(widths)
    assert [layer.activation for layer in g.layers] == ["relu"] * 5 + ["identity"]
    assert g.lower == (-1,) * 3 and g.upper == (2,) * 3
    order = [f"{2 * i}" for i in range(6)]
    rng = layer_rng(3, 3)
    for _ in range(4):
        x = rng.uniform(-1, 2, size=3)
        exact = g.evaluate([Fraction(float(v)) for v in x])
        ref = _fraction_forward([arrays[f"{k}.weight"] for k in order],
                                [arrays[f"{k}.bias"] for k in order],
                                ["relu"] * 5 + ["identity"], x)
        assert [Fraction(str(v)) for v in exact] == ref
    # the same arrays through the Python API, with explicit activations
    g2 = target_from_state_dict(dict(np.load(path)), [-1] * 3, [2] * 3,
                                activations=["identity"] * 6)
    assert [layer.weight for layer in g2.layers] == [layer.weight for layer in g.layers]


def test_state_dict_problems(tmp_path):
    arrays = _state_dict([2, 2, 1], seed=1)
    with pytest.raises(InputError, match="has no 'bias'"):
        target_from_state_dict({"0.weight": arrays["0.weight"]}, [0, 0], [1, 1])
    with pytest.raises(InputError, match="not '<index>.weight'"):
        target_from_state_dict({**arrays, "1.running_mean": np.zeros(2)}, [0, 0], [1, 1])
    path = tmp_path / "sd.npz"
    np.savez(path, **arrays)
    with pytest.raises(InputError, match="needs box LO:HI") as refused:
        load_target(path, activations="relu,identity")
    assert refused.value.parameter == "box"  # the command line says --box
    np.savez(tmp_path / "bn.npz", **arrays, **{"1.running_mean": np.zeros(2)})
    with pytest.raises(InputError, match="1.running_mean"):
        load_target(tmp_path / "bn.npz", box=(Fraction(0), Fraction(1)))
    assert is_state_dict_keys(list(arrays)) and not is_state_dict_keys(["W1", "b1"])
    assert not is_state_dict_keys([])


def test_load_target_reads_json_and_npz_files(tmp_path):
    g = demo_target()
    jpath = tmp_path / "t.json"
    save_target(g, jpath)
    assert load_target(jpath) == g
    npath = tmp_path / "w.npz"
    np.savez(npath, W1=np.array([[1.5, -2.0]]), b1=np.array([0.25]), lower=np.zeros(2),
             upper=np.ones(2))
    g2 = load_target(npath)
    assert [Fraction(str(v)) for v in g2.evaluate([1, 1])] == [Fraction(-1, 4)]
    with pytest.raises(InputError):
        load_target(tmp_path / "missing.npz")
    assert json.loads(jpath.read_text())["target"]["layers"][0]["activation"] == "relu"


def test_state_dict_reserved_keys(tmp_path):
    """lower/upper/activations in a state-dict npz mean what they mean in a W1, b1 file."""
    arrays = _state_dict([2, 3, 1], seed=5)
    path = tmp_path / "sd.npz"
    np.savez(path, lower=np.array([-0.5, 0.0]), upper=np.array([0.75, 3.0]),
             activations=np.array(["identity", "identity"]), **arrays)
    # two boxes: refused, never one silently ignored
    with pytest.raises(InputError, match="own bounds .* box was given too"):
        load_target(path, box=(Fraction(-9), Fraction(9)))
    with pytest.raises(InputError, match="declares its activations and --activations"):
        load_target(path, activations="relu,identity")
    g = load_target(path)
    assert [Fraction(str(v)) for v in g.lower + g.upper] == [Fraction(-1, 2), 0, Fraction(3, 4), 3]
    assert [layer.activation for layer in g.layers] == ["identity", "identity"]
    # identity everywhere: g is one affine map, W2 (W1 x + b1) + b2, checked with Fractions
    x = [Fraction(1, 3), Fraction(5, 7)]
    W1 = [[Fraction(float(v)) for v in row] for row in arrays["0.weight"]]
    W2 = [[Fraction(float(v)) for v in row] for row in arrays["2.weight"]]
    b1 = [Fraction(float(v)) for v in arrays["0.bias"]]
    b2 = [Fraction(float(v)) for v in arrays["2.bias"]]
    h = [sum(w * xi for w, xi in zip(row, x)) + b for row, b in zip(W1, b1)]
    out = [sum(w * hi for w, hi in zip(row, h)) + b for row, b in zip(W2, b2)]
    assert [Fraction(str(v)) for v in g.evaluate(x)] == out
    assert is_state_dict_keys(["0.weight", "0.bias", "lower", "upper", "activations"])
    assert not is_state_dict_keys(["lower", "upper"])


def test_state_dict_npz_bad_reserved_keys(tmp_path):
    arrays = _state_dict([2, 2, 1], seed=6)
    np.savez(tmp_path / "a.npz", activations=np.array(["relu"]), **arrays)
    with pytest.raises(InputError, match="one per Linear layer"):
        load_target(tmp_path / "a.npz", box=(Fraction(0), Fraction(1)))
    np.savez(tmp_path / "b.npz", lower=np.zeros(2), **arrays)
    with pytest.raises(InputError, match="only one of lower/upper"):
        load_target(tmp_path / "b.npz", box=(Fraction(0), Fraction(1)),
                        activations="relu,identity")
    np.savez(tmp_path / "c.npz", **{**arrays, "0.weight": np.ones((2, 2), dtype=np.float16)})
    assert load_target(tmp_path / "c.npz", box=(Fraction(0), Fraction(1)),
                           activations=["relu", "identity"]).widths == (2, 2, 1)


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="long double is float64 here")
def test_long_double_refused():
    arrays = {"0.weight": np.ones((1, 2), dtype=np.longdouble) / 3, "0.bias": np.zeros(1)}
    with pytest.raises(NumberFormatError, match="float64"):
        target_from_state_dict(arrays, [0, 0], [1, 1], ["identity"])


@pytest.mark.parametrize("module", [exactnorm.model.interop, exactnorm.outputs.export,
                                    exactnorm.outputs.report])
def test_doctests(module):
    import doctest

    failures, tried = doctest.testmod(module, verbose=False)
    assert tried > 0 and failures == 0


def test_cli_certifies_a_state_dict(tmp_path, capsys):
    """``exactnorm certify --target sd.npz --box LO:HI`` goes through load_target."""
    from exactnorm.certificate import expand_document, load_certificate
    from exactnorm.cli import main

    arrays = _state_dict([2, 3, 1], seed=9)
    np.savez(tmp_path / "sd.npz", **arrays)
    out = tmp_path / "c.json"
    assert main(["certify", "--force", "--target", str(tmp_path / "sd.npz"), "--box", "-1:1/2",
                 "--activations", "relu,identity", "--out", str(out)]) == 0
    doc = expand_document(load_certificate(out))
    assert [Fraction(str(v)) for v in doc["domain"]["upper"]] == [Fraction(1, 2)] * 2
    assert to_fractions(target_from_state_dict(arrays, [-1] * 2, [1] * 2,
                                               "relu,identity").layers[0].weight) == [
        [Fraction(str(v)) for v in row] for row in doc["target"]["layers"][0]["weight"]]
    assert main(["certify", "--force", "--target", str(tmp_path / "sd.npz"), "--activations",
                 "relu,identity", "--out", str(out)]) == 2
    # activations are never assumed: without a declaration the state dict is refused
    assert main(["certify", "--force", "--target", str(tmp_path / "sd.npz"), "--box", "-1:1",
                 "--out", str(out)]) == 2
    assert "does not record its activations" in capsys.readouterr().err


def test_both_npz_readers_treat_box_and_activations_alike(tmp_path):
    """A lone ``lower`` (or the wrong number of activations) is refused by the W1, b1 reader
    exactly as by the state-dict reader; before, the W1 reader ignored a lone ``lower``."""
    from exactnorm.api import load_target

    W, b = np.array([[1.0, 2.0]]), np.array([0.5])
    plain = tmp_path / "plain.npz"
    np.savez(plain, W1=W, b1=b, lower=np.zeros(2))
    state = tmp_path / "state.npz"
    np.savez(state, **{"0.weight": W, "0.bias": b, "lower": np.zeros(2)})
    for path in (plain, state):
        with pytest.raises(InputError, match="only one of lower/upper"):
            load_target(path, box=(Fraction(0), Fraction(1)))
    np.savez(plain, W1=W, b1=b, activations=np.array(["relu", "relu"]))
    np.savez(state, **{"0.weight": W, "0.bias": b, "activations": np.array(["relu", "relu"])})
    for path in (plain, state):
        with pytest.raises(InputError, match="activations must be a 1-D array of 1 strings"):
            load_target(path, box=(Fraction(0), Fraction(1)))
    np.savez(plain, W1=W, b1=b)
    with pytest.raises(InputError, match="needs box") as info:
        load_target(plain)
    assert info.value.parameter == "box"
