"""BatchNorm-style export: exact conversion both ways, exact JSON, float64 npz, CLI."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from exactnorm import api
from exactnorm.certificate import expand_document, read_frozen, save_certificate
from exactnorm.cli import main
from exactnorm.errors import InputError
from exactnorm.exact.sampling import layer_rng
from exactnorm.outputs.export import (
    EXPORT_FORMAT,
    FLOAT_WARNING,
    evaluate_exported_json,
    export_json,
    export_npz,
    from_batchnorm,
    read_exported_json,
    to_batchnorm,
)

# built from integers (no filtering): fast to draw, and both signs, zero and large values occur
rationals = st.builds(Fraction, st.integers(-10**9, 10**9), st.integers(1, 10**6))
positive = st.builds(Fraction, st.integers(1, 10**9), st.integers(1, 10**6))


def F(x) -> Fraction:
    return Fraction(str(x))


@pytest.fixture(scope="module")
def cert():
    return expand_document(api.certificate_document(api.certify(api.demo_target(), seed=2)))


@given(st.lists(st.tuples(rationals, rationals, rationals, positive, rationals), min_size=1,
                max_size=6))
def test_batchnorm_round_trip_exact(rows):
    G, B, mu, s, v = (tuple(c) for c in zip(*rows))
    gh, bh = to_batchnorm(G, B, mu, s)
    back_g, back_b = from_batchnorm(gh, bh, mu, s)
    assert tuple(map(F, back_g)) == G and tuple(map(F, back_b)) == B
    # the defining identity, in plain Fractions: γ̂ (v − μ)/s + β̂ = Γ v + β
    for k in range(len(G)):
        assert F(gh[k]) * (v[k] - mu[k]) / s[k] + F(bh[k]) == G[k] * v[k] + B[k]


def test_scalar_statistics_broadcast():
    gh, bh = to_batchnorm((Fraction(2), Fraction(-1, 3)), (1, 0), "1/2", 3)
    assert list(map(F, gh)) == [6, -1] and list(map(F, bh)) == [2, Fraction(-1, 6)]


@pytest.mark.parametrize("bad", [0, -1, "-1/3", Fraction(0)])
def test_nonpositive_scale_refused(bad, cert, tmp_path):
    with pytest.raises(InputError, match="positive"):
        to_batchnorm((1,), (0,), 0, bad)
    with pytest.raises(InputError, match="positive"):
        from_batchnorm((1,), (0,), 0, (bad,))
    with pytest.raises(InputError, match="positive"):
        export_json(cert, tmp_path / "x.json", 0, bad)
    assert not (tmp_path / "x.json").exists()


def test_float_statistics_refused():
    with pytest.raises(InputError, match="not exact"):
        to_batchnorm((1,), (0,), 0.5, 1)


def _rational_points(doc, n, seed):
    lo = [F(x) for x in doc["domain"]["lower"]]
    hi = [F(x) for x in doc["domain"]["upper"]]
    rng = layer_rng(seed, 0)
    pts = []
    for _ in range(n):
        t = [Fraction(int(k), 97) for k in rng.integers(0, 98, size=len(lo))]
        pts.append([a + ti * (b - a) for a, b, ti in zip(lo, hi, t)])
    return pts


@pytest.mark.parametrize("mean,scale", [(0, 1), (Fraction(1, 3), Fraction(7, 2)), ("-5", "1/9")])
def test_json_export_reevaluates_exactly(cert, tmp_path, mean, scale):
    path = tmp_path / "bn.json"
    export_json(cert, path, mean, scale)
    raw = json.loads(path.read_text())
    assert raw["format"] == EXPORT_FORMAT
    # independent recovery with Fractions: Γ = γ̂/s, β = β̂ − γ̂ μ/s equals the certificate's
    for L, C in zip(raw["layers"], cert["network"]["layers"]):
        for gh, bh, m, s, g, b in zip(L["gamma_hat"], L["beta_hat"], L["mean"], L["scale"],
                                      C["gamma"], C["beta"]):
            assert F(gh) / F(s) == F(g)
            assert F(bh) - F(gh) * F(m) / F(s) == F(b)
    net = read_exported_json(path)
    assert net == read_frozen(cert)
    from exactnorm.certificate import read_target

    g = read_target(cert)
    for x in _rational_points(cert, 5, seed=1):
        assert net.evaluate(x) == g.evaluate(x)


def test_evaluate_exported_json_is_the_target_on_the_box(cert, tmp_path):
    """The exact evaluator on the exported file gives g(x); a changed β̂ gives something else."""
    from exactnorm.certificate import read_target

    path = tmp_path / "bn.json"
    export_json(cert, path, "-2/3", "5")
    g = read_target(cert)
    pts = _rational_points(cert, 4, seed=3)
    assert evaluate_exported_json(path, pts) == [g.evaluate(x) for x in pts]
    # β = β̂ − γ̂ μ/s: one more unit of β̂ in the (identity) output layer adds exactly 1 to f
    raw = json.loads(path.read_text())
    last = raw["layers"][-1]
    last["beta_hat"][0] = str(F(last["beta_hat"][0]) + 1)
    path.write_text(json.dumps(raw))
    shifted = evaluate_exported_json(path, pts)
    assert [F(y[0]) - F(gx[0]) for y, gx in zip(shifted, (g.evaluate(x) for x in pts))] == [1] * 4
    with pytest.raises(InputError, match="float"):
        evaluate_exported_json(path, [[0.5] * len(pts[0])])


def test_json_export_per_layer_statistics(cert, tmp_path):
    net = read_frozen(cert)
    rng = layer_rng(5, 0)
    means = [[Fraction(int(k), 7) for k in rng.integers(-20, 20, size=w)] for w in net.widths]
    scales = [[Fraction(int(k), 3) for k in rng.integers(1, 20, size=w)] for w in net.widths]
    export_json(cert, tmp_path / "bn.json", means, scales)
    assert read_exported_json(tmp_path / "bn.json") == net


def test_npz_floats_close_to_exact(cert, tmp_path):
    path = tmp_path / "bn.npz"
    mean, scale, eps = Fraction(1, 4), Fraction(3, 2), 1e-5
    warning = export_npz(cert, path, mean, scale, eps=eps)
    assert warning == FLOAT_WARNING
    with np.load(path) as z:
        assert "NOT certified" in str(z["WARNING_floats_not_certified"][0])
        for j, C in enumerate(cert["network"]["layers"], 1):
            exact_gh = [float(F(g) * scale) for g in C["gamma"]]
            exact_bh = [float(F(b) + F(g) * mean) for g, b in zip(C["gamma"], C["beta"])]
            np.testing.assert_allclose(z[f"gamma{j}"], exact_gh, rtol=1e-15)
            np.testing.assert_allclose(z[f"beta{j}"], exact_bh, rtol=1e-15)
            np.testing.assert_array_equal(z[f"V{j}"], np.array(C["weight"], dtype=float))
            np.testing.assert_allclose(z[f"running_var{j}"], float(scale) ** 2 - eps, rtol=1e-15)
            np.testing.assert_array_equal(z[f"running_mean{j}"], float(mean))
        # a framework-style forward pass on the floats tracks the exact f closely
        from exactnorm.certificate import read_target

        g = read_target(cert)
        for x in _rational_points(cert, 3, seed=2):
            h = [np.array([float(v) for v in x])]
            for j in range(1, len(cert["network"]["layers"]) + 1):
                v = h[int(z[f"input{j}"])] @ z[f"V{j}"].T
                u = z[f"gamma{j}"] * (v - z[f"running_mean{j}"]) \
                    / np.sqrt(z[f"running_var{j}"] + z["eps"]) + z[f"beta{j}"]
                h.append(np.maximum(u, 0) if str(z["activations"][j - 1]) == "relu" else u)
            np.testing.assert_allclose(h[-1], [float(v) for v in g.evaluate(x)], rtol=1e-9,
                                       atol=1e-9)


def test_npz_refuses_tiny_variance(cert, tmp_path):
    with pytest.raises(InputError, match="running_var"):
        export_npz(cert, tmp_path / "x.npz", 0, Fraction(1, 1000), eps=1e-5)


def test_cli_exit_codes(cert, tmp_path, capsys):
    cpath = tmp_path / "c.json"
    save_certificate(cert, cpath)
    out = tmp_path / "bn.json"
    assert main(["export", str(cpath), "--format", "json", "--out", str(out),
                 "--mean", "-1/2", "--scale", "3"]) == 0
    assert read_exported_json(out) == read_frozen(cert)
    assert main(["export", str(cpath), "--format", "npz", "--out", str(tmp_path / "bn.npz")]) == 0
    assert "NOT certified" in capsys.readouterr().err
    for bad in (["--scale", "0"], ["--scale", "-2"], ["--mean", "0.5e"], ["--format", "csv"],
                ["--eps", "1e-3"]):
        argv = ["export", str(cpath), "--format", "json", "--out", str(tmp_path / "z.json"), *bad]
        assert main(argv) == 2, bad
    assert not (tmp_path / "z.json").exists()
    assert main(["export", str(tmp_path / "missing.json"), "--format", "json",
                 "--out", str(tmp_path / "z.json")]) == 2
    assert main(["export", str(cpath), "--format", "json"]) == 2  # --out is required


def test_npz_with_skips_tracks_exact_f(tmp_path):
    """Skip matrices (trade-off construction, docs/constructions.md) are exported and used as
    h += P h_s."""
    from exactnorm.certificate import read_target
    from exactnorm.model.targets import random_target

    doc = api.certificate_document(api.certify(random_target([3, 2, 1], seed=8), "tradeoff",
                                               seed=1, block=1))
    assert any(L.get("skip") for L in doc["network"]["layers"])
    export_npz(doc, tmp_path / "s.npz", "1/2", 2)
    doc = expand_document(doc)
    g = read_target(doc)
    with np.load(tmp_path / "s.npz") as z:
        for x in _rational_points(doc, 3, seed=4):
            h = [np.array([float(v) for v in x])]
            for j, L in enumerate(doc["network"]["layers"], 1):
                u = z[f"gamma{j}"] * (h[int(z[f"input{j}"])] @ z[f"V{j}"].T
                                      - z[f"running_mean{j}"]) \
                    / np.sqrt(z[f"running_var{j}"] + z["eps"]) + z[f"beta{j}"]
                out = np.maximum(u, 0) if L["activation"] == "relu" else u
                for sk in L.get("skip", []):
                    out = out + h[sk["from"]] @ z[f"skip{j}_{sk['from']}"].T
                h.append(out)
            np.testing.assert_allclose(h[-1], [float(v) for v in g.evaluate(x)], rtol=1e-9,
                                       atol=1e-9)


def test_npz_export_is_byte_reproducible(cert, tmp_path, monkeypatch):
    """Regression: numpy.savez leaves each member's zip metadata to the host (the "made by"
    system is Windows or Unix depending on the machine; Python versions differ in the timestamp
    they stamp), so two exports of the same certificate could differ. The second export runs
    under a moved clock and a different reported platform."""
    import sys
    import time
    import zipfile

    first, second = tmp_path / "a.npz", tmp_path / "b.npz"
    export_npz(cert, first, Fraction(1, 4), Fraction(3, 2))
    later = time.time() + 3 * 86400
    monkeypatch.setattr(time, "time", lambda: later)
    monkeypatch.setattr(time, "localtime", lambda t=None: time.gmtime(later))
    monkeypatch.setattr(sys, "platform", "win32" if sys.platform != "win32" else "linux")
    export_npz(cert, second, Fraction(1, 4), Fraction(3, 2))
    monkeypatch.undo()
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as zf:
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert {i.create_system for i in zf.infolist()} == {3}
    # still an ordinary .npz with every array numpy.savez would have written
    with np.load(first) as z:
        assert "WARNING_floats_not_certified" in z.files and "gamma1" in z.files
    different = tmp_path / "c.npz"
    export_npz(cert, different, Fraction(1, 2), Fraction(3, 2))
    assert different.read_bytes() != first.read_bytes()


def test_onnx_export_is_float64_by_default_and_verified(cert, tmp_path):
    """float64 is the default (float32 changed predictions of trained models); --verify runs
    the written model under onnxruntime against the exact target and reports the error."""
    pytest.importorskip("onnxruntime")
    import onnx

    doc = cert
    out = tmp_path / "m.onnx"
    text = api.export(doc, out, format="onnx", verify=20)
    model = onnx.load(out)
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    assert "verified under onnxruntime at 20 points" in text and "agrees at 20/20" in text
    err = float(text.text.split("max abs error ")[1].split(",")[0])
    assert err < 1e-9, text
    with pytest.raises(InputError):
        api.export(doc, tmp_path / "x.json", format="json", verify=3)


def test_float32_export_that_changes_a_prediction_is_not_kept(tmp_path):
    """A target whose outputs differ by less than float32 can resolve after large cancelling
    shifts: the float32 model is refused (file removed) unless explicitly allowed."""
    pytest.importorskip("onnxruntime")
    from exactnorm.certificate import certificate_document
    from exactnorm.constructions.theorem1 import certify_theorem1
    from exactnorm.model.network import TargetNetwork

    tiny = Fraction(1, 2**40)
    g = TargetNetwork.from_lists([[[1], [1]]], [[0, tiny]], ["identity"], lower=[0], upper=[1])
    doc = certificate_document(certify_theorem1(g, seed=0))
    out = tmp_path / "m32.onnx"
    with pytest.raises(InputError, match="changes predictions"):
        api.export(doc, out, format="onnx", dtype="float32", verify=10)
    assert not out.exists()
    text = api.export(doc, out, format="onnx", dtype="float32", verify=10,
                      allow_float32_error=True)
    assert out.exists() and "agrees at" in text


def test_float_reader_equals_the_exact_reader(cert):
    """The float64 reader behind the float exports (by-reference draws straight into arrays,
    compact skips) against the exact reader, on the plain and the compact document."""
    from exactnorm.exact.linalg import to_numpy
    from exactnorm.outputs.floatnet import float_network

    compact = api.certificate_document(api.certify(api.demo_target(), seed=2))
    for doc in (cert, compact):
        fast, exact = float_network(doc), read_frozen(doc)
        assert fast.input_dim == exact.input_dim and fast.checkpoints == exact.checkpoints
        assert len(fast.layers) == len(exact.layers)
        for a, b in zip(fast.layers, exact.layers):
            assert np.array_equal(a.weight, to_numpy(b.weight))
            assert a.gamma == tuple(b.gamma) and a.beta == tuple(b.beta)
            assert [s for s, _ in a.skips] == [s.source for s in b.skips]
            for (_, P), s in zip(a.skips, b.skips):
                assert np.array_equal(P, to_numpy(s.weight))


def _json_export_cases():
    """Certificates of every shape the JSON export meets: version 1 and 2, by-reference and
    explicit draws, rational and masked draws, identity/selection/random skips, redraws."""
    from exactnorm.certificate import certificate_document
    from exactnorm.exact.rationals import strict_json_loads
    from tests.checker.test_fuzz import certificate_pool

    docs = [strict_json_loads(t.encode(), what="pool") for t in certificate_pool()]
    g = api.demo_target()
    for options in ({"distribution": "rational:7"}, {"sparsity": "3/4"}):
        c = api.certify(g, "theorem1", seed=0, retry=16, **options)
        for version, mode in ((1, "reference"), (2, "reference"), (2, "explicit")):
            docs.append(certificate_document(c, version=version, frozen_weights=mode))
    return docs


def test_fast_json_export_equals_the_exact_network_path():
    # two independent readers of the same certificate: the checker's reader with NumPy draws,
    # and the exact FrozenNetwork rebuilt and written back as version 1
    from exactnorm.outputs.export.json import _export_document_exact, _read_fast, export_document

    fast_paths = 0
    for doc in _json_export_cases():
        fast_paths += _read_fast(doc) is not None
        assert export_document(doc, "1/3", "5/2") == _export_document_exact(doc, "1/3", "5/2")
    assert fast_paths >= 10  # the comparison is not vacuous: the fast reader took them


def test_fast_json_export_reports_progress_per_layer(cert):
    from exactnorm.outputs.export.json import export_document

    seen: list[tuple[int, int]] = []
    export_document(cert, progress=lambda d, t: seen.append((d, t)))
    n = len(cert["network"]["layers"])
    assert seen == [(j, n) for j in range(1, n + 1)]


def test_convolutional_certificates_export_and_verify(tmp_path):
    """Certificates of windowed kinds (convolutions, pooling, dense heads) through every export:
    ONNX measured under onnxruntime, npz evaluated by its documented numpy forward pass, both
    against the exact target, with default and non-default frozen statistics; the exact JSON
    export read back to the certified network exactly (it was refused before the exporters
    were per kind)."""
    pytest.importorskip("onnxruntime")
    from exactnorm.certificate import read_networks
    from exactnorm.exact.rationals import strict_json_loads
    from exactnorm.outputs.export import evaluate_npz_export, read_exported_json
    from exactnorm.outputs.floatnet import box_points
    from tests.checker.test_fuzz import conv_certificate_pool

    for k, text in enumerate(conv_certificate_pool()):
        doc = strict_json_loads(text.encode(), what="pool")
        g, f = read_networks(doc)
        pts = box_points(g.lower, g.upper, 5, seed=k)
        X = np.array([[float(v) for v in x] for x in pts])
        exact = np.array([[float(v) for v in g.evaluate(x)] for x in pts])
        for stats in ({}, {"mean": "1/2", "scale": "3/2"}):
            text_out = api.export(doc, tmp_path / f"c{k}.onnx", format="onnx", verify=8,
                                  **stats)
            assert "largest output agrees at 8/8" in text_out.text
            err = float(text_out.text.split("max abs error ")[1].split(",")[0])
            assert err < 1e-9
            api.export(doc, tmp_path / f"c{k}.npz", format="npz", **stats)
            Y = evaluate_npz_export(tmp_path / f"c{k}.npz", X)
            assert np.max(np.abs(Y - exact)) < 1e-9
        api.export(doc, tmp_path / f"c{k}.json", format="json", mean="1/3", scale="5/2")
        back = read_exported_json(tmp_path / f"c{k}.json")
        assert back == f
        assert [back.evaluate(x) for x in pts[:2]] == [g.evaluate(x) for x in pts[:2]]


@pytest.mark.parametrize("format", ["json", "npz", "onnx"])
def test_export_progress_counts_every_layer_then_the_write(cert, tmp_path, format):
    if format == "onnx":
        pytest.importorskip("onnx")
    seen: list[tuple[int, int]] = []
    api.export(cert, tmp_path / f"x.{format}", format=format,
               progress=lambda d, t: seen.append((d, t)))
    depth = len(cert["network"]["layers"])
    # the check and the read per frozen layer, the write, and for onnx the timing: the total
    # is known from the first call on
    total = 2 * depth + 1 + (format == "onnx")
    assert {t for _, t in seen} == {total}
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == total and depth in done and 2 * depth in done
