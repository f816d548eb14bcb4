"""Seeded sampling: determinism, independence of spawn keys, support, bad specs."""

from __future__ import annotations

import pytest

from exactnorm.errors import InputError
from exactnorm.exact.sampling import bernoulli_mask, layer_rng, parse_distribution, sample_matrix


@pytest.mark.parametrize("spec", ["int:8", "bits:30", "nonzero:2", "set:-1,1", "rational:4",
                                  "gauss:10"])
def test_deterministic_and_key_dependent(spec):
    a = sample_matrix(layer_rng(5, 1, 0), 6, 7, spec)
    assert a == sample_matrix(layer_rng(5, 1, 0), 6, 7, spec)
    assert a != sample_matrix(layer_rng(5, 2, 0), 6, 7, spec)
    assert a != sample_matrix(layer_rng(6, 1, 0), 6, 7, spec)


def test_supports():
    ints = [int(x) for x in sample_matrix(layer_rng(0), 30, 30, "int:3").entries()]
    assert set(ints) == set(range(-3, 4))
    nz = [int(x) for x in sample_matrix(layer_rng(0), 30, 30, "nonzero:2").entries()]
    assert set(nz) == {-2, -1, 1, 2}
    s = [int(x) for x in sample_matrix(layer_rng(0), 10, 10, "set:-1,1").entries()]
    assert set(s) == {-1, 1}
    g = sample_matrix(layer_rng(0), 5, 5, "gauss:8").entries()
    assert all(int(x.denom()) in (1, 2, 4, 8, 16, 32, 64, 128, 256) for x in g)
    assert parse_distribution("int:8").support_size == 17
    assert parse_distribution("set:0,1,1").support_size == 2


@pytest.mark.parametrize("bad", ["", "int", "int:0", "bits:99", "foo:3", "set:", "int:x",
                                 "set:a,b"])
def test_bad_specs(bad):
    with pytest.raises(InputError):
        parse_distribution(bad)


def test_bad_seeds_and_masks():
    for seed in (-1, 1.5, "3", True):
        with pytest.raises(InputError):
            layer_rng(seed)
    with pytest.raises(InputError):
        bernoulli_mask(layer_rng(0), 2, 2, 1.5)
    m = bernoulli_mask(layer_rng(0), 200, 200, 0.25)
    assert 0.2 < m.mean() < 0.3
