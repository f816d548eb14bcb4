"""Models in and out the way users hold them: train, import (ONNX, state dict), certify, export.

1. Trains a scikit-learn ``Pipeline(StandardScaler, MLPRegressor(relu))`` on the first features of
   scikit-learn's diabetes data (shipped with scikit-learn, no download) and imports it with
   :func:`~exactnorm.model.interop.target_from_sklearn`: the scaler folds exactly into the first
   layer, the box ``D`` is the data's per-feature min/max in raw coordinates.
2. Writes the same network as an ONNX MLP (``Gemm`` + ``Relu``, as an exporter would) and as a
   PyTorch ``nn.Sequential`` state dict (``.pt`` when torch is installed, trained in torch from the
   scikit-learn weights for a few steps; ``.npz`` otherwise), and imports both through the one
   loader :func:`~exactnorm.api.load_target` — the state dict with its activations
   declared. The ONNX import is the file's float64 numbers exactly.
3. Certifies each import (Theorem 1) and checks the certificates with the independent checker.
4. Exports the certified γ, β to ONNX (run by onnxruntime, float32 and float64) and to the
   documented PyTorch module (``torch.nn`` when installed, the package's numpy forward pass of
   the same state dict otherwise), and compares both with the exact target ``g(x)`` at held-out
   points, besides ``f(x) = g(x)`` exactly.

Run: ``python examples/interop_roundtrip.py`` (needs ``pip install ".[sklearn,onnx]"``; torch is
used where installed). Floats are compared, never certified: the certificate is the proof.
"""

from __future__ import annotations

import tempfile
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from exactnorm import api
from exactnorm.api import load_target
from exactnorm.certificate import read_frozen
from exactnorm.errors import require_extra
from exactnorm.exact.linalg import to_fractions, to_numpy
from exactnorm.model.interop import target_from_sklearn
from exactnorm.model.network import TargetNetwork, column
from exactnorm.outputs.export import (
    evaluate_state_dict,
    onnx_model,
    torch_module,
    torch_state_dict,
)

__all__ = ["main"]


def _exact_points(X: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(v)) for v in row] for row in X]


def _max_error(got: np.ndarray, exact: np.ndarray) -> float:
    """Largest ``|got − exact| / max(1, |exact|)``."""
    got = np.asarray(got, dtype=np.float64).reshape(exact.shape)
    return float(np.max(np.abs(got - exact) / np.maximum(1.0, np.abs(exact))))


def _onnx_mlp(g: TargetNetwork) -> Any:
    """The target as an ONNX MLP of float64 ``Gemm``/``Relu`` nodes (what an exporter writes)."""
    onnx = require_extra("onnx", "this example")
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, current = [], [], "x"
    for i, layer in enumerate(g.layers, 1):
        W = to_numpy(layer.weight)
        b = to_numpy(column(layer.bias)).reshape(-1)
        inits += [numpy_helper.from_array(W, f"W{i}"), numpy_helper.from_array(b, f"b{i}")]
        out = f"z{i}"
        nodes.append(helper.make_node("Gemm", [current, f"W{i}", f"b{i}"], [out], name=f"fc{i}",
                                      transB=1))
        if layer.activation == "relu":
            nodes.append(helper.make_node("Relu", [out], [f"a{i}"], name=f"relu{i}"))
            out = f"a{i}"
        current = out
    nodes.append(helper.make_node("Identity", [current], ["y"], name="out"))
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["N", g.widths[0]])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["N", g.widths[-1]])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _state_dict(pipe: Any, X: np.ndarray, y: np.ndarray, steps: int) -> tuple[dict, str]:
    """A ``nn.Sequential(Linear, ReLU, Linear)`` state dict on raw inputs: trained in torch from
    the scikit-learn weights (scaler folded in floats, then ``steps`` Adam steps) when torch is
    installed; otherwise the scikit-learn arrays in the same layout."""
    scaler, mlp = pipe.steps[0][1], pipe.steps[-1][1]
    W1 = mlp.coefs_[0].T / scaler.scale_
    b1 = mlp.intercepts_[0] - W1 @ scaler.mean_
    arrays = {"0.weight": W1, "0.bias": b1, "2.weight": mlp.coefs_[1].T,
              "2.bias": mlp.intercepts_[1]}
    try:
        import torch
    except ImportError:
        return arrays, "numpy (torch not installed)"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(W1.shape[1], W1.shape[0]), torch.nn.ReLU(),
                                torch.nn.Linear(W1.shape[0], 1)).double()
    model.load_state_dict({k: torch.from_numpy(np.array(v, order="C")) for k, v in
                           arrays.items()})
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y).reshape(-1, 1)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.mean((model(Xt) - yt) ** 2)
        loss.backward()
        opt.step()
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}, "torch"


