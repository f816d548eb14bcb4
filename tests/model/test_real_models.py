"""Real trained models certify VALID with default options (issue 30, "no false refusals").

scikit-learn's ``MLPClassifier`` trained with its default L2 penalty (``alpha = 1e-4``) on the
bundled digits drives the weights of the always-zero pixels to tiny values, subnormal floats
included: their exact values are fractions over powers of two up to ``2^1074``, dozens of
different denominators in one matrix. The checker refused such a target ("108 different
denominators …") because it bounded their common denominator by the *sum* of their bit lengths;
it is ``2^e``, at most 1,127 bits. Each model here goes the way a user's does: exported with
skl2onnx (float32, and float64 weights), or written as a float64 ``.npz``, certified with no flag
but the box, and checked by both arithmetics. The 784-128-10 float64 MLP is the slow test.
"""

from __future__ import annotations

import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from exactnorm import api, checker, checker_flint
from exactnorm.certificate import certificate_document

pytest.importorskip("sklearn")


def _digits(side: int = 8) -> tuple[np.ndarray, np.ndarray]:
    if side == 8:
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return X / 16.0, y
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from mlp_models import digits_images

    return digits_images(side)


def _trained(hidden: tuple[int, ...], side: int = 8, max_iter: int = 300) -> object:
    """An MLPClassifier trained on the digits with the default L2 penalty alpha = 1e-4."""
    from sklearn.neural_network import MLPClassifier

    X, y = _digits(side)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings: accuracy is not the point
        return MLPClassifier(hidden_layer_sizes=hidden, random_state=0,
                             max_iter=max_iter).fit(X, y)


def _force_subnormal(model: object, dtype: type) -> None:
    """A few first-layer weights of the model set to subnormal values of ``dtype``."""
    tiny = np.finfo(dtype).smallest_subnormal
    W = model.coefs_[0]  # type: ignore[attr-defined]
    W[0, :3] = [tiny, -7 * tiny, 3 * tiny]
    W[5, 1] = 1001 * tiny


def _onnx(model: object, dtype: type, path: Path) -> Path:
    skl2onnx = pytest.importorskip("skl2onnx")
    X, _ = _digits()
    path.write_bytes(skl2onnx.to_onnx(model, X[:1].astype(dtype), options={
        id(model): {"zipmap": False}}).SerializeToString())
    return path


def _denominators(doc: dict) -> set[int]:
    """The distinct denominators of the exact first-layer weights of the target."""
    from exactnorm.certificate import read_target

    W = read_target(doc).layers[0].weight
    return {int(x.q) for x in W.entries()}


def _certify_and_check(target: object, **options: object) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "certifies the logits" of a classifier
        c = api.certify(target, **options)
    doc = certificate_document(c)
    pure, fast = checker.check_certificate(doc), checker_flint.check_certificate(doc)
    assert pure == fast and pure.ok, pure.message
    assert pure.facts["seed_rule"] == "target.v2" and "derived from the canonical target" in \
        pure.message
    return doc


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("subnormal", [False, True], ids=["trained", "subnormal"])
def test_trained_digits_mlp_certifies_valid(tmp_path, dtype, subnormal):
    model = _trained((8,))
    if subnormal:
        _force_subnormal(model, dtype)
    doc = _certify_and_check(_onnx(model, dtype, tmp_path / "m.onnx"), box="0:1")
    dens = _denominators(doc)
    assert all(q & (q - 1) == 0 for q in dens)  # powers of two: float weights
    assert len(dens) > 20  # many different denominators, the refused case
    if subnormal:
        assert max(dens) >= 2 ** (149 if dtype is np.float32 else 1074)


def test_trained_weights_of_dead_pixels_are_tiny():
    """What makes the case real: weight decay leaves the weights of the always-zero pixels
    hundreds of binary orders of magnitude below the others."""
    W = _trained((8,)).coefs_[0]
    X, _ = _digits()
    dead = np.flatnonzero(X.max(axis=0) == 0)
    assert len(dead) >= 3
    assert np.abs(W[dead]).max() < 1e-12 < 1e-2 < np.abs(W).max()
    assert np.abs(W[dead]).min() < 1e-38  # below the smallest normal float32


def test_float64_npz_target_with_subnormals_certifies_from_the_cli(tmp_path):
    from exactnorm.cli import main

    model = _trained((8,))
    _force_subnormal(model, np.float64)
    arrays = {}
    for i, (W, b) in enumerate(zip(model.coefs_, model.intercepts_), 1):
        arrays[f"W{i}"], arrays[f"b{i}"] = W.T.astype(np.float64), b.astype(np.float64)
    np.savez(tmp_path / "m.npz", **arrays)
    out = tmp_path / "c.json.gz"
    assert main(["certify", str(tmp_path / "m.npz"), "--box", "0:1", "--out", str(out)]) == 0
    assert main(["check", str(out), "--both"]) == 0


