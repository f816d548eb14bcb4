"""Certify, export and report residual networks end to end.

A small ResNet (stem, identity block, stride-2 block with a projection or an option-A shortcut,
global pooling, classifier) is written as ONNX with the onnx helper API (no torch), certified
through the API and the CLI, and its frozen network compared with the target exactly at rational
points. The exports are compared with the exact target (onnxruntime, the npz forward pass, the
exact JSON export read back) and with the source model's predictions on the digits. The
checker runs wherever the verbs run it by default: ``certify``, ``export`` and ``report`` check
each residual certificate first (both arithmetics are compared in
tests/checker/test_checker_residual.py).
"""

from __future__ import annotations

import copy
import json
import random
import re
from fractions import Fraction

import numpy as np
import pytest

from exactnorm import api
from exactnorm.certificate import certificate_document, read_networks
from exactnorm.outputs.export import (
    evaluate_npz_export,
    evaluate_state_dict,
    onnx_model,
    read_exported_json,
    torch_state_dict,
)
from exactnorm.outputs.report import report_markdown

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tests.model.resnet_onnx import reference_forward, small_resnet_onnx  # noqa: E402


def _points(n: int, count: int, seed: int) -> list[list[Fraction]]:
    rng = random.Random(seed)
    return [[Fraction(rng.randint(0, 16), 16) for _ in range(n)] for _ in range(count)]


