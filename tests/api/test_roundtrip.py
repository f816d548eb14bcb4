"""certify → check round trips for Theorem 1, and exact f(x) = g(x) on corners and random points."""

from __future__ import annotations

import json
import math

import pytest
from flint import fmpq

from exactnorm import api, checker, checker_flint
from exactnorm.certificate import (
    certificate_bytes,
    expand_document,
    load_certificate,
    read_target,
    save_certificate,
)
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.errors import SingularSystemError
from exactnorm.model.network import column
from tests.helpers import case_target, sample_points

N_CASES = 60


@pytest.mark.parametrize("i", range(N_CASES))
def test_theorem1_round_trip(i):
    g = case_target(i)
    c = certify_theorem1(g, seed=i, retry=3)
    assert c.network.depth == 2 * g.depth
    assert c.network.checkpoints == tuple(range(2, 2 * g.depth + 1, 2))
    for layer, (d_in, d_out) in zip(c.network.layers[::2], zip(g.widths, g.widths[1:])):
        assert layer.width == d_in * d_out
    doc = api.certificate_document(c)
    pure, fast = checker.check_certificate(doc), checker_flint.check_certificate(doc)
    assert pure.ok, pure.message
    assert fast == pure
    # the certificate's own target parses back to g
    assert read_target(expand_document(doc)) == g
    for x in sample_points(g, 5, seed=i):
        assert c.network.evaluate(x) == g.evaluate(x)


@pytest.mark.parametrize("mode", ["neuron", "layer", "integer"])
def test_shift_modes_all_valid_and_neuron_is_smaller(mode):
    g = case_target(7)
    c = certify_theorem1(g, seed=1, shift_mode=mode)
    assert checker.check_certificate(api.certificate_document(c)).ok
    per_neuron = certify_theorem1(g, seed=1, shift_mode="neuron")
    for a, b in zip(per_neuron.network.layers[::2], c.network.layers[::2]):
        assert all(x <= y for x, y in zip(a.beta, b.beta))
        if mode == "integer":  # the smallest integer at least the smallest shift
            assert all(y.q == 1 and y - 1 < x for x, y in zip(a.beta, b.beta))


@pytest.mark.parametrize("i", [3, 8, 21])
def test_tradeoff_integer_shifts_leave_only_gamma_fractional(i):
    """The trade-off's default rounds shifts up: every β of a block and the cancelling β of the
    final layer then have the target bias's denominators only; only Γ is long."""
    from exactnorm.constructions.tradeoff import certify_tradeoff

    g = case_target(i)
    c = certify_tradeoff(g, block=1, seed=i, retry=8)
    doc = api.certificate_document(c)
    assert checker.check_certificate(doc) == checker_flint.check_certificate(doc)
    assert checker.check_certificate(doc).ok
    checkpoints = set(c.network.checkpoints)
    for j, layer in enumerate(c.network.layers, 1):
        if j not in checkpoints:
            assert all(b.q == 1 for b in layer.beta), j
    for cp, tl in zip(c.network.checkpoints, g.layers):
        bias_den = math.lcm(*(int(b.q) for b in tl.bias))
        assert all(bias_den % int(b.q) == 0 for b in c.network.layers[cp - 1].beta)
    smallest = certify_tradeoff(g, block=1, seed=i, retry=8, shift_mode="neuron")
    assert len(certificate_bytes(api.certificate_document(smallest))) >= \
        len(certificate_bytes(doc))


@pytest.mark.parametrize("dist", ["int:1", "bits:30", "nonzero:3", "set:-3,-1,2,5", "rational:5",
                                  "gauss:12"])
def test_distributions_round_trip(dist):
    g = case_target(11)
    c = certify_theorem1(g, seed=3, distribution=dist, retry=20)
    doc = api.certificate_document(c)
    assert checker_flint.check_certificate(doc).ok
    assert doc["provenance"]["distribution"] == dist


def test_singular_draw_reported_with_rank_and_kernel():
    # entries in {0} only would be degenerate; {-1, 1} at d = 2 is singular often enough
    g = case_target(1)
    with pytest.raises(SingularSystemError) as info:
        for seed in range(200):
            certify_theorem1(g, seed=seed, distribution="set:0,1")
    err = info.value
    assert err.rank < err.size
    assert err.kernel is not None and any(err.kernel)


def test_retry_is_recorded_and_deterministic():
    g = case_target(1)
    for seed in range(200):
        try:
            certify_theorem1(g, seed=seed, distribution="set:0,1", retry=0)
        except SingularSystemError:
            break
    c = certify_theorem1(g, seed=seed, distribution="set:0,1", retry=400)
    layers = c.witnesses["layers"]
    assert any(w["singular_draws"] for w in layers)
    # the attempt is the last part of the stream key (target_layer, block, part, attempt)
    assert all(w["stream_key"][3] == len(w["singular_draws"]) for w in layers)
    again = certify_theorem1(g, seed=seed, distribution="set:0,1", retry=400)
    assert certificate_bytes(api.certificate_document(c)) == \
        certificate_bytes(api.certificate_document(again))
    assert checker.check_certificate(api.certificate_document(c)).ok


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_save_load_check_file(tmp_path, suffix):
    c = certify_theorem1(api.demo_target(), seed=0)
    path = tmp_path / f"cert{suffix}"
    save_certificate(api.certificate_document(c), path)
    doc = load_certificate(path)
    assert doc == json.loads(certificate_bytes(api.certificate_document(c)))
    assert checker.check_file(str(path)).ok
    assert checker_flint.check_file(str(path)).ok


def test_demo_target_equal_at_points():
    g = api.demo_target()
    c = certify_theorem1(g, seed=0)
    for x in sample_points(g, 20, seed=0):
        assert c.network.evaluate(x) == g.evaluate(x)


def test_box_matters_outside_the_domain():
    """The shifts are sized for the box; far outside it a first-layer neuron goes negative."""
    g = api.demo_target()
    c = certify_theorem1(g, seed=0)
    far = (fmpq(-500), fmpq(400), fmpq(-300))
    first = c.network.layers[0]
    pre = first.weight * column(far)
    assert any(first.gamma[k] * pre[k, 0] + first.beta[k] < 0 for k in range(first.width))


@pytest.mark.parametrize("i", range(8))
def test_scaled_shift_equals_shift_of_product(i):
    from exactnorm.constructions.common import activating_shift, scaled_activating_shift
    from exactnorm.exact.linalg import diag
    from exactnorm.exact.sampling import layer_rng, sample_matrix

    g = case_target(i)
    lo, hi = g.lower, g.upper
    V = sample_matrix(layer_rng(i, 1), 7, len(lo), "int:5")
    gamma = sample_matrix(layer_rng(i, 2), 7, 1, "rational:9").entries()
    for mode in ("neuron", "layer"):
        assert scaled_activating_shift(gamma, V, lo, hi, mode) == \
            activating_shift(diag(gamma) * V, lo, hi, mode)
