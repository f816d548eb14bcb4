"""exactnorm capacity on networks trained on scikit-learn's digits (the issue's acceptance cases),
the given-network readers (ONNX with BatchNormalization, state dicts), files whose layers read
other nodes or add skips (read as written: the right word or UNDECIDED, never a word about
another network), the exact BatchNorm document, the command line and ``--best``. Every verdict
is cross-checked by an independent path: both checker arithmetics, exact evaluation of the
certified network against the target, SymPy, onnxruntime."""

from __future__ import annotations

import json
import random
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy
from flint import fmpq

from exactnorm.analysis.capacity import capacity_profile, decide
from exactnorm.analysis.capacity_best import best_affine
from exactnorm.api import capacity, load_frozen, load_target
from exactnorm.certificate import load_certificate, read_frozen
from exactnorm.cli import main
from exactnorm.model.batchnorm import as_target, batchnorm_parameters, retuned
from exactnorm.model.box import Box
from exactnorm.model.interop import frozen_from_onnx, frozen_from_state_dict
from exactnorm.model.network import TargetNetwork
from exactnorm.outputs.export import read_exported_json
from tests.helpers import both, given, refuse_every_mutation

onnx = pytest.importorskip("onnx")
sklearn = pytest.importorskip("sklearn")


# ------------------------------------------------------------------ ONNX models with BatchNorm


