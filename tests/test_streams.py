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
from exactnorm.exact.streams import Part, StreamKey
from exactnorm.model.targets import demo_target, random_target
from exactnorm.strategies import frozen_networks


def test_keys_are_unique_across_thousands_of_blocks_and_layers():
    keys = {StreamKey(layer, block, part, attempt).key
            for layer in range(1, 4) for block in range(0, 1201) for part in Part
            for attempt in range(2)}
    assert len(keys) == 3 * 1201 * len(Part) * 2
    # the former arithmetic encoding 1000·layer + part collided exactly here
    assert StreamKey(1, 1001, Part.PAIR_IN).key != StreamKey(2, 1, Part.PAIR_IN).key
    assert rg.stream_words(0, StreamKey(1, 1001, Part.PAIR_IN).key, 2) != \
        rg.stream_words(0, StreamKey(2, 1, Part.PAIR_IN).key, 2)


def test_key_round_trip_and_message():
    k = StreamKey(2, 1001, Part.FINAL, 3)
    assert StreamKey.from_key(list(k.key)) == k
    assert k.describe() == "target layer 2, block 1001, final mixing matrix, attempt 3"
    assert StreamKey(4, 0, Part.PAIR_IN).where() == "target layer 4"
    with pytest.raises(InputError):
        StreamKey.from_key([1, 2, 99, 0])
    with pytest.raises(InputError):
        StreamKey(-1, 0, Part.PAIR_IN)


def _fractions(M):
    return [[Fraction(int(x.p), int(x.q)) if hasattr(x, "q") else Fraction(int(x)) for x in row]
            for row in M.tolist()]


def _assert_records_regenerate(c):
    keys = []
    for j, layer in enumerate(c.network.layers, 1):
        assert layer.record is not None, f"frozen layer {j} has no draw record"
        assert rg.regenerate(layer.record) == _fractions(layer.weight), j
        keys.append(tuple(layer.record["key"]))
        for s in layer.skips:
            assert s.kind in ("identity", "selection")  # fixed, declared by their kind
    assert len(set(keys)) == len(keys), "two frozen matrices share a stream"
    return keys


def test_theorem1_records_regenerate_the_network():
    keys = _assert_records_regenerate(certify_theorem1(demo_target(), seed=3))
    assert [StreamKey.from_key(k).target_layer for k in keys] == [1, 1, 2, 2, 3, 3]


def test_sparse_records_carry_their_masks():
    g = random_target((2, 2), seed=4, activations=["identity"])
    c = certify_theorem1(g, seed=1, sparsity=0.75, distribution="nonzero:8")
    _assert_records_regenerate(c)
    masks = [layer.record["mask"] for layer in c.network.layers]
    assert all(m["p"] == "3/4" for m in masks)
    assert [StreamKey.from_key(m["key"]).part for m in masks] == [Part.MASK_IN, Part.MASK_OUT]
    assert c.provenance["sparsity"] == "3/4"


def test_lowrank_records_regenerate_the_network():
    g = random_target((4, 3, 2), seed=1, activations=["relu", "identity"])
    keys = _assert_records_regenerate(certify_lowrank(g, seed=2))
    assert {StreamKey.from_key(k).block for k in keys} == {1, 2}


@pytest.mark.parametrize("routing", ["selection", "mask"])
def test_tradeoff_records_regenerate_the_network(routing):
    g = random_target((5, 3, 2), seed=0, activations=["relu", "identity"])
    c = certify_tradeoff(g, block=2, seed=0, routing=routing)
    keys = _assert_records_regenerate(c)
    parts = {StreamKey.from_key(k).part for k in keys}
    assert Part.FINAL in parts and (Part.ROUTING in parts) == (routing == "selection")
    if routing == "mask":
        columns = [layer.record["mask"]["columns"] for layer in c.network.layers
                   if "mask" in (layer.record or {})]
        assert columns[:3] == [[0, 1], [2, 3], [4]]


def test_singular_draw_message_names_target_layer_and_block():
    from exactnorm.errors import SingularSystemError

    g = random_target((3, 2, 2), seed=0, activations=["relu", "identity"])
    with pytest.raises(SingularSystemError, match=r"target layer 1, block 1\)") as info:
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


def test_parallel_layers_keep_their_records():
    g = random_target((3, 3, 2), seed=5, activations=["relu", "identity"])
    serial = certify_theorem1(g, seed=2)
    parallel = certify_theorem1(g, seed=2, jobs=2)
    assert [layer.record for layer in parallel.network.layers] == \
        [layer.record for layer in serial.network.layers]
    _assert_records_regenerate(parallel)