@pytest.fixture(scope="module", params=["proj", "optionA"])
def certified(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(request.param)
    path = tmp / "resnet.onnx"
    onnx.save(small_resnet_onnx(7, shortcut=request.param, den=8), path)
    c = api.certify(path, box="0:1", seed=0)
    return path, c, certificate_document(c)


def _run(model, X: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    shape = [d.dim_value or len(X) for d in model.graph.input[0].type.tensor_type.shape.dim]
    dtype = np.float32 if inp.type == "tensor(float)" else np.float64
    if shape[0] == 1 and len(X) > 1:
        return np.concatenate([_run(model, x[None]) for x in X])
    return session.run(None, {inp.name: X.reshape(shape).astype(dtype)})[0]


def test_the_frozen_resnet_equals_the_target_exactly(certified):
    _, c, doc = certified
    g, f = c.target, c.network
    assert not g.is_chain and f.residuals
    for x in _points(36, 4, 1):
        assert f.evaluate(x) == g.evaluate(x)
    # the document reads back to the same networks, topology and residuals included
    g2, f2 = read_networks(doc)
    assert g2 == g and g2.wiring == g.wiring
    assert f2.residuals == f.residuals
    x = _points(36, 1, 2)[0]
    assert f2.evaluate(x) == g.evaluate(x)


def test_the_exact_cross_check_follows_the_graph(certified):
    """exact_agreement compares every checkpoint with its target node; without the residuals
    the document is refused when it is read (the checker's rule ``skip``: a checkpoint whose
    target layer has a skip carries the residual), and the refusal says which."""
    from exactnorm.certificate import exact_agreement
    from exactnorm.errors import InputError

    _, c, doc = certified
    assert exact_agreement(doc, points=3) == 3
    bad = copy.deepcopy(doc)
    for layer in bad["network"]["layers"]:
        layer.pop("residual", None)
    with pytest.raises(InputError) as caught:
        exact_agreement(bad, points=3)
    cp, i = map(int, re.search(r"checkpoint layer (\d+) carries no residual, target layer (\d+)",
                               str(caught.value)).groups())
    assert c.target.wire(i).skip is not None and c.network.checkpoints[i - 1] == cp


def test_a_changed_residual_changes_the_function(certified):
    """Dropping the checkpoints' residuals (the construction without skips) breaks the
    equality: the comparison above can fail."""
    _, c, _ = certified
    f = c.network
    plain = type(f)(f.input_dim, f.layers, f.checkpoints)
    xs = _points(36, 4, 3)
    assert any(plain.evaluate(x) != c.target.evaluate(x) for x in xs)


def test_the_onnx_export_is_a_resnet_with_batchnorm_and_add(certified):
    _, c, doc = certified
    model = onnx_model(doc, dtype="float64")
    nodes = list(model.graph.node)
    adds = [n for n in nodes if n.name.endswith("_residual_add")]
    assert len(adds) == len(c.network.residuals) == 2
    for add in adds:
        j = int(re.search(r"layer(\d+)_residual_add$", add.name).group(1))
        # the residual is added to the normalized branch, and the Relu reads the sum
        producer = next(n for n in nodes if add.input[0] in n.output)
        if producer.op_type == "Flatten":  # float64: the im2col form is flat
            producer = next(n for n in nodes if producer.input[0] in n.output)
        assert producer.op_type == "BatchNormalization"
        assert producer.name.endswith(f"layer{j}_norm")
        relu = next(n for n in nodes if n.name.endswith(f"layer{j}_relu"))
        assert list(relu.input) == list(add.output)
    X = np.array([[float(v) for v in x] for x in _points(36, 8, 4)])
    exact = np.array([[float(v) for v in c.target.evaluate(x)] for x in _points(36, 8, 4)])
    for source in (doc, c):
        assert np.allclose(_run(onnx_model(source, dtype="float64", interface="plain"), X),
                           exact, rtol=1e-9, atol=1e-9)
    # with the source model's interface: its float32 input and logits
    assert np.allclose(_run(onnx_model(doc, dtype="float64"), X), exact, rtol=1e-6, atol=1e-6)
    # float32 with Conv nodes on NCHW: a float copy, close
    assert np.allclose(_run(onnx_model(doc, dtype="float32"), X), exact, rtol=1e-2, atol=1e-2)


def test_a_changed_gamma_changes_the_export(certified):
    _, c, doc = certified
    bad = copy.deepcopy(doc)
    j = c.network.checkpoints[2] - 1  # the first block's checkpoint layer
    gamma = bad["network"]["layers"][j]["gamma"]
    gamma["num"][0] = gamma["num"][0] * 2 + 1
    X = np.array([[float(v) for v in x] for x in _points(36, 6, 5)])
    assert not np.allclose(_run(onnx_model(bad, dtype="float64", interface="plain"), X),
                           _run(onnx_model(doc, dtype="float64", interface="plain"), X),
                           rtol=1e-9, atol=1e-9)


def test_verify_npz_and_json_exports(certified, tmp_path):
    _, c, doc = certified
    result = api.export(doc, tmp_path / "r.onnx", format="onnx", verify=6)
    assert "largest output agrees at 6/6" in result.text
    assert result.verification["box"]["export"]["max_rel"] < 1e-8
    api.export(doc, tmp_path / "r.npz", format="npz")
    xs = _points(36, 5, 6)
    X = np.array([[float(v) for v in x] for x in xs])
    exact = np.array([[float(v) for v in c.target.evaluate(x)] for x in xs])
    assert np.allclose(evaluate_npz_export(tmp_path / "r.npz", X), exact, rtol=1e-9, atol=1e-9)
    api.export(doc, tmp_path / "r.json", format="json")
    back = read_exported_json(tmp_path / "r.json")
    assert back.residuals == c.network.residuals
    assert all(back.evaluate(x) == c.target.evaluate(x) for x in xs[:2])
    # the PyTorch layout's state dict and its numpy forward pass (no torch needed)
    state = torch_state_dict(doc)
    assert sum(k.endswith("residual_index") for k in state) == len(c.network.residuals)
    kinds = [layer.kind for layer in c.network.layers]
    acts = [layer.activation for layer in c.network.layers]
    assert np.allclose(evaluate_state_dict(state, acts, X, kinds=kinds), exact, rtol=1e-9,
                       atol=1e-9)


def test_the_export_reproduces_the_source_predictions_on_digits(tmp_path):
    """A seeded ResNet on the 8×8 digits (pixel values in [0, 1]): certified, exported in
    float64, and run under onnxruntime beside the source model on all 1,797 digits: the same
    prediction for every digit."""
    from sklearn.datasets import load_digits

    source = small_resnet_onnx(11, side=8, den=16, shortcut="proj")
    path = tmp_path / "digits_resnet.onnx"
    onnx.save(source, path)
    c = api.certify(path, box="0:1", seed=0)
    doc = certificate_document(c)
    X = load_digits().images.reshape(-1, 64) / 16.0
    theirs = reference_forward(source, X)
    mine = _run(onnx_model(doc, dtype="float64"), X)
    assert np.array_equal(theirs.argmax(1), mine.argmax(1))
    assert np.allclose(theirs, mine, rtol=1e-4, atol=1e-4)


def test_the_report_names_blocks_and_skips(certified):
    _, c, doc = certified
    md = report_markdown(doc, None, plots=False, checked=False)
    section = md[md.index("## Residual blocks"):]
    cps = c.network.checkpoints
    assert "block 1: target layer 3 (conv 3×3 s1 p1 d1, 2→2 channels, relu) reads a_2 and " \
           "adds the identity of a_1 before its relu" in section
    assert f"checkpoint node {cps[2]} (= a_3) adds the residual identity from node {cps[0]}" \
        in section
    shortcut = c.target.wiring[-3].skip
    if shortcut.kind == "selection":
        assert "adds a selection of a_3 (18 of its entries copied, 9 zeros" in section
    else:
        assert "adds the projection a_5 (target layer 5: conv 1×1 s2 p0 d1, 2→3 channels, " \
               "identity, reading a_3)" in section
    assert f"residual before the activation: identity from node {cps[0]}" in md


def test_the_cli_certifies_exports_and_reports_a_residual_onnx(tmp_path, capsys):
    from exactnorm.cli import main

    path = tmp_path / "resnet.onnx"
    onnx.save(small_resnet_onnx(7, shortcut="proj", den=8), path)
    cert = tmp_path / "c.json.gz"
    assert main(["certify", str(path), "--box", "0:1", "--seed", "0",
                 "--out", str(cert)]) == 0
    assert "VALID (flint checker)" in capsys.readouterr().out
    from exactnorm.certificate import load_certificate

    doc = load_certificate(cert)
    assert any("residual" in L for L in doc["network"]["layers"])
    g, f = read_networks(doc)
    for x in _points(36, 3, 8):
        assert f.evaluate(x) == g.evaluate(x) == api.load_target(path, box="0:1").evaluate(x)
    out = tmp_path / "e.onnx"
    assert main(["export", str(cert), "--format", "onnx", "--dtype", "float64", "--out",
                 str(out), "--verify", "4"]) == 0
    printed = capsys.readouterr().out
    assert "export vs exact target: max abs error" in printed
    assert "predictions changed 0/4" in printed
    assert main(["report", str(cert), "--out", str(tmp_path / "rep")]) == 0
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "## Residual blocks" in text and "adds the projection a_5" in text
    # the certificate is also a target file: its topology reads back
    assert json.loads(json.dumps(doc["target"]["layers"][2]["skip"]))["kind"] == "identity"


def test_the_default_seed_certifies_a_residual_onnx(tmp_path):
    import exactnorm

    path = tmp_path / "resnet.onnx"
    onnx.save(small_resnet_onnx(7, shortcut="proj", den=8), path)
    c = exactnorm.certify(path, box="0:1")
    for x in _points(36, 3, 9):
        assert c.network.evaluate(x) == c.target.evaluate(x)
    # the seed rule 'target' is the default: the checker recomputes the seed from the target's
    # topology too, in both arithmetics
    doc = exactnorm.certificate_document(c)
    flint, pure = exactnorm.check(doc), exactnorm.check(doc, pure=True)
    assert flint.ok and pure.ok and "derived from the canonical target and box, verified" in \
        flint.message
    assert flint.message == pure.message.replace("pure checker", "flint checker")



def test_the_torch_module_is_the_frozen_resnet(certified):
    torch = pytest.importorskip("torch")
    from exactnorm.outputs.export import torch_module

    _, c, doc = certified
    module = torch_module(doc, dtype="float64")
    xs = _points(36, 5, 10)
    X = torch.tensor([[float(v) for v in x] for x in xs], dtype=torch.float64)
    exact = np.array([[float(v) for v in c.target.evaluate(x)] for x in xs])
    with torch.no_grad():
        assert np.allclose(module(X).numpy(), exact, rtol=1e-9, atol=1e-9)


def test_a_dense_residual_document_reads_back_with_its_topology():
    """A residual target of dense layers (no ``kind`` field anywhere): its document is read by
    the reader that knows topology, so the target, the frozen residuals and the exports are
    the construction's."""
    from flint import fmpq, fmpq_mat

    from exactnorm.constructions.plan import construct
    from exactnorm.model.layers import TargetLayer
    from exactnorm.model.network import TargetNetwork, Wiring
    from exactnorm.model.routes import Route, Skip

    rng = random.Random(0)

    def layer(rows: int, act: str) -> TargetLayer:
        return TargetLayer(fmpq_mat([[fmpq(rng.randint(-8, 8), 4) for _ in range(3)]
                                     for _ in range(rows)]),
                           tuple(fmpq(rng.randint(-8, 8), 4) for _ in range(rows)), act)

    g = TargetNetwork((layer(3, "relu"), layer(3, "relu"), layer(2, "identity")),
                      (fmpq(0),) * 3, (fmpq(1),) * 3,
                      wiring=(Wiring(0), Wiring(1, Skip(0, Route.identity(3), "identity")),
                              Wiring(2)))
    c = construct(g, seed=0)
    doc = certificate_document(c)
    assert not any("kind" in L for L in doc["target"]["layers"])
    g2, f2 = read_networks(doc)
    assert g2 == g and g2.wiring == g.wiring and f2.residuals == c.network.residuals
    xs = [[fmpq(a, 4), fmpq(b, 4), fmpq(1, 3)] for a, b in ((0, 4), (1, 2), (3, 3))]
    assert all(f2.evaluate(x) == g.evaluate(x) for x in xs)
    X = np.array([[float(v) for v in x] for x in xs])
    exact = np.array([[float(v) for v in g.evaluate(x)] for x in xs])
    assert np.allclose(_run(onnx_model(doc, dtype="float64"), X), exact, rtol=1e-9, atol=1e-9)
