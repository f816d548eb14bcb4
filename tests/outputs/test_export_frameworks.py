"""ONNX and PyTorch exports: run by onnxruntime / ``torch.nn`` (or a numpy re-implementation of
the documented module layout written here) against exact evaluation of the target at random
points of the box, float32 and float64; a corrupted certificate must make them disagree.
"""

from __future__ import annotations

import io
import sys
from fractions import Fraction

import numpy as np
import pytest

from exactnorm import api
from exactnorm.certificate import expand_document, read_target, save_certificate
from exactnorm.cli import main
from exactnorm.errors import InputError, MissingExtraError
from exactnorm.exact.sampling import layer_rng
from exactnorm.model.targets import random_target
from exactnorm.outputs.export import (
    FLOAT_WARNING,
    evaluate_state_dict,
    onnx_model,
    render_export,
    torch_module,
    torch_state_dict,
)

# float tolerances relative to max(1, |g(x)|): float64 rounds each parameter once and the
# forward pass a few times; float32 the same with 2^-24 instead of 2^-53
TOLERANCE = {"float64": 1e-9, "float32": 1e-3}


@pytest.fixture(scope="module", params=["theorem1", "tradeoff"])
def cert(request):
    if request.param == "theorem1":
        doc = api.certificate_document(api.certify(random_target([3, 4, 2], seed=5), seed=1))
    else:  # skips from earlier nodes (docs/constructions.md)
        doc = api.certificate_document(api.certify(random_target([3, 2, 1], seed=8),
                                                   "tradeoff", seed=1, block=1))
        assert any(L.get("skip") for L in doc["network"]["layers"])
    # plain lists and explicit frozen weights: the reference forward pass below reads the JSON
    return expand_document(doc)


@pytest.fixture(scope="module")
def plain(cert):
    """The same certificate with every number written out, for the readers written here."""
    return expand_document(cert)


def _points(doc, n, seed):
    """Random float points of the box and their exact values ``g(x)`` (x as its exact dyadic)."""
    g = read_target(expand_document(doc))
    lo = np.array([float(v) for v in g.lower])
    hi = np.array([float(v) for v in g.upper])
    X = layer_rng(seed, 7).uniform(lo, hi, size=(n, len(lo)))
    exact = np.array([[float(v) for v in g.evaluate([Fraction(float(t)) for t in row])]
                      for row in X])
    return X, exact


def _max_err(got, exact):
    return float(np.max(np.abs(got - exact) / np.maximum(1.0, np.abs(exact))))


def _corrupt(doc):
    bad = expand_document(doc)  # a new document with plain lists
    layer = bad["network"]["layers"][-1]
    layer["beta"][0] = str(Fraction(str(layer["beta"][0])) + 1)
    return bad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("normalization", ["batchnorm", "muladd"])
def test_onnx_export_matches_exact_target(cert, dtype, normalization):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    X, exact = _points(cert, 64, seed=1)

    def run(doc):
        model = onnx_model(doc, dtype=dtype, normalization=normalization, mean="1/4",
                           scale="3/2")
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        return sess.run(None, {"x": X.astype(dtype)})[0].astype(np.float64)

    err = _max_err(run(cert), exact)
    print(f"onnx {normalization} {dtype}: max error {err:.2e}")
    assert err <= TOLERANCE[dtype]
    # the check can fail: β off by one in the last layer moves every output by at least 1/2
    assert _max_err(run(_corrupt(cert)), exact) > 0.25


def _reference_forward(state, doc, X, eps):
    """The documented ``exactnorm.frozen_bn`` layout in numpy, written from the docstring."""
    nodes = [X]
    for k, L in enumerate(doc["network"]["layers"]):
        p = f"blocks.{k}."
        v = nodes[int(state[p + "input_node"])] @ state[p + "linear.weight"].T
        u = (v - state[p + "norm.running_mean"]) / np.sqrt(state[p + "norm.running_var"] + eps) \
            * state[p + "norm.weight"] + state[p + "norm.bias"]
        h = np.maximum(u, 0) if L["activation"] == "relu" else u
        for sk in L.get("skip", []):
            h = h + nodes[sk["from"]] @ state[p + f"skips.{sk['from']}.weight"].T
        nodes.append(h)
    return nodes[-1]


def test_torch_state_dict_layout_without_torch(cert, plain):
    X, exact = _points(cert, 32, seed=2)
    state = torch_state_dict(cert, mean=-2, scale="5/4", eps=1e-3)
    ref = _reference_forward(state, plain, X, 1e-3)
    assert _max_err(ref, exact) <= TOLERANCE["float64"]
    acts = [L["activation"] for L in plain["network"]["layers"]]
    assert np.allclose(evaluate_state_dict(state, acts, X, eps=1e-3), ref, rtol=1e-12, atol=1e-12)
    expected_keys = set()
    for k, L in enumerate(plain["network"]["layers"]):
        expected_keys |= {f"blocks.{k}.{n}" for n in (
            "linear.weight", "norm.weight", "norm.bias", "norm.running_mean",
            "norm.running_var", "norm.num_batches_tracked", "input_node")}
        expected_keys |= {f"blocks.{k}.skips.{s['from']}.weight" for s in L.get("skip", [])}
    assert set(state) == expected_keys
    bad = torch_state_dict(_corrupt(cert), mean=-2, scale="5/4", eps=1e-3)
    assert _max_err(_reference_forward(bad, plain, X, 1e-3), exact) > 0.25


