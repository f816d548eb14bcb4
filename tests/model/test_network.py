"""Networks: exact vs float evaluation, interval boxes vs sampled points, validation errors."""

from __future__ import annotations

import numpy as np
import pytest
from flint import fmpq, fmpq_mat

from exactnorm.api import load_target
from exactnorm.certificate import read_target, save_target
from exactnorm.errors import InputError, LimitExceededError, ShapeError
from exactnorm.model.network import FrozenLayer, FrozenNetwork, Skip, TargetNetwork, affine_interval
from exactnorm.model.targets import demo_target, random_target
from tests.helpers import case_target, sample_points


@pytest.mark.parametrize("i", range(12))
def test_exact_and_float_evaluation_agree(i):
    g = case_target(i)
    pts = sample_points(g, 6, seed=i)
    exact = np.array([[float(v) for v in g.evaluate(x)] for x in pts])
    approx = g.evaluate_float(np.array([[float(v) for v in x] for x in pts]))
    assert np.allclose(exact, approx, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("i", range(12))
def test_interval_boxes_contain_every_sampled_activation(i):
    g = case_target(i)
    boxes = g.interval_boxes()
    for x in sample_points(g, 10, seed=i):
        a = tuple(fmpq(v.numerator, v.denominator) for v in x)
        for layer, (lo, hi) in zip(g.layers, boxes[1:]):
            z = layer.weight * fmpq_mat([[v] for v in a])
            pre = [z[r, 0] + layer.bias[r] for r in range(z.nrows())]
            a = tuple(max(v, fmpq(0)) if layer.activation == "relu" else v for v in pre)
            assert all(l <= v <= h for l, v, h in zip(lo, a, hi))


def test_affine_interval_is_attained_at_corners():
    W = fmpq_mat([[1, -2], [fmpq(1, 2), 0]])
    lo, hi = affine_interval(W, [fmpq(1), fmpq(0)], [fmpq(-1), fmpq(0)], [fmpq(1), fmpq(3)])
    # fmpq does not compare equal to Fraction, so stay in fmpq
    corner_values = [[fmpq(1 + x - 2 * y), fmpq(x, 2)] for x in (-1, 1) for y in (0, 3)]
    for r in range(2):
        assert lo[r] == min(v[r] for v in corner_values)
        assert hi[r] == max(v[r] for v in corner_values)


def test_target_validation_errors():
    with pytest.raises(ShapeError):
        TargetNetwork.from_lists([], [], lower=[0], upper=[1])
    with pytest.raises(InputError):
        TargetNetwork.from_lists([[[1]]], [[0]], lower=[2], upper=[1])
    with pytest.raises(ShapeError):
        TargetNetwork.from_lists([[[1, 2]], [[1, 2]]], [[0], [0]], lower=[0, 0], upper=[1, 1])
    with pytest.raises(InputError):
        TargetNetwork.from_lists([[[1]]], [[0]], ["sigmoid"], lower=[0], upper=[1])
    with pytest.raises(LimitExceededError):
        TargetNetwork.from_lists([[[1] * 5]], [[0]], lower=[0] * 5, upper=[1] * 5, max_width=4)


def test_frozen_network_validation_and_skips():
    V = fmpq_mat([[1], [2]])
    ok = FrozenLayer(0, V, (fmpq(1), fmpq(1)), (fmpq(0), fmpq(0)), "relu",
                     (Skip(0, fmpq_mat([[1], [0]]), "selection"),))
    net = FrozenNetwork(1, (ok,), (1,))
    assert net.evaluate((fmpq(3),)) == (fmpq(6), fmpq(6))
    assert net.evaluate_float(np.array([[3.0]])).tolist() == [[6.0, 6.0]]
    with pytest.raises(ShapeError):
        FrozenNetwork(1, (FrozenLayer(1, V, (1, 1), (0, 0), "relu"),), (1,))
    with pytest.raises(InputError):
        Skip(0, V, "teleport")


def test_target_json_round_trip(tmp_path):
    for g in (demo_target(), random_target((2, 3, 1), seed=4)):
        save_target(g, tmp_path / "t.json")
        assert load_target(tmp_path / "t.json") == g


def test_npz_import_exact_and_activations(tmp_path):
    p = tmp_path / "t.npz"
    np.savez(p, W1=np.array([[0.1, 2.0]]), b1=np.array([-0.5]), lower=np.array([0.0, -1.0]),
             upper=np.array([1.0, 1.0]), activations=np.array(["relu"]))
    g = load_target(p)
    assert g.layers[0].weight[0, 0] == fmpq(*(0.1).as_integer_ratio())
    assert g.layers[0].activation == "relu"
    assert g.lower == (fmpq(0), fmpq(-1))


def test_a_target_file_defaults_activations():
    g = read_target({"domain": {"lower": [0], "upper": [1]},
                          "target": {"layers": [{"weight": [[1]], "bias": [0]},
                                                {"weight": [[1]], "bias": [0]}]}})
    assert [layer.activation for layer in g.layers] == ["relu", "identity"]
