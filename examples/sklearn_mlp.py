"""A trained scikit-learn MLP reproduced exactly by tuning only γ, β of a frozen random network.

Trains ``MLPRegressor(hidden_layer_sizes=(6,), activation="relu", random_state=0)`` on the first
``n_features`` features of scikit-learn's diabetes data (shipped with scikit-learn, no download)
and then:

1. turns the fitted model into an exact target ``g`` (every float64 weight is the dyadic rational
   it denotes; ``coefs_[i]`` is transposed to our ``(out, in)``);
2. takes the box ``D`` = per-feature min/max over the whole data set, as exact rationals (min and
   max return data values, so every sample lies in ``D``, test points included);
3. certifies with Theorem 1 (docs/model.md) and checks the certificate with the independent
   checkers:
   the standard-library one (``pure=True``) and its python-flint fast path;
4. shows ``f(x) = g(x)`` exactly on held-out test points (their exact rational values), both for
   the construction's network and for the exact BatchNorm-style JSON export read back from disk;
5. compares float64 predictions with ``model.predict``: ``g`` in floats, and a framework-style
   BatchNorm forward pass over the float64 ``.npz`` export. Agreement there is to float precision
   only; the floats are not the certified object.

Run: ``python examples/sklearn_mlp.py`` (needs ``pip install exactnorm[sklearn]``).
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from exactnorm import api
from exactnorm.errors import require_extra
from exactnorm.exact.linalg import from_numpy_exact, to_fractions
from exactnorm.model.interop import target_from_sklearn
from exactnorm.outputs.export import (
    evaluate_exported_json,
    evaluate_npz_export,
    export_json,
    export_npz,
)

__all__ = ["main", "predict_from_export", "max_relative_error"]


def predict_from_export(path: str | Path, X: np.ndarray) -> np.ndarray:
    """float64 forward pass of an ``export_npz`` file as a framework's BatchNorm in eval mode
    computes it (:func:`exactnorm.outputs.export.evaluate_npz_export`)."""
    return evaluate_npz_export(path, X)


def max_relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """``max |a − b| / max(|b|, tiny)`` over all entries."""
    a, b = np.asarray(a, dtype=np.float64).reshape(-1), np.asarray(b, dtype=np.float64).reshape(-1)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), np.finfo(np.float64).tiny)))


def main(hidden: tuple[int, ...] = (6,), n_features: int = 3, seed: int = 0,
         max_iter: int = 300, n_points: int = 5, verbose: bool = True) -> dict[str, Any]:
    """Train, certify, check, compare; return the measured facts as a dict."""
    load_diabetes = require_extra("sklearn.datasets", "this example").load_diabetes
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPRegressor

    X, y = load_diabetes(return_X_y=True)
    X = X[:, :n_features]
    X_train, X_test, y_train, _y_test = train_test_split(X, y, test_size=0.2, random_state=0)
    model = MLPRegressor(hidden_layer_sizes=hidden, activation="relu", random_state=0,
                         max_iter=max_iter)
    with warnings.catch_warnings():
        # a few hundred iterations suffice for a demonstration; the certificate is about the
        # weights as trained, converged or not
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X_train, y_train)

    # the box D: per-feature min/max of the data; float64 → exact dyadic rationals
    lower, upper = X.min(axis=0), X.max(axis=0)
    target = target_from_sklearn(model, lower, upper)
    construction = api.certify(target, seed=seed)
    doc = api.certificate_document(construction)
    verdict_pure = api.check(doc, pure=True)  # standard library only, shares no code
    verdict_flint = api.check(doc)

    points = X_test[:n_points]
    exact_points = [[row[0] for row in to_fractions(from_numpy_exact(x, "test point"))]
                    for x in points]
    f, g = construction.network, target
    g_values = [g.evaluate(x) for x in exact_points]
    exact_agree = all(f.evaluate(x) == gx for x, gx in zip(exact_points, g_values))

    with tempfile.TemporaryDirectory() as tmp:
        export_json(doc, Path(tmp) / "export.json", mean="1/4", scale="3/2")
        from_export = evaluate_exported_json(Path(tmp) / "export.json", exact_points)
        export_agree = from_export == g_values
        warning = export_npz(doc, Path(tmp) / "export.npz", mean="1/4", scale="3/2")
        pred_export = predict_from_export(Path(tmp) / "export.npz", points)

    pred_model = model.predict(points)
    pred_g = np.array([[float(v) for v in gx] for gx in g_values])
    result = {
        "target_widths": target.widths,
        "frozen_widths": f.widths,
        "tuned_parameters": f.tuned_parameters,
        "checker_pure_ok": bool(verdict_pure.ok),
        "checker_ok": bool(verdict_flint.ok),
        "checker_message": verdict_pure.message,
        "exact_agree": exact_agree,
        "export_json_agree": export_agree,
        "points": len(exact_points),
        "exact_outputs": [str(gx[0]) for gx in g_values],
        "pred_model": pred_model.reshape(-1),
        "pred_g_float": pred_g.reshape(-1),
        "pred_export_float": pred_export.reshape(-1),
        "max_rel_err_g": max_relative_error(pred_g, pred_model),
        "max_rel_err_float_export": max_relative_error(pred_export, pred_model),
        "export_warning": warning,
        # for independent re-checking by the caller (tests)
        "model": model,
        "certificate": doc,
        "test_points": points,
    }
    if verbose:
        print(f"target widths {target.widths}; frozen widths {f.widths}; "
              f"{f.tuned_parameters} tuned scalars (γ, β)")
        print(f"independent checker (pure): {'VALID' if verdict_pure.ok else 'INVALID'}; "
              f"flint: {'VALID' if verdict_flint.ok else 'INVALID'} — {verdict_pure.message}")
        print(f"f(x) == g(x) exactly on {len(exact_points)} test points: {exact_agree}; "
              f"exact JSON export read back: {export_agree}")
        print(f"float(g(x)) vs model.predict: max relative error "
              f"{result['max_rel_err_g']:.2e}")
        print(f"float64 BatchNorm export vs model.predict: max relative error "
              f"{result['max_rel_err_float_export']:.2e}")
        print(f"note: {warning}")
    return result


if __name__ == "__main__":
    main()
