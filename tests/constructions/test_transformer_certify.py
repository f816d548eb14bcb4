"""Certifying transformers end to end (exactnorm certify on a token-id ONNX model): the small
exported model with default flags through the command line, both arithmetics VALID; the same
document from the API and for every number of processes; the full-size trained models (slow)."""

from __future__ import annotations

import json

import pytest

from exactnorm import checker, checker_flint
from exactnorm.api import certify, check_file, write_certificate
from exactnorm.api._transformer import certify_transformer, plan_transformer
from exactnorm.certificate.transformer import read_transformer
from exactnorm.model.interop.transformer_build import onnx_transformer
from tests.helpers import ROOT, both, run_cli

DATA = ROOT / "tests" / "model" / "data"


def test_cli_certifies_the_small_exported_model(tmp_path) -> None:
    out = tmp_path / "tiny.json.gz"
    done = run_cli("certify", str(DATA / "tiny_preln.onnx"), "--out", str(out), timeout=900)
    assert done.returncode == 0, done.stderr
    assert "TRANSFORMER VALID (flint checker)" in done.stdout
    for pure in (True, False):
        v = check_file(out, pure=pure)
        assert v.ok and v.facts["blocks"] == 1 and len(v.facts["slots"]) == 10, v
    done = run_cli("check", str(out), "--pure", timeout=600)
    assert done.returncode == 0 and "TRANSFORMER VALID" in done.stdout


def test_api_and_cli_give_identical_certificates_for_a_transformer(tmp_path) -> None:
    done = run_cli("certify", str(DATA / "tiny_preln.onnx"), "--out", str(tmp_path / "cli.json"),
                   timeout=900)
    assert done.returncode == 0, done.stderr
    write_certificate(certify(str(DATA / "tiny_preln.onnx")), tmp_path / "api.json")
    assert (tmp_path / "cli.json").read_bytes() == (tmp_path / "api.json").read_bytes()


def test_api_and_processes_give_one_document() -> None:
    model = onnx_transformer(2, vocabulary=4, d_model=4, heads=2, d_mlp=4, norm="post")
    one = certify_transformer(plan_transformer(model, jobs=1)).document
    two = certify_transformer(plan_transformer(model, jobs=2)).document
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    assert both(one).ok


def test_api_certify_reads_a_transformer_file() -> None:
    result = certify(str(DATA / "tiny_preln.onnx"), jobs=1)
    assert checker_flint.check_certificate(result.document).ok
    tr, networks = read_transformer(result.document)
    assert tr.nodes == result.plan.transformer.nodes
    # each slot's frozen network equals its target exactly at the corners of its box
    for name, (target, frozen) in networks.items():
        for x in target.corners(limit=4):
            assert frozen.evaluate(x) == target.evaluate(x), name


def test_no_layernorm_by_interval_propagation() -> None:
    model = onnx_transformer(4, vocabulary=4, d_model=4, heads=2, d_mlp=4, norm="none")
    doc = certify_transformer(plan_transformer(model, jobs=1)).document
    v = checker.check_certificate(doc)
    assert v.ok and v.facts["layernorms"] == 0, v


@pytest.mark.slow
@pytest.mark.parametrize("name", ["modadd_1l_preln", "modadd_2l_preln", "modadd_1l_postln"])
def test_trained_models_certify_with_default_flags(tmp_path, name: str) -> None:
    out = tmp_path / f"{name}.json.gz"
    done = run_cli("certify", str(DATA / f"{name}.onnx"), "--out", str(out), timeout=1800)
    assert done.returncode == 0, done.stderr
    assert check_file(out, pure=True).ok
