"""The ``globalavgpool`` kind end to end (issue 31's acceptance kind): the graph tails PyTorch's
exporters write for ``AdaptiveAvgPool2d(1)`` in the repository's real ResNet-8 models, the
operator variants, the state-dict token, the certificate through both arithmetics and through the
checker as a copied folder, the rules of ``checker/kinds/globalavgpool.py`` on documents the writer
would never produce, and the exports.

(The kind-contract suites run the generic parts for every kind: ``tests/kinds/``.)
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from exactnorm import api, checker, checker_flint
from exactnorm.errors import InputError
from exactnorm.model.interop import target_from_onnx, target_from_state_dict
from exactnorm.model.layers import TargetLayer
from exactnorm.model.operators import GlobalAvgPool

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
#: the real files and the tensor their classifier tail starts from (the last block's ReLU)
TAILS = {"resnet8_digits.onnx": "relu_6",  # dynamo: ReduceMean(axes [-1, -2]), Reshape, Gemm
         "resnet8_digits_bn.onnx": "/layer3/Relu_1_output_0"}  # GlobalAveragePool, Flatten


def _both(doc: dict) -> checker.Verdict:
    v1 = checker.check_certificate(copy.deepcopy(doc))
    v2 = checker_flint.check_certificate(copy.deepcopy(doc))
    assert (v1.ok, v1.rule, v1.message) == (v2.ok, v2.rule, v2.message)
    return v1


def _tail(name: str, tmp_path: Path) -> Path:
    out = tmp_path / f"tail_{name}"
    onnx.utils.extract_model(str(BENCH / name), str(out), [TAILS[name]], ["logits"])
    return out


# the whole residual models are read since issue 32: tests/model/test_interop_residual.py


@pytest.mark.parametrize("name", sorted(TAILS))
def test_the_real_classifier_tails_read_certify_and_export(name, tmp_path):
    """The tail of each real ResNet-8 (global pooling of 32×7×7, the 32→10 classifier) as
    exported: read exactly, equal to onnxruntime, certified VALID by both arithmetics, and the
    float64 export agrees with the exact target."""
    path = _tail(name, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no classifier head here: no note
        t = target_from_onnx(path, 0, 1)
    assert [layer.kind for layer in t.layers] == ["globalavgpool", "dense"]
    assert t.layers[0].operator.input_shape == (32, 7, 7)
    X = np.random.default_rng(0).random((3, 32 * 7 * 7)).astype(np.float32)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    theirs = np.concatenate([session.run(None, {session.get_inputs()[0].name:
                                                x.reshape(1, 32, 7, 7)})[0] for x in X])
    exact = np.array([[float(v) for v in t.evaluate([Fraction(float(a)) for a in x])]
                      for x in X])
    assert np.allclose(theirs, exact, rtol=1e-5, atol=1e-5)
    c = api.certify(path, box="0:1", seed=0)
    doc = api.certificate_document(c)
    assert _both(doc).ok
    assert doc["provenance"]["source"]["input"]["shape"] == [1, 32, 7, 7]
    result = api.export(doc, tmp_path / "export.onnx", format="onnx", verify=6)
    assert "largest output agrees at 6/6" in result.text
    assert result.verification["box"]["export"]["max_rel"] < 1e-8


def _pool_graph(op_nodes: list, inits: list, shape: tuple[int, ...], opset: int) -> object:
    graph = helper.make_graph(op_nodes, "gap", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["N", *shape])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def test_reducemean_variants_and_refusals():
    """Axes as an attribute (before opset 18) or an input, positive or negative, keepdims 0 or
    1, all read as the same global pooling; any other reduction is refused by name."""
    reference = TargetLayer(GlobalAvgPool((2, 3, 3)))
    variants = [
        ([helper.make_node("ReduceMean", ["x"], ["y"], name="m", axes=[2, 3])], [], 13),
        ([helper.make_node("ReduceMean", ["x"], ["y"], name="m", axes=[-1, -2], keepdims=0)],
         [], 13),
        ([helper.make_node("ReduceMean", ["x", "a"], ["y"], name="m")],
         [numpy_helper.from_array(np.array([3, 2], dtype=np.int64), "a")], 18),
        ([helper.make_node("GlobalAveragePool", ["x"], ["y"], name="m")], [], 13),
    ]
    for nodes, inits, opset in variants:
        t = target_from_onnx(_pool_graph(nodes, inits, (2, 3, 3), opset), 0, 1)
        assert t.layers == (reference,)
    for axes in ([1, 2], [3], [0, 2, 3]):
        with pytest.raises(InputError, match=r"'m' \(ReduceMean\): only a mean over the two "
                                             r"spatial axes"):
            target_from_onnx(_pool_graph([helper.make_node(
                "ReduceMean", ["x"], ["y"], name="m", axes=axes)], [], (2, 3, 3), 13), 0, 1)
    with pytest.raises(InputError, match="reads a flat vector"):
        target_from_onnx(_pool_graph([helper.make_node("GlobalAveragePool", ["x"], ["y"],
                                                       name="m")], [], (18,), 13), 0, 1)


def test_the_state_dict_token_reads_the_same_target(tmp_path):
    rng = np.random.default_rng(1)
    K, b = rng.normal(size=(4, 1, 3, 3)).astype(np.float32), rng.normal(size=4).astype(np.float32)
    W, c = rng.normal(size=(2, 4)).astype(np.float32), rng.normal(size=2).astype(np.float32)
    sd = {"0.weight": K, "0.bias": b, "3.weight": W, "3.bias": c}
    t = target_from_state_dict(sd, 0, 1, architecture="conv(padding=1),relu,globalavgpool,"
                                                      "flatten,linear", input_shape=(1, 5, 5))
    inits = [numpy_helper.from_array(v, k) for k, v in sd.items()]
    nodes = [helper.make_node("Conv", ["x", "0.weight", "0.bias"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"], axis=1),
             helper.make_node("Gemm", ["f", "3.weight", "3.bias"], ["y"], transB=1)]
    assert t == target_from_onnx(_pool_graph(nodes, inits, (1, 5, 5), 13), 0, 1)
    assert [layer.kind for layer in t.layers] == ["conv", "globalavgpool", "dense"]


@pytest.fixture(scope="module")
def gap_doc() -> dict:
    from flint import fmpq, fmpq_mat

    from exactnorm.model.network import TargetNetwork
    from exactnorm.model.operators import Conv, ConvGeometry

    g = ConvGeometry((1, 4, 4), (2, 2))
    conv = TargetLayer(Conv(g, fmpq_mat([[1, -1, 2, 0], [0, 1, 1, -1]])), (fmpq(1), fmpq(-1)),
                       "relu")
    head = TargetLayer(fmpq_mat([[1, 2], [-1, fmpq(1, 2)]]), (fmpq(0), fmpq(1)), "identity")
    t = TargetNetwork((conv, TargetLayer(GlobalAvgPool((2, 3, 3))), head), (fmpq(0),) * 16,
                      (fmpq(1),) * 16)
    return api.certificate_document(api.certify(t, seed=0, jobs=1))


def _gap_entry(doc: dict) -> tuple[int, dict]:
    return next((j, L) for j, L in enumerate(doc["network"]["layers"], 1)
                if L.get("kind") == "globalavgpool")


def test_the_rules_of_the_checkers_module_on_documents_the_writer_never_makes(gap_doc):
    """Each rule of checker/kinds/globalavgpool.py refuses, in both arithmetics, with its name:
    shape (a product that is not the width read), format (activation, a γ), segment (a layer
    other than one global pooling reading the segment input), identity (another shape)."""
    assert _both(gap_doc).ok
    j, _ = _gap_entry(gap_doc)
    t = next(i for i, L in enumerate(gap_doc["target"]["layers"])
             if L.get("kind") == "globalavgpool")

    def frozen(edit):
        def apply(d):
            edit(d["network"]["layers"][j - 1])
        return apply

    cases = {
        "shape": [frozen(lambda L: L.update(input_shape=[2, 3, 2])),
                  frozen(lambda L: L.update(input_shape=[2, 3])),
                  lambda d: d["target"]["layers"][t].update(input_shape=[18, 1, 2]),
                  frozen(lambda L: L.update(input=0))],  # the 16 inputs are not 2x3x3
        "format": [frozen(lambda L: L.update(activation="relu")),
                   frozen(lambda L: L.update(gamma=[1, 1])),
                   frozen(lambda L: L.pop("activation"))],
        "segment": [frozen(lambda L: L.update(kind="avgpool", kernel_shape=[3, 3],
                                              stride=[1, 1], padding=[0, 0]))],
        "identity": [frozen(lambda L: L.update(input_shape=[2, 9, 1]))],
    }
    for rule, edits in cases.items():
        for edit in edits:
            doc = copy.deepcopy(gap_doc)
            edit(doc)
            v = _both(doc)
            assert not v.ok and v.rule == rule, (rule, v)


def test_the_checker_folder_copied_alone_checks_a_global_pooling(gap_doc, tmp_path):
    shutil.copytree(ROOT / "exactnorm" / "checker", tmp_path / "checker")
    bad = copy.deepcopy(gap_doc)
    j, _ = _gap_entry(bad)
    bad["network"]["layers"][j - 1]["input_shape"] = [2, 9, 1]
    for name, doc, code in (("ok.json", gap_doc, 0), ("bad.json", bad, 1)):
        (tmp_path / name).write_text(json.dumps(doc))
        res = subprocess.run([sys.executable, "-I", "-c", "import runpy, sys; sys.path.insert"
                              "(0, '.'); sys.argv[1:] = [sys.argv[1]]; runpy.run_module("
                              "'checker', run_name='__main__')", name], cwd=tmp_path,
                             capture_output=True, text=True, check=False)
        assert res.returncode == code, res.stderr


def test_the_next_box_is_the_channel_mean_of_the_bounds(gap_doc):
    """The checker's box after a global pooling against the model's exact interval rule."""
    from exactnorm.certificate import read_target
    from exactnorm.checker.budget import Budget
    from exactnorm.checker.records import TargetRecord
    from exactnorm.checker.walk import next_box

    layer = TargetLayer(GlobalAvgPool((2, 2, 3)))
    lo = [Fraction(k, 7) - 1 for k in range(12)]
    hi = [x + Fraction(k % 3, 5) for k, x in enumerate(lo)]
    Q = 35
    box = ([int(x * Q) for x in lo], [int(x * Q) for x in hi], Q)
    layer_record = TargetRecord("globalavgpool", None, None, "identity", 2, shape=(2, 2, 3))
    out_lo, out_hi, D = next_box(layer_record, box, Budget(10**9), 2)
    mn, mx = layer.interval(tuple(api_q(x) for x in lo), tuple(api_q(x) for x in hi))
    assert [Fraction(x, D) for x in out_lo] == [Fraction(int(v.p), int(v.q)) for v in mn]
    assert [Fraction(x, D) for x in out_hi] == [Fraction(int(v.p), int(v.q)) for v in mx]
    assert read_target(gap_doc).layers[1] == TargetLayer(GlobalAvgPool((2, 3, 3)))


def api_q(x: Fraction):
    from flint import fmpq

    return fmpq(x.numerator, x.denominator)
