"""What re-tuning only a transformer's LayerNorms reaches: exact verdicts and their witnesses,
each verdict against an independent argument (a target built to be reachable, a float
least-squares residual, a mutated witness refused), and the command line's words and exit codes."""

from __future__ import annotations

import copy
import json

import numpy as np
import onnx
import pytest
from flint import fmpq, fmpq_mat

from exactnorm.analysis.capacity_attention import check_witness, transformer_capacity
from exactnorm.commands._json import SCHEMA
from exactnorm.errors import InputError
from exactnorm.model.interop.transformer import transformer_from_onnx
from exactnorm.model.interop.transformer_build import onnx_transformer
from exactnorm.model.layers import TargetLayer
from exactnorm.model.transformer import Slot, Transformer
from tests.commands.test_json_output import errors
from tests.helpers import run_cli

SMALL = {"vocabulary": 5, "d_model": 8, "heads": 2, "d_mlp": 8}


def _model(seed: int, **kw) -> Transformer:
    return transformer_from_onnx(onnx_transformer(seed, **{**SMALL, **kw}))


def _answers(given, target):
    return {(q.kind, q.name): q for q in transformer_capacity(given, target).questions}


def _with_gains(proto, rng):
    """The model with every LayerNorm's g and b changed (float32 values): the target a
    re-tuning reaches by construction."""
    out = copy.deepcopy(proto)
    ln_inputs = {i for n in out.graph.node if n.op_type == "LayerNormalization"
                 for i in n.input[1:]}
    for t in out.graph.initializer:
        if t.name in ln_inputs:
            a = onnx.numpy_helper.to_array(t)
            t.CopyFrom(onnx.numpy_helper.from_array(
                (a * rng.uniform(0.5, 1.5, a.shape) + rng.normal(0, 0.1, a.shape))
                .astype(np.float32), t.name))
    return out


def test_a_re_tuned_layernorm_is_reached_with_its_gains() -> None:
    proto = onnx_transformer(0, **SMALL)
    given = transformer_from_onnx(proto)
    target = transformer_from_onnx(_with_gains(proto, np.random.default_rng(1)))
    answers = _answers(given, target)
    tunable = [q for q in answers.values() if q.word != "NOT TUNABLE"]
    assert tunable and all(q.word == "REACHABLE" for q in tunable), \
        [(q.name, q.word) for q in tunable]
    # the witness γ is the target's gain where the slot's columns are independent: check the
    # defining property directly, W diag(γ) − W' diag(g') ⊥ 1⊥ (rows constant)
    q = answers["slot", "block0.head0.q"]
    values = {tuple(v) if isinstance(v, list) else v: fmpq(*map(int, (x.split("/") + ["1"])[:2]))
              for v, x in q.witness["values"]}
    W = given.slots["block0.head0.q"].layers[0].weight
    Wt = target.slots["block0.head0.q"].layers[0].weight
    g_t = target.nodes[2].layernorm.gain
    for r in range(W.nrows()):
        row = [W[r, i] * values["gamma", i] - Wt[r, i] * g_t[i] for i in range(W.ncols())]
        assert len(set(row)) == 1


def test_another_model_is_unreachable_with_checked_witnesses() -> None:
    given, target = _model(0), _model(1)
    answers = _answers(given, target)
    q = answers["slot", "block0.head0.q"]
    assert q.word == "UNREACHABLE" and check_witness(given, target, q.witness)
    # an independent view: the float least-squares residual of the same linear system
    W = np.array(given.slots[q.name].layers[0].weight.tolist(), dtype=float)
    Wt = np.array(target.slots[q.name].layers[0].weight.tolist(), dtype=float)
    g_t = np.array([float(x) for x in target.nodes[2].layernorm.gain])
    rows, d = W.shape
    C = np.zeros((rows * d, d + rows))
    rhs = np.zeros(rows * d)
    for r in range(rows):
        for i in range(d):
            C[r * d + i, i], C[r * d + i, d + r] = W[r, i], -1.0
            rhs[r * d + i] = Wt[r, i] * g_t[i]
    residual = np.linalg.lstsq(C, rhs, rcond=None)[1]
    assert residual.size and residual[0] > 1e-6
    # a changed multiplier or a changed equation no longer proves anything
    w = copy.deepcopy(q.witness)
    w["multipliers"][0] = "0"
    assert not check_witness(given, target, w)
    w = copy.deepcopy(q.witness)
    w["equations"][0][3] = (w["equations"][0][3] + 1) % 8
    assert not check_witness(given, target, w)
    scores = answers["scores", "node3"]
    assert scores.word == "UNREACHABLE" and check_witness(given, target, scores.witness)
    w = copy.deepcopy(scores.witness)
    w["multipliers"] = [str(-int(x.split("/")[0])) + ("/" + x.split("/")[1] if "/" in x else "")
                        for x in w["multipliers"][:-1]] + w["multipliers"][-1:]
    assert not check_witness(given, target, w)