def test_a_plain_list_over_many_powers_of_two_is_read_at_its_true_size():
    """108 weights with denominators 2^1 … 2^1074 written as plain "p/q": the common
    denominator is 2^1074 (1,075 bits), not the sum of the bit lengths (58,000 bits)."""
    from exactnorm.checker.numbers import over_one_denominator

    values = [(2 * k + 1, 1 << (10 * k + 4)) for k in range(108)]
    nums, den = over_one_denominator(values, "w")
    assert den == 1 << (10 * 107 + 4)
    assert [Fraction(n, den) for n in nums] == [Fraction(p, q) for p, q in values]


def _scaler_pipeline(hidden: int, path: Path) -> tuple[object, Path]:
    """``Pipeline(StandardScaler, MLPClassifier((hidden,)))`` on the digits, exported with
    skl2onnx: the scaler is a float32 ``Scaler`` node (offset, scale) in front of the MLP."""
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = _digits()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Pipeline([("scale", StandardScaler()),
                          ("mlp", MLPClassifier(hidden_layer_sizes=(hidden,), random_state=0,
                                                max_iter=300))]).fit(X, y)
    path.write_bytes(skl2onnx.to_onnx(model, X[:1].astype(np.float32)).SerializeToString())
    return model, path


def _certify_pipeline(hidden: int, tmp_path: Path) -> None:
    """The pipeline through ``exactnorm certify`` with default flags: the plan's estimate is
    printed before the work, the certificate is VALID in both arithmetics, the exact target is
    the pipeline (same predictions), and the plan chose what the checker accepts — Theorem 1
    of the 64 → hidden layer is forecast to be refused from hidden = 64 on (the checker's
    limit on bits), as the checker did after 12 minutes of work."""
    from exactnorm.cli import main
    from exactnorm.constructions.choice import estimate_theorem1

    model, path = _scaler_pipeline(hidden, tmp_path / "pipe.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target = api.load_target(path, box="0:1")
        plan = api.plan_certify(target)
    X, _ = _digits()
    exact = target.evaluate_float(X[:100].astype(np.float32).astype(np.float64))
    assert (exact.argmax(axis=1) == model.predict(X[:100])).all()  # type: ignore[attr-defined]
    assert plan.estimate.checker.fits
    if hidden >= 64:
        assert not estimate_theorem1(target).checker.fits
        assert plan.construction == "tradeoff"
    out = tmp_path / "c.json.gz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["certify", str(path), "--box", "0:1", "--out", str(out)]) == 0
    for pure in (False, True):
        verdict = api.check_file(out, pure=pure)
        assert verdict.ok, verdict.message


@pytest.mark.parametrize("hidden", [32, 64])
def test_scaler_pipeline_certifies_valid_with_default_flags(tmp_path, capsys, hidden):
    _certify_pipeline(hidden, tmp_path)
    captured = capsys.readouterr()
    assert "≈" in captured.err  # the estimate, printed before the work
    assert "VALID" in captured.out


@pytest.mark.slow
def test_scaler_pipeline_64_128_10_certifies_valid_with_default_flags(tmp_path):
    _certify_pipeline(128, tmp_path)


@pytest.mark.slow
def test_the_reported_digits_mlp_64_32_10_certifies_valid(tmp_path):
    """The model of the report: 64-32-10, float32 ONNX (97 % test accuracy)."""
    model = _trained((32,), max_iter=500)
    _certify_and_check(_onnx(model, np.float32, tmp_path / "m.onnx"), box="0:1")


@pytest.mark.slow
def test_trained_784_128_10_float64_mlp_certifies_valid(tmp_path):
    """A 784-128-10 MLP with float64 weights trained (default L2 penalty) on the digits
    upsampled to 28×28, a few weights forced subnormal; certified with default options."""
    model = _trained((128,), side=28, max_iter=40)
    _force_subnormal(model, np.float64)
    arrays = {}
    for i, (W, b) in enumerate(zip(model.coefs_, model.intercepts_), 1):
        arrays[f"W{i}"], arrays[f"b{i}"] = W.T.astype(np.float64), b.astype(np.float64)
    np.savez(tmp_path / "m.npz", **arrays)
    doc = _certify_and_check(tmp_path / "m.npz", box="0:1")
    assert len(_denominators(doc)) > 20 and max(_denominators(doc)) >= 2**1074


def test_a_certificate_is_a_target_file_with_its_compact_target(tmp_path):
    """Writers put a target matrix over one denominator when that is shorter (float weights of
    one exponent range); load_target reads the certificate back as the same target."""
    from exactnorm.api import load_target
    from exactnorm.certificate import save_certificate

    rng = np.random.default_rng(0)
    arrays = {"W1": rng.normal(size=(4, 6)).astype(np.float32),
              "b1": rng.normal(size=4).astype(np.float32),
              "W2": rng.normal(size=(2, 4)).astype(np.float32),
              "b2": rng.normal(size=2).astype(np.float32)}
    np.savez(tmp_path / "t.npz", **arrays)
    g = api.load_target(tmp_path / "t.npz", box="0:1")
    doc = _certify_and_check(g)
    assert isinstance(doc["target"]["layers"][0]["weight"], dict)  # {"den", "num"}
    save_certificate(doc, tmp_path / "c.json")
    assert load_target(tmp_path / "c.json") == g