def mlp_onnx(path: Path, layers: list[dict], dtype: type = np.float32) -> Path:
    """An ONNX MLP: per layer ``W`` (out × in), ``b``, optional ``bn`` = (γ, β, μ, σ²), and
    ``relu``; float32 or float64 tensors."""
    from onnx import TensorProto, helper, numpy_helper

    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    nodes, inits, current = [], [], "x"
    for k, layer in enumerate(layers):
        W, b = np.asarray(layer["W"], dtype), np.asarray(layer["b"], dtype)
        inits += [numpy_helper.from_array(W, f"W{k}"), numpy_helper.from_array(b, f"b{k}")]
        nodes.append(helper.make_node("Gemm", [current, f"W{k}", f"b{k}"], [f"z{k}"],
                                      transB=1, name=f"fc{k}"))
        current = f"z{k}"
        if layer.get("bn") is not None:
            names = [f"{n}{k}" for n in ("g", "be", "mu", "var")]
            inits += [numpy_helper.from_array(np.asarray(v, dtype), n)
                      for v, n in zip(layer["bn"], names)]
            nodes.append(helper.make_node("BatchNormalization", [current, *names], [f"n{k}"],
                                          epsilon=1e-5, name=f"bn{k}"))
            current = f"n{k}"
        if layer.get("relu"):
            nodes.append(helper.make_node("Relu", [current], [f"r{k}"]))
            current = f"r{k}"
    d0 = np.asarray(layers[0]["W"]).shape[1]
    d_out = np.asarray(layers[-1]["W"]).shape[0]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", elem, [None, d0])],
                              [helper.make_tensor_value_info(current, elem, [None, d_out])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    path.write_bytes(model.SerializeToString())
    return path


def _bn(rng: np.random.Generator, n: int) -> tuple:
    return (rng.uniform(0.5, 2, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n),
            rng.uniform(0.1, 3, n))


def test_batchnorm_reparametrizes_and_the_readers_agree(tmp_path):
    """The given network's own function (BatchNorm folded) equals onnxruntime's and the target
    reader's reading of the same file exactly; the state dict of the same network reads to the
    same matrices; the BatchNorm records are the stored numbers exactly (ε the float32 the
    attribute holds); re-tuned (γ, β) give back the BatchNorm parameters."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(0)
    W1, b1, W2, b2 = rng.normal(size=(5, 3)), rng.normal(size=5), rng.normal(size=(2, 5)), \
        rng.normal(size=2)
    bn1, bn2 = _bn(rng, 5), _bn(rng, 2)
    path = mlp_onnx(tmp_path / "m.onnx", [{"W": W1, "b": b1, "bn": bn1, "relu": True},
                                          {"W": W2, "b": b2, "bn": bn2}], np.float64)
    net = load_frozen(path)
    assert net.node_dims == (3, 5, 2)
    assert [layer.activation for layer in net.layers] == ["relu", "identity"]
    assert [norm is not None for norm in net.normalizations] == [True, True]
    eps = net.normalizations[0].eps
    assert eps == Fraction(float(np.float32(1e-5))) and eps != Fraction(1, 10**5)
    assert net.normalizations[0].mean == tuple(Fraction(float(x)) for x in bn1[2])
    box = Box.of("-1:1")
    g = as_target(net, box)
    X = rng.uniform(-1, 1, size=(40, 3))
    ref = ort.InferenceSession(str(path)).run(None, {"x": X})[0]
    assert np.allclose(g.evaluate_float(X), ref, rtol=1e-12, atol=1e-12)
    # the one target reader folds the same BatchNormalization into the same exact layers
    assert load_target(path, box="-1:1") == g
    arrays = {"0.weight": W1, "0.bias": b1, "1.weight": bn1[0], "1.bias": bn1[1],
              "1.running_mean": bn1[2], "1.running_var": bn1[3], "3.weight": W2, "3.bias": b2,
              "4.weight": bn2[0], "4.bias": bn2[1], "4.running_mean": bn2[2],
              "4.running_var": bn2[3]}
    np.savez(tmp_path / "m.npz", **arrays)
    sd = load_frozen(tmp_path / "m.npz", activations="relu,identity")
    assert [x.weight for x in sd.layers] == [x.weight for x in net.layers]
    # ε: the ONNX attribute is a float32 1e-5, a state dict does not store it (PyTorch's 1e-5)
    assert sd.normalizations[0].eps == Fraction(1e-5)
    assert np.allclose(as_target(sd, box).evaluate_float(X), ref, rtol=1e-9)
    # the BatchNorm parameters that realize an exact (γ, β), and back
    gb, bb = batchnorm_parameters(net, 1, net.layers[0].gamma, net.layers[0].beta)
    assert np.allclose(gb, bn1[0], rtol=1e-12) and np.allclose(bb, bn1[1], atol=1e-12)


def test_state_dicts_need_their_activations(tmp_path):
    np.savez(tmp_path / "m.npz", **{"0.weight": np.ones((2, 2)), "0.bias": np.zeros(2)})
    with pytest.raises(Exception, match="activations"):
        load_frozen(tmp_path / "m.npz")
    assert frozen_from_state_dict({"0.weight": np.ones((2, 2)), "0.bias": np.zeros(2)},
                                  "identity").node_dims == (2, 2)


# ------------------------------------------------------------------ input and skip (issue 38)


def _document(layers: list[dict], lower=(0, 0), upper=(1, 1)) -> dict:
    return {"domain": {"lower": list(lower), "upper": list(upper)},
            "target": {"layers": layers}}


#: a given chain 2 → 3 (relu) → 2 (identity)
GIVEN = _document([{"weight": [[1, 0], [0, 1], [1, 1]], "bias": [0, 0, 0], "activation": "relu"},
                   {"weight": [[1, 2, 3], [2, 0, 1]], "bias": [0, 0],
                    "activation": "identity"}])
#: layer 1 has a kink crossing the box (x1 = x2) parallel to no row of GIVEN's first layer
KINKED = {"weight": [[1, -1], [1, 1]], "bias": [0, 0], "activation": "relu"}


def _capacity_cli(tmp_path, capsys, frozen: dict, target: dict, *extra: str):
    (tmp_path / "frozen.json").write_text(json.dumps(frozen))
    (tmp_path / "target.json").write_text(json.dumps(target))
    out = tmp_path / "answer.json"
    code = main(["capacity", str(tmp_path / "frozen.json"), "--target",
                 str(tmp_path / "target.json"), "--out", str(out), "--force", *extra])
    return code, capsys.readouterr().out, out


def _points(g: TargetNetwork, n: int = 12) -> list[list[fmpq]]:
    rng = random.Random(5)
    pts = [list(g.lower), list(g.upper)]
    pts += [[lo + (hi - lo) * fmpq(rng.randint(0, 64), 64) for lo, hi in zip(g.lower, g.upper)]
            for _ in range(n)]
    return pts


def test_a_target_layer_that_reads_x_is_read_and_reached(tmp_path, capsys):
    """Target layer 2 reads x (``"input": 0``): the target is the affine map of layer 2, which
    the given network reaches. Read as a chain (the old reading), its layer-1 kink gave a false
    UNREACHABLE. Cross-check: the certificate's network equals the target *as written in the
    file* (layer 2 reading x) at box points, exactly."""
    target = _document([KINKED, {"weight": [[2, 3], [-1, "1/2"]], "bias": [1, -2],
                                 "activation": "identity", "input": 0}])
    code, text, out = _capacity_cli(tmp_path, capsys, GIVEN, target)
    assert (code, text.split(":")[0]) == (0, "REACHABLE"), text
    doc = load_certificate(out)
    assert both(doc).ok
    g = load_target(tmp_path / "target.json")
    assert not g.is_chain  # the file's wiring, read
    f = read_frozen(doc)
    for x in _points(g):
        assert f.evaluate(x) == g.evaluate(x)
    assert main(["check", str(out), "--both"]) == 0


def test_an_identity_skip_that_cancels_a_kink_is_not_called_unreachable(tmp_path, capsys):
    """Target layer 2 adds layer 1 back (an identity skip) and cancels its kink: a concrete
    tuning of the given network reaches it (checked exactly below, the oracle), so UNREACHABLE
    would be false; capacity does not decide targets with skips: UNDECIDED, exit 4."""
    target = _document([KINKED, {"weight": [[-1, 0], [0, 0]], "bias": [1, -2],
                                 "activation": "identity",
                                 "skip": {"from": 1, "kind": "identity",
                                          "weight": {"identity": 2}}}])
    code, text, out = _capacity_cli(tmp_path, capsys, GIVEN, target)
    g = load_target(tmp_path / "target.json")
    net = load_frozen(tmp_path / "frozen.json")
    reached = retuned(net, [[0, 0, 1], [0, 1]], [[0, 0, 0], [1, -2]], Box.of("0:1"))
    assert all(reached.evaluate(x) == g.evaluate(x) for x in _points(g)), "the oracle"
    assert (code, text.split(":")[0]) == (4, "UNDECIDED"), text
    assert "skip" in text.splitlines()[0] and not out.exists()


def test_a_given_layer_that_reads_x_is_not_read_as_a_chain(tmp_path, capsys):
    """The given network's layer 2 reads x: every tuning computes an affine map, so a target
    with a kink in the box is out of reach. Read as a chain (the old reading), the target was a
    rescaling of it and the verb wrote a REACHABLE certificate of a network that is not the
    given one; now it does not say REACHABLE and writes nothing."""
    given = _document([{"weight": [[1, 0], [0, 1]], "bias": [0, 0], "activation": "relu"},
                       {"weight": [[1, 2]], "bias": [0], "activation": "identity",
                        "input": 0}])
    # read as a chain, the target is the given network with its rows rescaled (2, 3; 2)
    target = _document([{"weight": [[2, 0], [0, 3]], "bias": [0, 0], "activation": "relu"},
                        {"weight": [[2, 4]], "bias": [0], "activation": "identity"}],
                       lower=(-1, -1))
    code, text, out = _capacity_cli(tmp_path, capsys, given, target)
    g = load_target(tmp_path / "target.json")
    # the oracle: g is not affine on the box (its midpoint value is not the mean of the ends)
    a, b, m = g.evaluate([-1, 0])[0], g.evaluate([1, 0])[0], g.evaluate([0, 0])[0]
    assert 2 * m != a + b
    net = load_frozen(tmp_path / "frozen.json")
    assert net.layers[1].input == 0  # read as written
    assert code == 4 and text.startswith("UNDECIDED: ") and "node 0" in text, text
    assert not out.exists()


# ------------------------------------------------------------------ the BatchNorm document


def test_batchnorm_capacity_document_is_exact_and_valid_everywhere(digits, tmp_path, capsys):
    """A trained 64-256-10 MLP with a BatchNormalization after each linear layer and the same
    network with its BatchNorm re-tuned: REACHABLE, and the document written holds no float
    (the float32 ε written as the rational it denotes): ``exactnorm check``, ``--pure`` and the
    exact export read it."""
    _, models = digits
    m = models["f256"]
    rng = np.random.default_rng(7)
    W1, W2, (b1, b2) = m.coefs_[0].T, m.coefs_[1].T, m.intercepts_
    bn1, bn2 = _bn(rng, 256), _bn(rng, 10)
    frozen = mlp_onnx(tmp_path / "frozen_bn.onnx",
                      [{"W": W1, "b": b1, "bn": bn1, "relu": True}, {"W": W2, "b": b2, "bn": bn2}])
    re1 = (rng.uniform(0.5, 2, 256), rng.uniform(-1, 1, 256), bn1[2], bn1[3])
    re2 = (rng.uniform(0.5, 2, 10), rng.uniform(-1, 1, 10), bn2[2], bn2[3])
    target = mlp_onnx(tmp_path / "retuned.onnx",
                      [{"W": W1, "b": b1, "bn": re1, "relu": True}, {"W": W2, "b": b2, "bn": re2}])
    out = tmp_path / "answer.json"
    assert main(["capacity", str(frozen), "--target", str(target), "--box", "0:1", "--out",
                 str(out)]) == 0
    said = capsys.readouterr().out
    assert said.startswith("REACHABLE") and "VALID (flint checker)" in said, said
    doc = load_certificate(out)  # strict: a JSON float anywhere is refused
    eps = doc["provenance"]["batchnorm"][0]["epsilon"]
    assert isinstance(eps, str) and Fraction(eps) == Fraction(float(np.float32(1e-5)))
    for args in (["check", str(out)], ["check", str(out), "--pure"]):
        assert main(args) == 0
        assert "\nVALID (" in "\n" + capsys.readouterr().out
    exported = tmp_path / "export.json"
    assert main(["export", str(out), "--format", "json", "--out", str(exported)]) == 0
    capsys.readouterr()
    assert read_exported_json(exported) == read_frozen(doc)


# ------------------------------------------------------------------ digits (the cases)


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """A frozen 64–256–10 and 64–1024–10 MLP trained on one half of the digits, a 64–32–10 MLP
    and a linear 64 → 10 classifier trained on the other half, as float32 ONNX/npz files."""
    from skl2onnx import to_onnx
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import RidgeClassifier
    from sklearn.neural_network import MLPClassifier

    X, y = load_digits(return_X_y=True)
    X = X / 16
    half = len(X) // 2
    out = tmp_path_factory.mktemp("digits")
    x0 = np.zeros((1, 64), dtype=np.float32)
    models = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, width, part, iters, seed in (("f256", 256, slice(0, half), 40, 0),
                                               ("f1024", 1024, slice(0, half), 12, 0),
                                               ("g32", 32, slice(half, None), 100, 1)):
            m = MLPClassifier(hidden_layer_sizes=(width,), max_iter=iters, random_state=seed)
            m.fit(X[part], y[part])
            models[name] = m
            (out / f"{name}.onnx").write_bytes(
                to_onnx(m, x0, options={"zipmap": False}).SerializeToString())
    lin = RidgeClassifier().fit(X[half:], y[half:])
    np.savez(out / "lin.npz", W1=lin.coef_.astype(np.float32),
             b1=lin.intercept_.astype(np.float32), activations=np.array(["identity"]))
    return out, models


def _agree(cert: dict, target: TargetNetwork, points: int = 8, seed: int = 0) -> None:
    """The certified network equals the target exactly at the box's corners (two) and at
    seeded rational interior points: independent of the checker."""
    f = read_frozen(cert)
    rng = random.Random(seed)
    d = len(target.lower)
    xs = [list(target.lower), list(target.upper)]
    xs += [[target.lower[t] + (target.upper[t] - target.lower[t]) * fmpq(rng.randint(0, 64), 64)
            for t in range(d)] for _ in range(points)]
    for x in xs:
        assert f.evaluate(x) == target.evaluate(x)


def test_profile_not_universal_at_width_256_universal_at_1024(digits):
    out, _ = digits
    (row,) = capacity(out / "f256.onnx").profile
    assert (row.c0, row.c1, row.c2, row.rank, row.universal) == (64, 256, 10, 256, False)
    assert row.needed == 640 and row.needed_tuned == 631 and "measure zero" in row.tuned
    (row,) = capacity(out / "f1024.onnx").profile
    assert (row.rank, row.universal, row.tuned) == (640, True, "universal")
    w = row.witness["lower_bound"]
    assert len(w["rows"]) == len(w["columns"]) == 640 and 1 <= w["determinant"] < w["prime"]


def test_linear_target_is_unreachable_from_width_256(digits):
    out, _ = digits
    r = capacity(out / "f256.onnx", box="0:1", target=out / "lin.npz")
    d = r.decision
    assert (r.word, d.witness, d.cls) == ("UNREACHABLE", "rank", "every")
    v = both(r.document)
    assert v.ok and v.facts["claim"] == "UNREACHABLE"
    assert len(r.document["witness"]["rows"]) == 256 + 10
    assert refuse_every_mutation(r.document, every=13) > 25


def test_batchnorm_retuning_of_the_frozen_network_is_reachable(digits, tmp_path):
    """The frozen 64–256–10 network with a BatchNormalization after each linear layer (running
    statistics drawn), and as target the same network with re-tuned BatchNorm scales and
    biases: REACHABLE, VALID in both arithmetics, exactly equal at box points, and the
    certificate's (γ, β) give back the target's BatchNorm parameters."""
    _, models = digits
    m = models["f256"]
    rng = np.random.default_rng(3)
    W1, W2 = m.coefs_[0].T, m.coefs_[1].T
    b1, b2 = m.intercepts_
    bn1, bn2 = _bn(rng, 256), _bn(rng, 10)
    frozen = mlp_onnx(tmp_path / "frozen.onnx", [{"W": W1, "b": b1, "bn": bn1, "relu": True},
                                                 {"W": W2, "b": b2, "bn": bn2}])
    re1 = (rng.uniform(-2, 2, 256), rng.uniform(-1, 1, 256), bn1[2], bn1[3])
    re2 = (rng.uniform(-2, 2, 10), rng.uniform(-1, 1, 10), bn2[2], bn2[3])
    target = mlp_onnx(tmp_path / "target.onnx", [{"W": W1, "b": b1, "bn": re1, "relu": True},
                                                 {"W": W2, "b": b2, "bn": re2}])
    r = capacity(frozen, box="0:1", target=target)
    assert r.word == "REACHABLE" and both(r.document).ok
    _agree(r.document, r.target)
    net = frozen_from_onnx(frozen)
    f = read_frozen(r.document)
    gb, bb = batchnorm_parameters(net, 1, f.layers[0].gamma, f.layers[0].beta)
    scale = np.asarray(re1[0], np.float32).astype(np.float64)
    assert np.allclose(gb, scale, rtol=1e-6), "γ_bn recovered from the certificate"
    assert np.allclose(bb, np.asarray(re1[1], np.float32), atol=1e-5)


def test_independent_mlp_is_unreachable_by_a_kink(digits):
    out, _ = digits
    r = capacity(out / "f256.onnx", box="0:1", target=out / "g32.onnx")
    assert (r.word, r.decision.witness, r.decision.cls) == ("UNREACHABLE", "kink", "every")
    doc = r.document
    assert both(doc).ok
    assert refuse_every_mutation(doc, every=17) > 30
    # the witness point lies on the target's kink, strictly inside the box
    x = [Fraction(int(n), int(doc["witness"]["point"]["den"]))
         for n in doc["witness"]["point"]["num"]]
    assert all(0 < v < 1 for v in x)
    neuron = doc["witness"]["neuron"]
    row, bias = r.target.layers[0].weight.tolist()[neuron], r.target.layers[0].bias[neuron]
    assert sum((fmpq(v.numerator, v.denominator) * w for v, w in zip(x, row)), bias) == 0


@pytest.mark.slow
def test_every_entry_of_the_digits_witnesses_is_needed(digits):
    out, _ = digits
    for target in ("lin.npz", "g32.onnx"):
        doc = capacity(out / "f256.onnx", box="0:1", target=out / target).document
        refuse_every_mutation(doc)


@pytest.mark.slow
def test_linear_target_is_reachable_from_width_1024(digits):
    out, _ = digits
    r = capacity(out / "f1024.onnx", box="0:1", target=out / "lin.npz", pure=True)
    assert r.word == "REACHABLE" and r.verdict.ok and both(r.document).ok
    _agree(r.document, r.target, points=4)


# ------------------------------------------------------------------ --best


def test_best_is_the_exact_least_squares_optimum():
    """On a small case: stationarity and the value recomputed with SymPy from u*, the optimum
    compared with SymPy's own least-squares solution, and the sup error equal to the largest
    error at the box's corners (where an affine error attains its maximum)."""
    rng = random.Random(11)
    V1 = [[rng.randint(-5, 5) for _ in range(3)] for _ in range(4)]
    V2 = [[rng.randint(-5, 5) for _ in range(4)] for _ in range(3)]
    net = given([V1, V2], ["relu", "identity"])
    W = [[rng.randint(-9, 9) for _ in range(3)] for _ in range(3)]
    g = TargetNetwork.from_lists([W], [[1, 2, 3]], ["identity"], lower=[0, -1, 0],
                                 upper=[1, 1, 3])
    best = best_affine(net, g)
    u = sympy.Matrix([sympy.Rational(int(x.numer()), int(x.denom())) for x in best.gamma_in])
    M = sympy.Matrix(V2) * sympy.diag(*u) * sympy.Matrix(V1)
    C = sympy.diag(*[sympy.Rational((h - lo) ** 2, 12) for lo, h in ((0, 1), (-1, 1), (0, 3))])
    E = M - sympy.Matrix(W)
    value = sum((E[i, :] * C * E[i, :].T)[0] for i in range(3))
    assert value == sympy.Rational(int(best.mse.numer()), int(best.mse.denom()))
    # SymPy's least squares of the same objective (Khatri–Rao columns, weighted rows)
    K = sympy.Matrix([[V2[i][k] * V1[k][j] for k in range(4)] for j in range(3)
                      for i in range(3)])
    w = sympy.Matrix([W[i][j] for j in range(3) for i in range(3)])
    Cr = sympy.diag(*[C[j, j] for j in range(3) for _ in range(3)])
    grad = K.T * Cr * (K * u - w)
    assert grad == sympy.zeros(4, 1)
    free_opt = (K.T * Cr * K).pinv() * K.T * Cr * w
    r = K * free_opt - w
    assert (r.T * Cr * r)[0] == value  # the same optimal value by another method
    corners = [[a, b, c] for a in (0, 1) for b in (-1, 1) for c in (0, 3)]
    mu = [Fraction(1, 2), 0, Fraction(3, 2)]
    errs = [abs(sum((M[i, t] - W[i][t]) * (x[t] - mu[t]) for t in range(3)))
            for x in corners for i in range(3)]
    assert max(errs) == sympy.Rational(int(best.sup_error.numer()), int(best.sup_error.denom()))


def test_best_refuses_what_it_does_not_decide():
    net = given([[[1, 0]], [[1]]], ["relu", "identity"])
    g = TargetNetwork.from_lists([[[1, 0]], [[1]]], [[0], [0]], lower=[0, 0], upper=[1, 1])
    with pytest.raises(Exception, match="affine target"):
        best_affine(net, g)
    with pytest.raises(Exception, match="best needs a target"):
        capacity(net, best=True)


# ------------------------------------------------------------------ the command line


def test_cli_words_exit_codes_and_check(digits, tmp_path, capsys):
    out, _ = digits
    doc = tmp_path / "u.json"
    code = main(["capacity", str(out / "f256.onnx"), "--box", "0:1", "--target",
                 str(out / "lin.npz"), "--out", str(doc)])
    text = capsys.readouterr().out
    assert code == 1 and text.startswith("UNREACHABLE ")
    assert "UNREACHABLE VALID (flint checker)" in text
    assert main(["check", str(doc), "--both"]) == 0
    checked = capsys.readouterr().out
    assert checked.count("UNREACHABLE VALID (") == 2
    assert main(["capacity", str(out / "f256.onnx"), "--box", "0:1", "--target",
                 str(out / "lin.npz"), "--out", str(doc)]) == 2  # exists, no --force
    capsys.readouterr()
    assert main(["capacity", str(out / "f256.onnx"), "--target", str(out / "lin.npz")]) == 2
    assert "--box" in capsys.readouterr().err
    prof = tmp_path / "profile.json"
    assert main(["capacity", str(out / "f256.onnx"), "--out", str(prof), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["verdict"] == "PROFILE" and shown["details"]["profile"][0]["rank"] == 256
    assert json.loads(prof.read_text())["pairs"][0]["universal"] is False
    # a frozen network with two hidden layers against an affine target: UNDECIDED, exit 4
    np.savez(tmp_path / "deep.npz", W1=np.eye(64)[:8], b1=np.zeros(8), W2=np.ones((8, 8)),
             b2=np.zeros(8), W3=np.ones((10, 8)), b3=np.zeros(10))
    assert main(["capacity", str(tmp_path / "deep.npz"), "--box", "0:1", "--target",
                 str(out / "lin.npz")]) == 4
    assert capsys.readouterr().out.startswith("UNDECIDED: ")


def test_cli_reachable_certificate_checks_as_reachable(tmp_path, capsys):
    """A REACHABLE certificate from the command line is an ordinary certificate: `exactnorm
    check` prints VALID (the word of a certificate), and it holds exactly at box points."""
    np.savez(tmp_path / "frozen.npz", W1=np.array([[1.0, 0], [0, 1], [1, 1]]), b1=np.zeros(3),
             W2=np.array([[1.0, 2, 3], [2, 0, 1]]), b2=np.zeros(2))
    np.savez(tmp_path / "target.npz", W1=np.array([[2.0, 3], [-1, 0.5]]),
             b1=np.array([1.0, -2]), activations=np.array(["identity"]))
    cert = tmp_path / "c.json"
    assert main(["capacity", str(tmp_path / "frozen.npz"), "--box", "0:1", "--target",
                 str(tmp_path / "target.npz"), "--out", str(cert)]) == 0
    assert capsys.readouterr().out.startswith("REACHABLE: ")
    assert main(["check", str(cert), "--both"]) == 0
    checked = capsys.readouterr().out
    assert checked.count("VALID (") == 2 and "REACHABLE" not in checked
    doc = load_certificate(cert)
    t = decide(load_frozen(tmp_path / "frozen.npz"),
               TargetNetwork.from_lists([[[2, 3], [-1, Fraction(1, 2)]]], [[1, -2]],
                                        ["identity"], lower=[0, 0], upper=[1, 1])).construction
    _agree(doc, t.target)
    assert capacity_profile(load_frozen(tmp_path / "frozen.npz"))[0].rank == 3


def test_reachable_certificate_refuses_changed_tuning(digits, tmp_path):
    """The REACHABLE certificate of a BatchNorm re-tuning: changing one γ or β entry (first,
    middle, last of each layer) is refused by both arithmetics."""
    import copy

    _, models = digits
    m = models["f256"]
    rng = np.random.default_rng(5)
    W1, W2, (b1, b2) = m.coefs_[0].T, m.coefs_[1].T, m.intercepts_
    bn1, bn2 = _bn(rng, 256), _bn(rng, 10)
    frozen = mlp_onnx(tmp_path / "f.onnx", [{"W": W1, "b": b1, "bn": bn1, "relu": True},
                                            {"W": W2, "b": b2, "bn": bn2}])
    re1 = (rng.uniform(0.5, 2, 256), rng.uniform(-1, 1, 256), bn1[2], bn1[3])
    target = mlp_onnx(tmp_path / "t.onnx", [{"W": W1, "b": b1, "bn": re1, "relu": True},
                                            {"W": W2, "b": b2, "bn": bn2}])
    doc = capacity(frozen, box="0:1", target=target).document
    assert both(doc).ok
    for j, layer in enumerate(doc["network"]["layers"]):
        n = len(layer["gamma"]["num"])
        for key in ("gamma", "beta"):
            for k in sorted({0, n // 2, n - 1}):
                bad = copy.deepcopy(doc)
                bad["network"]["layers"][j][key]["num"][k] = \
                    int(bad["network"]["layers"][j][key]["num"][k]) + 1
                v = both(bad)
                assert not v.ok and v.rule == "identity", (j, key, k, v.message)


def test_scikit_learn_objects_are_given_networks_and_targets(digits):
    _, models = digits
    r = capacity(models["f256"], box="0:1", target=models["g32"])
    assert (r.word, r.decision.witness) == ("UNREACHABLE", "kink") and r.verdict.ok
    assert r.network.name.startswith("scikit-learn MLPClassifier")
    assert r.document["provenance"]["network"] == r.network.name
