"""Certifying transformers end to end (exactnorm certify on a token-id ONNX model): the small
exported model with default flags through the command line, both arithmetics VALID; the same
document from the API and for every number of processes; the full-size trained models (slow)."""

from __future__ import annotations

import json

import pytest

from exactnorm import checker, checker_flint
from exactnorm.api import certify, check_file, write_certificate
from exactnorm.api._transformer import certify_transformer, plan_transformer
from exactnorm.certificate import save_certificate
from exactnorm.certificate.transformer import read_transformer
from exactnorm.constructions.costs import FITTED
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


#: the phases whose every feature adds up over slots (the peak takes maxima: the largest system)
ADDITIVE_PHASES = ("build", "write", "check", "gz", "json")


def test_the_plan_estimates_the_slots_with_the_cost_model() -> None:
    """The estimate ``certify`` prints for a transformer is the cost model's on all slots
    together: each phase is the fitted coefficients times the slots' features added up (the
    constant once), the sizes are the slots' sums and maxima, and with several processes the
    build takes at least its largest slot (the slots are the parallel unit)."""
    plan = plan_transformer(DATA / "modadd_1l_postln.onnx", jobs=1)
    est, parts = plan.estimate, [sp.plan.estimate for sp in plan.slots]
    assert {sp.plan.construction for sp in plan.slots} == {"theorem1", "tradeoff"}
    assert est.depth == sum(e.depth for e in parts)
    assert est.systems == sum(e.systems for e in parts)
    assert est.system_size == max(e.system_size for e in parts)
    assert est.gamma_bits == max(e.gamma_bits for e in parts)
    for phase in ADDITIVE_PHASES:
        summed = {name: 1.0 if name == "const" else
                  sum(e.footprint.features[phase][name] for e in parts)
                  for name in est.footprint.features[phase]}
        assert est.footprint.features[phase] == pytest.approx(summed), phase
        model = sum(getattr(FITTED, phase).get(name, 0.0) * value
                    for name, value in summed.items())
        stated = {"build": est.build_seconds, "write": est.write_seconds,
                  "check": est.check_seconds, "gz": est.certificate_bytes,
                  "json": est.json_bytes}[phase]
        assert stated == pytest.approx(model, rel=1e-9, abs=1), phase
    assert est.seconds == pytest.approx(est.build_seconds + est.write_seconds
                                        + est.check_seconds)
    assert est.peak_bytes >= max(e.peak_bytes for e in parts)
    builds = [e.build_seconds for e in parts]
    assert est.tasks == len(parts) and est.largest_task == pytest.approx(max(builds) / sum(builds))
    rest = est.write_seconds + est.check_seconds
    assert est.wall(1) == pytest.approx(est.seconds)
    assert est.wall(2) == pytest.approx(max(est.build_seconds / 2,
                                            est.build_seconds * est.largest_task) + rest)
    assert est.wall(len(parts)) >= est.build_seconds * est.largest_task + rest


def test_the_plan_predicts_the_document_it_builds(tmp_path) -> None:
    """What the plan predicts of the written document, against the document built: every
    slot's frozen depth exactly, its largest γ within 6 % of the solved one, and the file's
    bytes within 2× (compressed and not)."""
    plan = plan_transformer(DATA / "tiny_preln.onnx", jobs=1)
    doc = certify_transformer(plan).document
    for sp in plan.slots:
        layers = doc["slots"][sp.name]["network"]["layers"]
        assert len(layers) == sp.plan.estimate.depth, sp.name
        actual = max(_gamma_bits(layer["gamma"]) for layer in layers)
        assert abs(sp.plan.estimate.gamma_bits - actual) <= 0.06 * actual, sp.name
    gz = save_certificate(doc, tmp_path / "t.json.gz")
    raw = save_certificate(doc, tmp_path / "t.json")
    assert 0.5 <= plan.estimate.certificate_bytes / gz <= 2
    assert 0.5 <= plan.estimate.json_bytes / raw <= 2


def _gamma_bits(gamma: object) -> int:
    """The largest numerator or denominator of a layer's γ as a document writes it."""
    from fractions import Fraction

    if isinstance(gamma, dict):
        return max(abs(int(x)).bit_length() for x in [*gamma["num"], gamma["den"]])
    assert isinstance(gamma, list)
    return max(max(abs(q.numerator).bit_length(), q.denominator.bit_length())
               for q in map(Fraction, gamma))


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
