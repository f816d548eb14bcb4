"""The transformer document's checker (exactnorm/checker/transformer.py, format §11): a real
certificate of a small transformer is valid in both arithmetics, and every single edit of it is
refused by a named rule — the LayerNorm's g, ε and r, a head removed, the scale, the mask, a
slot's γ, a slot's box made narrower, two attention slots swapped, and the structure."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from exactnorm.api._transformer import certify_transformer, plan_transformer
from exactnorm.checker.transformer import read_architecture
from exactnorm.model.interop.transformer_build import onnx_transformer
from tests.helpers import both, refused


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    plan = plan_transformer(onnx_transformer(11, vocabulary=5, d_model=4, heads=2, d_mlp=6),
                            jobs=1)
    return certify_transformer(plan).document


def edited(doc: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(doc)


def _ln(d: dict[str, Any], which: int = 0) -> dict[str, Any]:
    return [n for n in d["architecture"]["nodes"] if n["op"] == "layernorm"][which]


def _attention(d: dict[str, Any]) -> dict[str, Any]:
    return next(n for n in d["architecture"]["nodes"] if n["op"] == "attention")


def _set(vec: Any, k: int, value: Any) -> None:
    if isinstance(vec, dict):
        vec["num"][k] = value * int(vec["den"]) if isinstance(value, int) else value
    else:
        vec[k] = value


def test_valid_in_both_arithmetics(doc: dict[str, Any]) -> None:
    v = both(doc)
    assert v.ok and v.facts["claim"] == "TRANSFORMER"
    assert v.message.startswith("for every input sequence of length ≤ 3 over this vocabulary, "
                                "the rewritten transformer equals the original; attention, "
                                "softmax and LayerNorm normalisation are the original's "
                                "operations on equal values")
    assert v.facts["blocks"] == 1 and v.facts["heads"] == [2]
    assert [s["name"] for s in v.facts["slots"]][:2] == ["embed", "block0.head0.q"]
    assert v.facts["seed_rule"] == "slot"
    # the same verdict from the JSON text (strict parsing)
    assert both(json.dumps(doc)) == v


def test_layernorm_gain_changes_the_derived_box(doc: dict[str, Any]) -> None:
    d = edited(doc)
    _set(_ln(d)["gain"], 0, 3)
    refused(d, "box", "block0.head0.q: domain")


def test_layernorm_epsilon(doc: dict[str, Any]) -> None:
    d = edited(doc)
    _ln(d)["epsilon"] = "-1/100000"
    refused(d, "layernorm", "epsilon -1/100000 is negative")
    d = edited(doc)
    _ln(d)["epsilon"] = "1/1000"  # another model: its slots no longer name their seeds
    refused(d, "provenance", "seed_rule slot")
    text = json.dumps(doc).replace(json.dumps(_ln(doc)["epsilon"]), "1e-05", 1)
    refused(text, "number")  # a float is not an exact number


def test_layernorm_r(doc: dict[str, Any]) -> None:
    d = edited(doc)
    _ln(d)["r"] = "1"  # d = 4 features: r² = 1 < 3
    refused(d, "layernorm", "r² ≥ d − 1 = 3")
    d = edited(doc)
    _ln(d)["r"] = "2"  # sound, but not the box the slots were certified on
    refused(d, "box")


def test_head_removed(doc: dict[str, Any]) -> None:
    d = edited(doc)
    _attention(d)["heads"].pop()
    refused(d, "architecture", "is not used by the architecture")
    d = edited(doc)
    gone = _attention(d)["heads"].pop()
    for role in "qkv":
        del d["slots"][gone[role]]
    refused(d, "shape", "slot block0.o reads 4 values, node 3 has 2")  # a narrower attention


def test_scale_and_mask(doc: dict[str, Any]) -> None:
    d = edited(doc)
    _attention(d)["scale"] = "1"
    refused(d, "provenance", "seed_rule slot")
    d = edited(doc)
    _attention(d)["mask"] = "none"
    refused(d, "provenance", "seed_rule slot")
    d = edited(doc)
    _attention(d)["mask"] = "causl"
    refused(d, "format", "mask")
    d = edited(doc)
    _attention(d)["scale"] = 0.5
    refused(d, "number")


def test_slot_gamma(doc: dict[str, Any]) -> None:
    d = edited(doc)
    gamma = d["slots"]["block0.head1.v"]["network"]["layers"][-1]["gamma"]
    gamma["num"][0] = str(int(gamma["num"][0]) + 1)
    v = refused(d, "identity", "slot block0.head1.v: ")
    assert v.layer is not None


def test_slot_box_narrower(doc: dict[str, Any]) -> None:
    d = edited(doc)
    lower = d["slots"]["block0.mlp"]["domain"]["lower"]
    assert isinstance(lower, dict)  # float LayerNorm bounds share one denominator
    lower["num"][1] = str(int(lower["num"][1]) + 1)
    refused(d, "box", "slot block0.mlp: domain lower[1]")


@pytest.mark.parametrize("a, b", [("block0.head0.q", "block0.head0.k"),
                                  ("block0.head0.v", "block0.head1.v"),
                                  ("block0.head0.q", "block0.head1.q")])
def test_attention_slots_swapped(doc: dict[str, Any], a: str, b: str) -> None:
    d = edited(doc)
    d["slots"][a], d["slots"][b] = d["slots"][b], d["slots"][a]
    v = both(d)
    # values swapped between heads change the attention's box (rule box, the o slot); any
    # swap leaves the slots' seeds at places that derive other seeds (rule provenance)
    assert not v.ok and v.rule in ("box", "provenance"), v
    assert v.rule == "box" or "seed_rule slot" in v.message
    d = edited(doc)  # swapped in the architecture's head list instead
    heads = _attention(d)["heads"]
    where = {heads[h][r]: (h, r) for h in range(len(heads)) for r in "qkv"}
    (ha, ra), (hb, rb) = where[a], where[b]
    heads[ha][ra], heads[hb][rb] = heads[hb][rb], heads[ha][ra]
    both_rules = both(d)
    assert not both_rules.ok and both_rules.rule in ("provenance", "box")


def test_structure(doc: dict[str, Any]) -> None:
    d = edited(doc)
    d["extra"] = 1
    refused(d, "format", "unknown key")
    d = edited(doc)
    d["slots"]["spare"] = d["slots"]["embed"]
    refused(d, "architecture", "not used")
    d = edited(doc)
    del d["slots"]["unembed"]
    refused(d, "architecture", "slot unembed has no certificate")
    d = edited(doc)
    d["architecture"]["nodes"][1]["reads"] = 1
    refused(d, "architecture", "reads 1")
    d = edited(doc)
    d["architecture"]["output"] = 2
    refused(d, "architecture", "never read")
    d = edited(doc)
    d["architecture"]["vocabulary"] = 6
    refused(d, "shape", "slot embed reads")
    d = edited(doc)
    d["seed_rule"] = "target"
    refused(d, "format", "seed_rule")
    d = edited(doc)
    d["slots"]["embed"]["version"] = 2
    refused(d, "architecture", "version 3")
    d = edited(doc)
    _attention(d)["heads"][0]["w"] = "x"
    refused(d, "format", "unknown key")


def test_chosen_seed_is_said(doc: dict[str, Any]) -> None:
    d = edited(doc)
    d["seed_rule"] = "chosen"
    v = both(d)
    assert v.ok and "seeds chosen by the writer" in v.message


def test_reader_reads_the_section(doc: dict[str, Any]) -> None:
    V, T, nodes, out = read_architecture(doc["architecture"], 1000)
    assert (V, T, out) == (5, 3, len(nodes) - 1)
    assert [n["op"] for n in nodes][:3] == ["input", "slot", "layernorm"]