def _hand_built_module(torch, cert, eps):
    """The documented layout rebuilt from torch.nn pieces here, independent of torch_module."""
    nn = torch.nn
    dims = [len(cert["domain"]["lower"])] + [len(L["gamma"]) for L in cert["network"]["layers"]]

    class Block(nn.Module):
        def __init__(self, L, j):
            super().__init__()
            self.linear = nn.Linear(dims[L["input"]], dims[j], bias=False)
            self.norm = nn.BatchNorm1d(dims[j], eps=eps)
            self.act = nn.ReLU() if L["activation"] == "relu" else nn.Identity()
            self.skips = nn.ModuleDict({str(s["from"]): nn.Linear(dims[s["from"]], dims[j],
                                                                  bias=False)
                                        for s in L.get("skip", [])})
            self.register_buffer("input_node", torch.tensor(0))

    root = nn.Module()
    root.blocks = nn.ModuleList([Block(L, j) for j, L in enumerate(cert["network"]["layers"], 1)])
    return root.double().eval()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_export_matches_exact_target(cert, plain, tmp_path, dtype):
    torch = pytest.importorskip("torch")
    X, exact = _points(cert, 32, seed=3)
    module = torch_module(cert, mean="1/3", scale=2, dtype=dtype)
    assert not module.training
    assert all(not p.requires_grad for n, p in module.named_parameters() if ".norm." not in n)
    with torch.no_grad():
        got = module(torch.from_numpy(X.astype(dtype))).double().numpy()
    err = _max_err(got, exact)
    print(f"torch {dtype}: max error {err:.2e}")
    assert err <= TOLERANCE[dtype]
    # the CLI's .pt loads strictly into a module built from the documentation alone
    cpath = tmp_path / "c.json"
    save_certificate(cert, cpath)
    assert main(["export", str(cpath), "--format", "torch", "--out", str(tmp_path / "m.pt"),
                 "--mean", "1/3", "--scale", "2"]) == 0
    state = torch.load(tmp_path / "m.pt", weights_only=True)
    hand = _hand_built_module(torch, plain, 1e-5)
    hand.load_state_dict(state, strict=True)
    ref = _reference_forward({k: v.numpy() for k, v in state.items()}, plain, X, 1e-5)
    with torch.no_grad():
        m64 = torch_module(cert, mean="1/3", scale=2, dtype="float64")
        assert np.allclose(m64(torch.from_numpy(X)).numpy(), ref, rtol=1e-12, atol=1e-12)
    assert _max_err(ref, exact) <= TOLERANCE["float64"]


def test_cli_onnx_export_file_and_stdout(cert, tmp_path, capsys, monkeypatch):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    cpath = tmp_path / "c.json"
    save_certificate(cert, cpath)
    assert main(["export", str(cpath), "--format", "onnx", "--dtype", "float64",
                 "--out", str(tmp_path / "m.onnx")]) == 0
    captured = capsys.readouterr()
    assert "NOT certified" in captured.err
    X, exact = _points(cert, 16, seed=4)
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    assert _max_err(sess.run(None, {"x": X})[0], exact) <= TOLERANCE["float64"]
    # --out -: the same bytes on standard output, the status on stderr, no file named "-"
    buf = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(buf))
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(cpath), "--format", "onnx", "--dtype", "float64",
                 "--out", "-"]) == 0
    sys.stdout.flush()
    assert buf.getvalue() == (tmp_path / "m.onnx").read_bytes()
    assert not (tmp_path / "-").exists()


def test_cli_export_refusals(cert, tmp_path, capsys, monkeypatch):
    cpath = tmp_path / "c.json"
    save_certificate(cert, cpath)
    # a mistyped folder is an error, not a new folder
    assert main(["export", str(cpath), "--format", "json",
                 "--out", str(tmp_path / "typo" / "e.json")]) == 2
    assert "does not exist" in capsys.readouterr().err and not (tmp_path / "typo").exists()
    assert main(["export", str(cpath), "--format", "npz", "--dtype", "float32",
                 "--out", str(tmp_path / "e.npz")]) == 2
    assert "onnx format only" in capsys.readouterr().err
    for name in ("onnx", "torch"):
        monkeypatch.setitem(sys.modules, name, None)
    for fmt, hint in (("onnx", "exactnorm[onnx]"), ("torch", "pip install torch")):
        assert main(["export", str(cpath), "--format", fmt,
                     "--out", str(tmp_path / f"e.{fmt}")]) == 2
        err = capsys.readouterr().err
        assert hint in err and err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(MissingExtraError):
        torch_module(cert)
    with pytest.raises(InputError, match="unknown export format"):
        render_export(cert, "tflite")
    data, warning = render_export(cert, "npz")
    assert data[:2] == b"PK" and warning == FLOAT_WARNING
