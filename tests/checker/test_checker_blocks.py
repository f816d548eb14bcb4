"""The checkers on the construction's channel-block certificates (both arithmetics).

The channel-block construction (``exactnorm.constructions.convblocks``) and the checker's rules
for block segments (docs/certificate-format.md §10) were written separately; here the writer's
documents meet the checker: a chain CNN and a small ResNet split into blocks, with the per-position
and the hull stability families, are VALID under the pure and the FLINT arithmetic with the same
message, what the verdict claims is evaluated from the document alone, and single edits of what a
block segment is made of (a mask column, an accumulator skip, a γ, a shift, the stability family
where only the positions are stable) are refused by both with the same rule.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from exactnorm.certificate import certificate_document
from exactnorm.constructions import convblocks
from exactnorm.constructions.plan import construct
from tests.checker.test_checker_residual import assert_claim, both, refused
from tests.constructions.test_conv_blocks import _chain_cnn
from tests.model.test_residual_model import small_resnet


def _blocked(doc: dict) -> list[int]:
    """Indices of the frozen layers drawn with a column mask (the blocks' k×k convolutions)."""
    return [j for j, L in enumerate(doc["network"]["layers"])
            if "mask" in L.get("weight", {}).get("random", {})]


def _skipped(doc: dict) -> list[int]:
    return [j for j, L in enumerate(doc["network"]["layers"]) if L.get("skip")]


@pytest.fixture(scope="module")
def chain_doc() -> dict:
    return certificate_document(construct(_chain_cnn(0), block=1, seed=1))


@pytest.fixture(scope="module")
def hull_doc() -> dict:
    # every ReLU layer of the blocks on the hull of the patch boxes (the writer chooses the hull
    # where the per-position test is expensive; a zero threshold makes it choose it everywhere)
    saved = convblocks.HULL_WORK
    convblocks.HULL_WORK = 0
    try:
        return certificate_document(construct(_chain_cnn(2), block=1, seed=4))
    finally:
        convblocks.HULL_WORK = saved


def test_a_chain_cnn_in_channel_blocks_is_valid_in_both_arithmetics(chain_doc):
    assert _blocked(chain_doc) and _skipped(chain_doc)
    v = both(chain_doc)
    assert v.ok, v
    assert_claim(chain_doc)


@pytest.mark.parametrize("block", [1, 2])
def test_a_small_resnet_in_channel_blocks_is_valid_in_both_arithmetics(block):
    doc = certificate_document(construct(small_resnet(), block=block, seed=0))
    assert _blocked(doc) and any("residual" in L for L in doc["network"]["layers"])
    v = both(doc)
    assert v.ok, v
    assert_claim(doc)


def test_the_hull_family_written_by_the_construction_is_valid(hull_doc):
    hulls = [L for L in hull_doc["network"]["layers"] if L.get("stability") == "hull"]
    assert hulls
    v = both(hull_doc)
    assert v.ok, v
    assert_claim(hull_doc)


def _edit(doc: dict, how: Any) -> dict:
    out = copy.deepcopy(doc)
    how(out["network"]["layers"])
    return out


def test_a_mask_column_moved_is_refused(chain_doc):
    j = _blocked(chain_doc)[0]

    def move(layers: list[dict]) -> None:
        cols = layers[j]["weight"]["random"]["mask"]["columns"]
        width = layers[j]["weight"]["random"]["shape"][1]
        free = next(c for c in range(width) if c not in cols)
        cols[-1] = free
        cols.sort()

    v = both(_edit(chain_doc, move))
    assert not v.ok


def test_an_accumulator_skip_removed_is_refused(chain_doc):
    j = _skipped(chain_doc)[0]

    def drop(layers: list[dict]) -> None:
        del layers[j]["skip"]

    refused(_edit(chain_doc, drop), "identity")


def test_an_accumulator_skip_reading_another_node_is_refused(chain_doc):
    j = _skipped(chain_doc)[0]

    def elsewhere(layers: list[dict]) -> None:
        skip = layers[j]["skip"][0]
        skip["from"] = skip["from"] - 1 if skip["from"] > 1 else skip["from"] + 1

    v = both(_edit(chain_doc, elsewhere))
    assert not v.ok


@pytest.mark.parametrize("field", ["gamma", "beta"])
def test_a_blocks_tuned_parameter_changed_is_refused(chain_doc, field):
    j = _blocked(chain_doc)[0] + 1  # the block's 1×1 convolution

    def bump(layers: list[dict]) -> None:
        values = layers[j][field]  # compact {"den", "num"}: add 1 to the first entry
        values["num"][0] = str(int(values["num"][0]) + int(values["den"]))

    v = both(_edit(chain_doc, bump))
    assert not v.ok


def test_the_hull_where_only_the_positions_are_stable_is_refused(chain_doc):
    # the writer chose the positions family here; a hull claimed instead asks for more than
    # the shifts give (the hull contains every position's box and more)
    def hull(layers: list[dict]) -> None:
        for L in layers:
            if L.get("kind") == "conv" and L.get("activation", "relu") == "relu":
                L["stability"] = "hull"

    v = both(_edit(chain_doc, hull))
    assert not v.ok and v.rule == "stability", v