def main(n_features: int = 3, hidden: int = 6, seed: int = 0, max_iter: int = 200,
         torch_steps: int = 20, n_points: int = 32, verbose: bool = True) -> dict[str, Any]:
    """Run the whole round trip; return the measured facts."""
    datasets = require_extra("sklearn.datasets", "this example")
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    ort = require_extra("onnxruntime", "this example")
    onnx = require_extra("onnx", "this example")

    X, y = datasets.load_diabetes(return_X_y=True)
    X = X[:, :n_features]
    pipe = make_pipeline(StandardScaler(), MLPRegressor(hidden_layer_sizes=(hidden,),
                                                        random_state=0, max_iter=max_iter))
    with warnings.catch_warnings():
        # the certificate is about the weights as trained, converged or not
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(X, y)
    lower, upper = X.min(axis=0), X.max(axis=0)
    points = X[-n_points:]
    exact_points = _exact_points(points)
    facts: dict[str, Any] = {}

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        # ---- in: scikit-learn (API), ONNX and a state dict (files, the CLI's loader)
        g_sklearn = target_from_sklearn(pipe, lower, upper)
        model = _onnx_mlp(g_sklearn)
        onnx.save(model, tmp_path / "mlp.onnx")
        # a file holds no box: the cube around the data's bounding box
        box = (Fraction(float(lower.min())), Fraction(float(upper.max())))
        g_onnx = load_target(tmp_path / "mlp.onnx", box=box)
        # the import is the file's float64 numbers exactly (the folded scaler 1/scale is not a
        # dyadic rational, so the file itself is a rounded copy of the scikit-learn network)
        stored = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
        facts["onnx_import_is_the_file_exactly"] = all(
            to_fractions(layer.weight) == [[Fraction(float(v)) for v in row]
                                           for row in stored[f"W{i}"]]
            for i, layer in enumerate(g_onnx.layers, 1))
        facts["onnx_file_vs_sklearn_weights"] = max(
            float(abs(Fraction(str(a)) - Fraction(str(b))))
            for la, lb in zip(g_onnx.layers, g_sklearn.layers)
            for ra, rb in zip(to_fractions(la.weight), to_fractions(lb.weight))
            for a, b in zip(ra, rb))
        state, trained_by = _state_dict(pipe, X, y, torch_steps)
        if trained_by == "torch":
            import torch

            torch.save({k: torch.from_numpy(np.array(v, order="C")) for k, v in state.items()},
                       tmp_path / "mlp.pt")
            sd_path = tmp_path / "mlp.pt"
        else:
            np.savez(tmp_path / "mlp.npz", **state)
            sd_path = tmp_path / "mlp.npz"
        g_state = load_target(sd_path, box=box, activations="relu,identity")
        facts["state_dict_from"] = trained_by

        for name, g in (("sklearn", g_sklearn), ("onnx", g_onnx), ("state_dict", g_state)):
            # ---- certify and check
            doc = api.certificate_document(api.certify(g, seed=seed))
            verdict = api.check(doc)
            f = read_frozen(doc)
            g_values = [g.evaluate(x) for x in exact_points]
            exact = np.array([[float(v) for v in gx] for gx in g_values])
            # ---- out: ONNX through onnxruntime, PyTorch through torch.nn (or numpy)
            errors = {}
            for dtype in ("float32", "float64"):
                # plain x/y: the arithmetic of dtype itself, not the source's interface
                sess = ort.InferenceSession(onnx_model(doc, dtype=dtype, interface="plain")
                                            .SerializeToString(),
                                            providers=["CPUExecutionProvider"])
                errors[f"onnx_{dtype}"] = _max_error(
                    sess.run(None, {"x": points.astype(dtype)})[0], exact)
            if trained_by == "torch":
                import torch

                with torch.no_grad():
                    got = torch_module(doc)(torch.from_numpy(points)).numpy()
                errors["torch_float64"] = _max_error(got, exact)
            else:
                acts = [layer.activation for layer in f.layers]
                errors["torch_layout_numpy_float64"] = _max_error(
                    evaluate_state_dict(torch_state_dict(doc), acts, points), exact)
            facts[name] = {
                "widths": g.widths, "frozen_widths": f.widths, "valid": bool(verdict.ok),
                "f_equals_g_exactly": all(f.evaluate(x) == gx
                                          for x, gx in zip(exact_points, g_values)),
                "max_errors": errors,
            }
    pred = pipe.predict(points)
    exact_sklearn = np.array([float(g_sklearn.evaluate(x)[0]) for x in exact_points])
    facts["sklearn_predict_vs_exact"] = _max_error(pred, exact_sklearn)
    if verbose:
        print(f"ONNX import is the file's float64 weights exactly: "
              f"{facts['onnx_import_is_the_file_exactly']} (the file rounds the folded scaler: "
              f"max weight difference {facts['onnx_file_vs_sklearn_weights']:.1e}); "
              f"state dict from {trained_by}")
        print(f"model.predict vs exact g: max error {facts['sklearn_predict_vs_exact']:.1e}")
        for name in ("sklearn", "onnx", "state_dict"):
            r = facts[name]
            errs = ", ".join(f"{k} {v:.1e}" for k, v in r["max_errors"].items())
            print(f"{name:10s} widths {r['widths']} -> frozen {r['frozen_widths']}: "
                  f"{'VALID' if r['valid'] else 'INVALID'}, f = g exactly on {n_points} points: "
                  f"{r['f_equals_g_exactly']}; exports vs exact g: {errs}")
    return facts


if __name__ == "__main__":
    main()