def _rotated(given: Transformer, R: fmpq_mat) -> Transformer:
    """Every head's queries by R and keys by R⁻ᵀ: the same scores, other slots."""
    Rt = R.inv().transpose()
    slots = dict(given.slots)
    for node in given.nodes:
        for h in node.heads:
            for name, M in ((h.q, R), (h.k, Rt)):
                L = given.slots[name].layers[0]
                b = M * fmpq_mat(len(L.bias), 1, list(L.bias))
                slots[name] = Slot(name, (TargetLayer(M * L.weight, tuple(
                    b[i, 0] for i in range(b.nrows())), L.activation),), given.slots[name].role)
    return Transformer(given.vocabulary, given.positions, given.nodes, given.output, slots)


def test_scores_reached_where_queries_and_keys_are_not() -> None:
    given = _model(0)
    R = fmpq_mat([[1, 1, 0, 0], [0, 2, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]])
    target = _rotated(given, R)
    answers = _answers(given, target)
    assert answers["slot", "block0.head0.q"].word == "UNREACHABLE"
    assert answers["slot", "block0.head0.k"].word == "UNREACHABLE"
    s = answers["scores", "node3"]
    assert s.word == "REACHABLE" and check_witness(given, target, s.witness), s.reason


def test_one_head_leaves_a_family_undecided() -> None:
    # one head of d = 4: the relaxation has more unknowns than independent equations
    given, target = _model(0, d_model=4, heads=1), _model(1, d_model=4, heads=1)
    s = _answers(given, target)["scores", "node3"]
    assert s.word == "UNDECIDED" and "dimensional family" in s.reason, s


def test_post_ln_attention_reads_no_layernorm() -> None:
    given, target = _model(0, norm="post"), _model(1, norm="post")
    answers = _answers(given, target)
    assert answers["scores", "node1"].word == "NOT TUNABLE"
    assert answers["slot", "block0.head0.q"].word == "NOT TUNABLE"


def test_another_architecture_is_refused() -> None:
    with pytest.raises(InputError, match="architecture|differs|widths"):
        transformer_capacity(_model(0), _model(0, d_model=4))


def test_cli_words_exit_codes_and_written_witnesses(tmp_path) -> None:
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(onnx_transformer(0, **SMALL), a)
    onnx.save(onnx_transformer(1, **SMALL), b)
    out = tmp_path / "cap.json"
    done = run_cli("capacity", str(a), "--target", str(b), "--out", str(out))
    assert done.returncode == 1 and done.stdout.startswith("UNREACHABLE"), done.stderr
    doc = json.loads(out.read_text())
    given, target = transformer_from_onnx(a), transformer_from_onnx(b)
    witnessed = [q for q in doc["questions"] if q["witness"]]
    assert witnessed and all(check_witness(given, target, q["witness"]) for q in witnessed)
    done = run_cli("capacity", str(a), "--target", str(a), "--json")
    shown = json.loads(done.stdout)
    assert done.returncode == 0 and shown["verdict"] == "REACHABLE"
    assert not errors(shown, SCHEMA), errors(shown, SCHEMA)  # the documented --json schema
    words = {q["word"] for q in shown["details"]["questions"]}
    assert "REACHABLE" in words and words <= {"REACHABLE", "NOT TUNABLE"}, words
    done = run_cli("capacity", str(a), "--json")
    assert done.returncode == 0 and not errors(json.loads(done.stdout), SCHEMA)
    done = run_cli("capacity", str(a))
    assert done.returncode == 0 and "family of dimension ≤ 8" in done.stdout
    done = run_cli("capacity", str(a), "--target", str(b), "--box", "0:1")
    assert done.returncode == 2 and "does not apply" in done.stderr
