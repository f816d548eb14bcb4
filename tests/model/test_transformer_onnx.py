"""Reading transformers from ONNX (exactnorm.model.interop.transformer): the models PyTorch's
exporters wrote (committed files, trained by benchmarks/train_transformers.py) and graphs written
with onnx.helper for every structural variant; the graph read back, evaluated in float64, gives
onnxruntime's logits on every sequence; unsupported graphs are refused fast with the node's
name and the reason."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from exactnorm.errors import InputError
from exactnorm.model.interop.transformer import is_token_model, transformer_from_onnx
from exactnorm.model.interop.transformer_build import onnx_transformer
from tests.helpers import ROOT, run_cli

ort = pytest.importorskip("onnxruntime")
DATA = ROOT / "tests" / "model" / "data"
EXPORTED = ["tiny_preln", "tiny_preln_opset14", "modadd_1l_preln", "modadd_2l_preln",
            "modadd_1l_postln"]


def _agreement(model, tr, every: int = 1) -> float:
    """The largest difference between onnxruntime and the read graph over the sequences."""
    sess = ort.InferenceSession(model if isinstance(model, str) else model.SerializeToString())
    inp = sess.get_inputs()[0]
    worst = 0.0
    seqs = list(itertools.product(range(tr.vocabulary), repeat=inp.shape[-1]))[::every]
    for seq in seqs:
        out = sess.run(None, {inp.name: np.array([seq], dtype=np.int64)})[0]
        mine = tr.evaluate_float(seq)
        worst = max(worst, float(np.abs(out.reshape(mine.shape) - mine).max()
                                 / max(1.0, float(np.abs(mine).max()))))
    return worst


@pytest.mark.parametrize("name", EXPORTED)
def test_exported_models_read_as_their_graphs(name: str) -> None:
    path = str(DATA / f"{name}.onnx")
    assert is_token_model(path)
    tr = transformer_from_onnx(path)
    assert _agreement(path, tr, every=53) < 1e-5  # 261 of the 13,824 sequences
    roles = sorted({s.role for s in tr.slots.values()})
    assert roles == ["embed", "k", "mlp", "o", "q", "unembed", "v"]
    heads = [len(n.heads) for n in tr.nodes if n.op == "attention"]
    assert len(heads) == tr.blocks and all(h >= 2 for h in heads)


def test_exported_architectures() -> None:
    two = transformer_from_onnx(str(DATA / "modadd_2l_preln.onnx"))
    assert (two.blocks, two.vocabulary, two.positions) == (2, 24, 3)
    assert two.slots["block1.mlp"].layers[0].width == 128
    post = transformer_from_onnx(str(DATA / "modadd_1l_postln.onnx"))
    # post-LN: the attention reads the residual stream (the embedding); two LayerNorms after
    # the block's adds and the model's final one
    attn = next(n for n in post.nodes if n.op == "attention")
    assert post.nodes[attn.reads[0]].op in ("input", "slot")
    assert [post.nodes[n.reads[0]].op for n in post.nodes if n.op == "layernorm"][:2] == \
        ["add", "add"]
    # the opset-14 export writes LayerNorm decomposed; it reads as the same transformer
    fused = transformer_from_onnx(str(DATA / "tiny_preln.onnx"))
    split = transformer_from_onnx(str(DATA / "tiny_preln_opset14.onnx"))
    assert fused.nodes == split.nodes and fused.slots == split.slots


VARIANTS = [{}, {"norm": "post"}, {"norm": "none"}, {"layernorm": "decomposed"},
            {"qkv": "fused"}, {"mask": "add"}, {"mask": "none"}, {"blocks": 2, "heads": 4}]


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in
                                                                  kw.items()) or "default")
def test_structural_variants(kw: dict) -> None:
    model = onnx_transformer(3, **kw)
    tr = transformer_from_onnx(model)
    assert _agreement(model, tr) < 1e-5
    masks = {n.mask for n in tr.nodes if n.op == "attention"}
    assert masks == {"none" if kw.get("mask") == "none" else "causal"}
    assert sum(n.op == "layernorm" for n in tr.nodes) == {"pre": 2 * tr.blocks + 1,
                                                           "post": 2 * tr.blocks,
                                                           "none": 0}[kw.get("norm", "pre")]


def test_boxes_hold_every_value() -> None:
    """The derived boxes contain the values each slot reads on every sequence (the rules of
    §11.2 checked against a float run, with a margin for float rounding)."""
    tr = transformer_from_onnx(onnx_transformer(5, norm="none"))
    boxes = tr.boxes()
    reads = tr.slot_reads()
    for seq in itertools.product(range(tr.vocabulary), repeat=tr.positions):
        values = _node_values(tr, seq)
        for name, k in reads.items():
            lo, hi = (np.array([float(x) for x in b]) for b in boxes[k])
            assert (values[k] >= lo - 1e-9).all() and (values[k] <= hi + 1e-9).all(), name


def _node_values(tr, seq):
    """Every node's float values (a copy of evaluate_float that keeps them)."""
    out = {}
    X = np.zeros((len(seq), tr.vocabulary + tr.positions))
    X[np.arange(len(seq)), list(seq)] = 1
    X[np.arange(len(seq)), tr.vocabulary + np.arange(len(seq))] = 1
    for k, node in enumerate(tr.nodes):
        if node.op == "input":
            out[k] = X
        elif node.op == "slot":
            out[k] = tr.slots[node.slot].evaluate_float(out[node.reads[0]])
        elif node.op == "layernorm":
            out[k] = node.layernorm.evaluate_float(out[node.reads[0]])
        elif node.op == "add":
            out[k] = out[node.reads[0]] + out[node.reads[1]]
        else:
            out[k] = tr._attention_float(node, out[node.reads[0]])
    return out


@pytest.mark.parametrize("act, words", [("Sigmoid", "not piecewise linear"),
                                        ("Tanh", "not piecewise linear"),
                                        ("LeakyRelu", "not a ReLU")])
def test_refused_activations(act: str, words: str) -> None:
    with pytest.raises(InputError, match=words) as exc:
        transformer_from_onnx(onnx_transformer(0, activation=act))
    assert f"({act})" in str(exc.value)


def test_gelu_model_refused_fast_with_exit_2(tmp_path) -> None:
    path = str(DATA / "modadd_1l_gelu.onnx")
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"'/blocks.0/Gelu' \(Gelu\): not piecewise linear"):
        transformer_from_onnx(path)
    assert time.perf_counter() - t0 < 2
    t0 = time.perf_counter()
    done = run_cli("certify", path, "--out", str(tmp_path / "gelu.json"), timeout=60)
    assert done.returncode == 2
    assert "not piecewise linear" in done.stderr and "/blocks.0/Gelu" in done.stderr
    assert time.perf_counter() - t0 < 10  # the interpreter's start-up included


def test_unsupported_graphs_name_the_node() -> None:
    from onnx import helper

    model = onnx_transformer(0)
    # an RMSNorm-like power of an uncentred token in place of the first LayerNorm's input
    g = model.graph
    ln = next(n for n in g.node if n.op_type == "LayerNormalization")
    ln.op_type, ln.name = "RMSNormalization", "rms"
    del ln.attribute[:]
    model.opset_import.append(helper.make_opsetid("", 23))
    with pytest.raises(InputError, match="'rms'"):
        transformer_from_onnx(model)
    two_inputs = onnx_transformer(0)
    two_inputs.graph.input.append(helper.make_tensor_value_info("mask", 7, [1, 3]))
    with pytest.raises(InputError, match="one input"):
        transformer_from_onnx(two_inputs)
