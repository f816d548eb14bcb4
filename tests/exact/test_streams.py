"""Stream keys name every frozen matrix uniquely, and every frozen matrix a construction builds is
exactly the one its draw record regenerates (reference regenerator, standard library only)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings

from exactnorm.checker import regenerate as rg
from exactnorm.constructions.lowrank import certify_lowrank
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.constructions.tradeoff import certify_tradeoff
from exactnorm.errors import InputError
from exactnorm.exact.streams import WEIGHT, StreamKey, skip_role
from exactnorm.model.targets import demo_target, random_target
from exactnorm.strategies import frozen_networks


def test_keys_are_unique_across_thousands_of_layers_and_skips():
    keys = {StreamKey(segment, offset, role, attempt).key
            for segment in range(1, 4) for offset in range(1, 1201)
            for role in (WEIGHT, WEIGHT + 1, skip_role(0), skip_role(0) + 1, skip_role(3))
            for attempt in range(2)}
    assert len(keys) == 3 * 1200 * 5 * 2
    # an arithmetic encoding such as 1000·segment + offset would collide here
    assert StreamKey(1, 1001).key != StreamKey(2, 1).key
    assert rg.stream_words(0, StreamKey(1, 1001).key, 2) != \
        rg.stream_words(0, StreamKey(2, 1).key, 2)


def test_key_round_trip_and_message():
    k = StreamKey(2, 1001, skip_role(1), 3)
    assert StreamKey.from_key(list(k.key)) == k
    assert k.describe() == "target layer 2, layer 1001 of its segment, skip 1, attempt 3"
    assert StreamKey(4, 2).where() == "target layer 4, layer 2 of its segment"
    assert StreamKey(4, 2).mask_key == (4, 2, 1, 0) and StreamKey(4, 2).next_layer().key == \
        (4, 3, 0, 0)
    with pytest.raises(InputError):
        StreamKey.from_key([1, 2, 0])
    with pytest.raises(InputError):
        StreamKey(-1, 0)


def _fractions(M):
    return [[Fraction(int(x.p), int(x.q)) if hasattr(x, "q") else Fraction(int(x)) for x in row]
            for row in M.tolist()]


def _positions(c):
    """(segment, offset) of every frozen layer, from the checkpoints alone."""
    out, start = [], 0
    for i, end in enumerate(c.network.checkpoints, 1):
        out += [(i, j - start) for j in range(start + 1, end + 1)]
        start = end
    return out


def _assert_records_regenerate(c):
    """Every record regenerates its matrix and carries the key of its position."""
    keys = []
    for j, (layer, (i, k)) in enumerate(zip(c.network.layers, _positions(c)), 1):
        assert layer.record is not None, f"frozen layer {j} has no draw record"
        assert rg.regenerate(layer.record) == _fractions(layer.weight), j
        assert layer.record["key"][:3] == [i, k, WEIGHT], (j, layer.record["key"])
        keys.append(tuple(layer.record["key"]))
        for s in layer.skips:
            assert s.kind in ("identity", "selection")  # fixed, declared by their kind
    assert len(set(keys)) == len(keys), "two frozen matrices share a stream"
    return keys


def test_theorem1_records_regenerate_the_network():
    keys = _assert_records_regenerate(certify_theorem1(demo_target(), seed=3))
    assert [StreamKey.from_key(k).segment for k in keys] == [1, 1, 2, 2, 3, 3]
    assert [StreamKey.from_key(k).offset for k in keys] == [1, 2] * 3


def test_sparse_records_carry_their_masks():
    g = random_target((2, 2), seed=4, activations=["identity"])
    c = certify_theorem1(g, seed=1, sparsity=0.75, distribution="nonzero:8")
    _assert_records_regenerate(c)
    masks = [layer.record["mask"] for layer in c.network.layers]
    assert all(m["p"] == "3/4" for m in masks)
    a = c.network.layers[0].record["key"][3]  # the attempt (a masked pair may be singular)
    assert [m["key"] for m in masks] == [[1, 1, 1, a], [1, 2, 1, a]]
    assert c.provenance["sparsity"] == "3/4"


def test_lowrank_records_regenerate_the_network():
    g = random_target((4, 3, 2), seed=1, activations=["relu", "identity"])
    keys = _assert_records_regenerate(certify_lowrank(g, seed=2))
    assert [StreamKey.from_key(k).offset for k in keys] == [1, 2, 3, 4] * 2


@pytest.mark.parametrize("routing", ["selection", "mask"])
def test_tradeoff_records_regenerate_the_network(routing):
    g = random_target((5, 3, 2), seed=0, activations=["relu", "identity"])
    c = certify_tradeoff(g, block=2, seed=0, routing=routing)
    keys = _assert_records_regenerate(c)
    # three blocks of 2, 2, 1 inputs, then the final matrix: 3·3 + 1 or 3·2 + 1 layers
    assert max(StreamKey.from_key(k).offset for k in keys[:-2]) == \
        (10 if routing == "selection" else 7)
    if routing == "mask":
        columns = [layer.record["mask"]["columns"] for layer in c.network.layers
                   if "mask" in (layer.record or {})]
        assert columns[:3] == [[0, 1], [2, 3], [4]]


def test_singular_draw_message_names_target_layer_and_position():
    from exactnorm.errors import SingularSystemError

    g = random_target((3, 2, 2), seed=0, activations=["relu", "identity"])
    with pytest.raises(SingularSystemError,
                       match=r"target layer 1, layer 1 of its segment\)") as info:
        certify_lowrank(g, seed=0, distribution="set:0", retry=0)
    assert info.value.layer == 1
    with pytest.raises(SingularSystemError, match=r"final frozen matrix of target layer 1 "):
        certify_tradeoff(g, block=1, seed=0, distribution="set:0", retry=0)


@settings(max_examples=30, deadline=None)
@given(frozen_networks(skips=True, min_depth=2))
def test_strategy_networks_carry_records_that_regenerate(net):
    for layer in net.layers:
        assert rg.regenerate(layer.record) == _fractions(layer.weight)
        for s in layer.skips:
            assert rg.regenerate(s.record) == _fractions(s.weight)
            assert s.record["key"][2] == skip_role(0)


def test_parallel_layers_keep_their_records():
    g = random_target((3, 3, 2), seed=5, activations=["relu", "identity"])
    serial = certify_theorem1(g, seed=2)
    parallel = certify_theorem1(g, seed=2, jobs=2)
    assert [layer.record for layer in parallel.network.layers] == \
        [layer.record for layer in serial.network.layers]
    _assert_records_regenerate(parallel)
