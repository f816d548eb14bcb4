"""The details docs/certificate-format.md settles ("Settled details" of §6, and the five edge
documents an independent checker disagreed on), each decided the same way by both arithmetics,
and the seed rule checked against an implementation written from docs/generator.md §8 alone.

Every verdict goes through :func:`both`, which demands the same ok, rule, message, layer and
neuron from the standard-library and the python-flint arithmetic.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import tests.checker.hostile_round3 as H
from exactnorm import api
from exactnorm.certificate import certificate_document
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.model.targets import random_target
from tests.helpers import both, refused

# ------------------------------------------------------------------ small documents


def conv_doc(version: int = 1) -> dict:
    """A valid 1-segment convolution certificate written by hand: 1×4×4 input, window 2×2
    stride 2; layer 1 is the identity on the patch (4 channels), layer 2 a pointwise kernel."""
    eye = [[int(r == c) for c in range(4)] for r in range(4)]
    layers = [H.conv_layer(0, [1, 4, 4], [2, 2], eye, [1] * 4, [0] * 4, "relu", [2, 2]),
              H.conv_layer(1, [4, 2, 2], [1, 1], [[1, 2, 3, 4]], [1], [0], "identity")]
    return H.document([0] * 16, [1] * 16, [H.target_conv([1, 4, 4], [2, 2], [[1, 2, 3, 4]],
                                                          [0], "identity", [2, 2])],
                      layers, [2], version=version)


def dense_doc() -> dict:
    """g(x) = 2x + 1 on [0, 1] by two explicit layers (version 1)."""
    return H.document([0], [1], [{"weight": [[2]], "bias": [1], "activation": "identity"}],
                      [{"input": 0, "weight": [[1]], "gamma": [2], "beta": [3],
                        "activation": "relu"},
                       {"input": 1, "weight": [[1]], "gamma": [1], "beta": [-2],
                        "activation": "identity"}], [2], version=1)


@pytest.fixture(scope="module")
def v3_doc() -> dict:
    """A version-3 Theorem-1 certificate of the writer (seed rule target)."""
    c = api.certify(random_target((2, 2), seed=1))
    return certificate_document(c)


@pytest.fixture(scope="module")
def redrawn() -> dict:
    """A version-3 certificate whose pair was redrawn twice (int:1 entries)."""
    c = certify_theorem1(random_target([1, 3], seed=0), seed=4, distribution="int:1")
    doc = certificate_document(c)
    assert len(doc["redraws"]) == 2
    return doc


@pytest.fixture(scope="module")
def cnn_doc() -> dict:
    """A LeNet-shaped certificate of the writer, seed derived from the target."""
    from tests.model.test_conv import lenet_like

    return certificate_document(api.certify(lenet_like()))


def test_the_small_documents_are_valid(v3_doc, redrawn):
    for doc in (conv_doc(), dense_doc(), v3_doc, redrawn):
        assert both(doc).ok


# ------------------------------------------------------------------ 1. top-level keys


def test_1_top_level_keys(v3_doc):
    extra = dict(copy.deepcopy(v3_doc), note="hello")
    refused(extra, "format", 'certificate: unknown key "note"')
    # every version is closed; redraws and seed_rule need version 3
    refused(dict(dense_doc(), note="hello"), "format", 'certificate: unknown key "note"')
    for key, value in (("redraws", []), ("seed_rule", "chosen")):
        refused(dict(dense_doc(), **{key: value}), "format",
                f'certificate: key "{key}" needs version 3')
    junk = dict(copy.deepcopy(v3_doc), redraws="junk")
    refused(junk, "format", '"redraws" must be an array')
    refused(dict(copy.deepcopy(v3_doc), seed_rule="mine"), "format",
            '"seed_rule" must be one of')


# ------------------------------------------------------------------ 2. kind dense


def test_2_explicit_kind_dense_is_no_kind():
    doc = dense_doc()
    plain = both(doc)
    doc["target"]["layers"][0]["kind"] = "dense"
    for layer in doc["network"]["layers"]:
        layer["kind"] = "dense"
    assert both(doc) == plain
    doc["network"]["layers"][0]["kind"] = "Dense"
    refused(doc, "format", '"kind" "Dense" is not one of')


# ------------------------------------------------------------------ 3–5. pooling


def pool_doc(**edit: Any) -> dict:
    pool = {"kind": "avgpool", "input_shape": [1, 4, 4], "kernel_shape": [2, 2],
            "stride": [2, 2], "padding": [0, 0], "activation": "identity"}
    doc = H.document([0] * 16, [1] * 16, [dict(pool)], [dict(pool, input=0, **edit)], [1],
                     version=1)
    return doc


def test_3_avgpool_dilation_is_optional_and_one():
    assert both(pool_doc()).ok
    assert both(pool_doc(dilation=[1, 1])).ok
    refused(pool_doc(dilation=[2, 2]), "shape", "an avgpool layer has dilation [1, 1]")


def test_4_input_shape_parts_are_positive():
    for shape in ([-1, -4, 4], [1, 0, 16], [1, 4, 4.0], [1, 4, True]):
        doc = pool_doc()
        doc["network"]["layers"][0]["input_shape"] = shape
        refused(doc, "shape", "input_shape must be three positive integers")
    doc = pool_doc()
    doc["network"]["layers"][0]["input_shape"] = [2, 2, 4]  # the right product, another shape
    refused(doc, "identity", "target layer 1 has")


def test_5_pooling_segments():
    two = pool_doc()
    two["network"]["layers"].append(dict(two["network"]["layers"][0], input=1,
                                         input_shape=[1, 2, 2], kernel_shape=[1, 1],
                                         stride=[1, 1]))
    two["network"]["checkpoints"] = [2]
    refused(two, "segment", "is one avgpool layer reading node 0")
    for key in ("weight", "gamma", "beta", "skip", "source", "residual", "stability"):
        refused(pool_doc(**{key: []}), "format", f'unknown key "{key}" (frozen layer (avgpool)')
    refused(pool_doc(stride=[1, 1]), "identity", "pooling") if False else \
        refused(pool_doc(stride=[1, 1]), "identity", "target layer 1 has")
    target_relu = pool_doc()
    target_relu["target"]["layers"][0]["activation"] = "relu"
    refused(target_relu, "format", "an avgpool layer has activation identity")


# ------------------------------------------------------------------ 6. reads in a conv segment


@pytest.mark.parametrize("variant", ["patch", "larger", "smaller"])
def test_6_a_later_conv_layer_reads_inside_the_segment(variant):
    refused(H.reads_segment_input(variant), "segment",
            "network layer 2 reads node 0, the input of the convolution segment")


# ------------------------------------------------------------------ 7. skip: []


def test_7_an_empty_skip_list_is_no_skip():
    doc = dense_doc()
    for layer in doc["network"]["layers"]:
        layer["skip"] = []  # the checkpoint too
    assert both(doc).ok
    conv = conv_doc()
    conv["network"]["layers"][0]["skip"] = []
    refused(conv, "skip", "a conv layer has no skip")
    pool = pool_doc(skip=[])
    refused(pool, "format", 'unknown key "skip"')


# ------------------------------------------------------------------ 8. 4-d records


def test_8_four_dimensional_records_belong_to_convolution_weights(cnn_doc):
    assert both(cnn_doc).ok
    first = next(L for L in cnn_doc["network"]["layers"] if L.get("kind") == "conv")
    c1, C, kh, kw = first["weight"]["random"]["shape"]
    permuted = copy.deepcopy(cnn_doc)
    rec = next(L for L in permuted["network"]["layers"] if L.get("kind") == "conv")
    rec["weight"]["random"]["shape"] = [c1, kh, C, kw] if kh != C else [c1, C * kh, 1, kw]
    refused(permuted, "shape", f"this matrix has [channels, {C}, {kh}, {kw}]")
    dense = next(j for j, L in enumerate(cnn_doc["network"]["layers"])
                 if L.get("kind", "dense") == "dense" and "random" in L["weight"])
    four = copy.deepcopy(cnn_doc)
    shape = four["network"]["layers"][dense]["weight"]["random"]["shape"]
    four["network"]["layers"][dense]["weight"]["random"]["shape"] = [shape[0], shape[1], 1, 1]
    refused(four, "shape", "this matrix has a 2-d shape [rows, cols]")


# ------------------------------------------------------------------ 9. dilation of a conv


def test_9_a_convolution_states_its_dilation():
    for section in ("target", "network"):
        doc = conv_doc()
        del doc[section]["layers"][0]["dilation"]
        refused(doc, "format", 'has no "dilation"')


# ------------------------------------------------------------------ 10–12. redraws


def test_10_to_12_redraw_entries(redrawn):
    pair = redrawn["network"]["layers"]
    assert [r["key"] for r in redrawn["redraws"]] == [[1, 1, 0, 0], [1, 1, 0, 1]]
    assert pair[0]["weight"]["random"]["key"] == [1, 1, 0, 2]
    v = both(redrawn)
    assert v.facts["redraws"] == 2 and "2 redraw(s), each after a draw shown singular" in v.message

    def edited(fn: Any) -> dict:
        doc = copy.deepcopy(redrawn)
        fn(doc)
        return doc

    # 10: keyed by the pair's first matrix, role 0: another key is an unused entry
    refused(edited(lambda d: d["redraws"][0].__setitem__("key", [1, 2, 0, 0])), "provenance",
            "attempt 0 of the same draw is not shown singular")
    # 11: both matrices of the pair at one attempt
    refused(edited(lambda d: d["network"]["layers"][1]["weight"]["random"]["key"]
                   .__setitem__(3, 1)), "redraw", "neither the first of a Khatri-Rao pair")
    # 12: exact fields, key form, duplicates, unused entries, kernel length, integers
    refused(edited(lambda d: d["redraws"][0].__setitem__("why", "x")), "format",
            'redraws[0]: unknown key "why"')
    refused(edited(lambda d: d["redraws"][0].__setitem__("key", [1, 1, 0])), "format",
            "key must be four integers")
    refused(edited(lambda d: d["redraws"].append(copy.deepcopy(d["redraws"][0]))),
            "provenance", "is also the key of redraws[0]")
    refused(edited(lambda d: d["redraws"].append({"key": [1, 1, 0, 7], "kernel": [1, 0, 0]})),
            "provenance", "an unused redraws entry")
    refused(edited(lambda d: d["redraws"][0].__setitem__("kernel", [1])), "provenance",
            "must be nonzero with 3 entries, got 1")
    refused(edited(lambda d: d["redraws"][0].__setitem__("kernel", [0, 0, 0])), "provenance",
            "must be nonzero")
    refused(edited(lambda d: d["redraws"][0].__setitem__(
        "kernel", [f"{x}/1" for x in d["redraws"][0]["kernel"]])), "number", "is not an integer")
    assert both(edited(lambda d: d["redraws"][0].__setitem__(
        "kernel", [str(x) for x in d["redraws"][0]["kernel"]]))).ok  # decimal strings


def test_10_to_12_no_unit_without_randomness_and_no_skip_redraw():
    refused(H.redrawn_nonsquare(5), "redraw", "neither the first of a Khatri-Rao pair")
    refused(H.redrawn_pair_m_not_cd(5), "redraw", "neither the first of a Khatri-Rao pair")
    # a square 2 × 2 constant draw (set:0) is singular at every attempt: never redrawn
    constant = H.document([0, 0], [1, 1], [{"weight": [[0, 0], [0, 0]], "bias": [0, 0],
                                            "activation": "identity"}],
                          [H._drawn_layer(0, [1, 1, 0, 1], [2, 2], [1, 1], [0, 0], "identity",
                                          "set:0")], [1], version=3)
    constant["redraws"] = [{"key": [1, 1, 0, 0], "kernel": [1, 0]}]
    refused(constant, "redraw", "a draw of min-entropy 0")
    constant["network"]["layers"][0]["weight"]["random"]["key"][3] = 0
    del constant["redraws"]
    assert both(constant).ok  # at attempt 0 it is merely a constant draw, said so
    # a skip is never redrawn
    skip = copy.deepcopy(dense_doc())
    skip["version"] = 3
    skip["network"]["layers"][0]["source"] = {"kind": "fixed", "why": "x"}
    skip["network"]["layers"][1]["source"] = {"kind": "fixed", "why": "x"}
    skip["target"]["layers"][0]["weight"] = [[2]]
    skip["network"]["layers"].insert(1, {"input": 1, "weight": [[1]], "gamma": [1],
                                         "beta": [0], "activation": "identity",
                                         "source": {"kind": "fixed", "why": "x"},
                                         "skip": [{"from": 1, "kind": "random", "weight": {
                                             "random": H.record([1, 2, 2, 1], [1, 1])}}]})
    skip["network"]["layers"][2]["input"] = 2
    skip["network"]["checkpoints"] = [3]
    refused(skip, "redraw", "attempt 1 of a skip matrix")


# ------------------------------------------------------------------ 13. keys of positions


def test_13_the_key_layout_is_a_rule(v3_doc):
    rec = v3_doc["network"]["layers"][1]["weight"]["random"]
    assert rec["key"] == [1, 2, 0, rec["key"][3]]
    for key in ([1, 7, 0, 0], [1, 2, 0, 0, 0], [2, 2, 0, 0], [1, 2, 2, 0]):
        doc = copy.deepcopy(v3_doc)
        doc["network"]["layers"][1]["weight"]["random"]["key"] = key
        refused(doc, "provenance", "is not the key of its position")
    masked = certificate_document(api.certify(random_target((2, 2), seed=3), "theorem1",
                                              sparsity="3/4", seed=2))
    assert both(masked).ok
    bad = copy.deepcopy(masked)
    bad["network"]["layers"][0]["weight"]["random"]["mask"]["key"][2] = 3
    refused(bad, "provenance", "the mask of network layer 1: stream key")


# ------------------------------------------------------------------ 14. version 1 convolutions


def test_14_every_version_may_hold_convolutions():
    for version in (1, 2, 3):
        doc = conv_doc(version)
        if version >= 2:
            for layer in doc["network"]["layers"]:
                layer["source"] = {"kind": "fixed", "why": "hand-made"}
        v = both(doc)
        assert v.ok and v.facts["version"] == version, v


# ------------------------------------------------------------------ 15. the work budget


def test_15_the_work_budget_counts_alike_and_grows_with_the_certificate(cnn_doc):
    v = both(cnn_doc)
    work, budget = v.facts["work"], v.facts["work_budget"]
    assert 0 < work < budget
    from exactnorm.checker.vocabulary import MIN_WORK, WORK_PER_BIT

    assert budget == max(MIN_WORK, budget // WORK_PER_BIT * WORK_PER_BIT)
    assert both(cnn_doc, max_work=work).ok  # the count is exact: its own total passes
    short = both(cnn_doc, max_work=work - 1)
    assert (short.ok, short.rule) == (False, "limit") and "--max-work" in short.message
    assert both(dense_doc()).facts["work_budget"] == MIN_WORK  # small: the floor


# ------------------------------------------------------------------ 16. bits written


def test_16_plain_lists_over_many_denominators():
    """The bound is 64·W + 2^20 bits for all the numerators: 2^20/n of headroom per entry."""
    n = 2000  # distinct odd denominators of 40 bits: an lcm of ~80,000 bits, far too long
    dens = [(1 << 40) + 2 * k + 1 for k in range(n)]
    doc = dense_doc()
    doc["domain"] = {"lower": ["0"] * n, "upper": [f"1/{q}" for q in dens]}
    doc["target"]["layers"][0]["weight"] = [[0] * n]
    doc["network"]["layers"][0]["weight"] = [[0] * n]
    refused(doc, "limit", f"{n} different denominators")
    ok = copy.deepcopy(doc)  # the same count of powers of two: one denominator of 2,040 bits
    ok["domain"]["upper"] = [f"1/{1 << (k + 40)}" for k in range(n)]
    v = both(ok)
    assert v.rule != "limit", v


# ------------------------------------------------------------------ 17. the CLI and conv


def test_17_the_cli_checks_convolutional_certificates(tmp_path, cnn_doc):
    from exactnorm.certificate import save_certificate
    from exactnorm.cli import main

    path = tmp_path / "cnn.json.gz"
    save_certificate(cnn_doc, path)
    assert main(["check", str(path), "--both"]) == 0


# ------------------------------------------------------------------ the seed rule


def independent_seed(doc: dict) -> int:
    """docs/generator.md §8, written from the page alone: values in lowest terms, hexadecimal,
    one line per item, SHAKE-256, the first 8 bytes little-endian."""

    def value(x: Any, den: int = 1) -> Fraction:
        if isinstance(x, str) and "." in x:
            whole, frac = x.split(".")
            return Fraction(int(whole + frac), 10 ** len(frac)) / den
        return Fraction(x) / den

    def vec(v: Any) -> list[Fraction]:
        if isinstance(v, dict):
            return [value(int(n), int(v["den"])) for n in v["num"]]
        return [value(x) for x in v]

    def rows(M: Any) -> list[list[Fraction]]:
        if isinstance(M, dict):
            return [[value(int(n), int(M["den"])) for n in row] for row in M["num"]]
        return [[value(x) for x in row] for row in M]

    def num(q: Fraction) -> str:
        p = ("-" if q < 0 else "") + format(abs(q.numerator), "x")
        return p if q.denominator == 1 else f"{p}/{q.denominator:x}"

    lines = ["exactnorm.seed.v1",
             "lower " + ",".join(map(num, vec(doc["domain"]["lower"]))),
             "upper " + ",".join(map(num, vec(doc["domain"]["upper"])))]
    for i, layer in enumerate(doc["target"]["layers"], 1):
        kind = layer.get("kind", "dense")
        head = f"layer {i} {kind} {layer['activation']}"
        if kind == "globalavgpool":
            head += " " + ",".join(map(str, layer["input_shape"]))
        elif kind != "dense":
            d = layer.get("dilation", [1, 1])
            head += " " + " ".join(",".join(map(str, layer[k])) for k in
                                   ("input_shape", "kernel_shape", "stride", "padding")) \
                + f" {d[0]},{d[1]}"
        lines.append(head)
        if layer.get("input", i - 1) != i - 1:
            lines.append(f"input {layer['input']}")
        if "skip" in layer:
            skip, w = layer["skip"], layer["skip"]["weight"]
            if "identity" in w:
                lines.append(f"skip {skip['from']} identity {w['identity']}")
            else:
                lines.append(f"skip {skip['from']} selection {w['columns']} "
                             + ",".join("_" if t is None else str(t) for t in w["selection"]))
        if kind not in ("avgpool", "globalavgpool"):
            lines.append("weight " + ";".join(",".join(map(num, r)) for r in rows(layer["weight"])))
            lines.append("bias " + ",".join(map(num, vec(layer["bias"]))))
    text = "".join(line + "\n" for line in lines).encode("ascii")
    return int.from_bytes(hashlib.shake_256(text).digest(8), "little")


def test_seed_rule_test_vector_of_the_documentation():
    from exactnorm.checker.document import document_seed

    doc = {"domain": {"lower": [0, "-1/2"], "upper": [1, "0.5"]},
           "target": {"layers": [{"weight": [["1/2", -3], [0, "2/4"]], "bias": [1, "-1/3"],
                                  "activation": "relu"},
                                 {"weight": [[1, 1]], "bias": [0], "activation": "identity"}]}}
    assert document_seed(doc, rule="target") == independent_seed(doc) == 8075515076916255925
    compact = json.loads(json.dumps(doc))
    compact["target"]["layers"][0]["weight"] = {"den": 4, "num": [[2, -12], [0, 2]]}
    # the values, not the spelling
    assert document_seed(compact, rule="target") == 8075515076916255925


def test_seed_rule_target_is_verified(v3_doc, cnn_doc):
    from exactnorm.checker.document import document_seed
    from tests.checker.test_seed_canonical import independent_seed_v2

    for doc in (v3_doc, cnn_doc):
        assert doc["seed_rule"] == "target.v2"
        seed = doc["network"]["layers"][0]["weight"]["random"]["seed"]
        assert document_seed(doc) == seed
        v = both(doc)
        assert v.facts["seed_rule"] == "target.v2" and \
            "(derived from the canonical target and box, verified)" in v.message
    assert independent_seed_v2(v3_doc) == document_seed(v3_doc)  # a dense target
    other = copy.deepcopy(v3_doc)
    other["target"]["layers"][0]["bias"] = [1] * 2  # another target, the same draws
    refused(other, "provenance", "the seed derived from the target and box is")
    chosen = certificate_document(api.certify(random_target((2, 2), seed=1), seed=5))
    assert "seed_rule" not in chosen
    v = both(chosen)
    assert v.facts["seed_rule"] == "chosen" and "(chosen by the writer)" in v.message


# ------------------------------------------------------------------ min-entropy


@pytest.mark.parametrize("distribution, per_entry", [
    ("nonzero:8", 4), ("nonzero:1", 1), ("int:1", math.log2(3)), ("bits:40", 41),
    ("set:1,1,2", math.log2(3 / 2)), ("set:7", 0), ("rational:1", math.log2(3))])
def test_min_entropy_of_a_draw(distribution, per_entry):
    from exactnorm.checker.regenerate import min_entropy_bits, validate_record

    rec = validate_record(H.record([1, 1, 0, 0], [10, 10], distribution))
    bits = min_entropy_bits(rec)
    # the modular bias of a 64-bit word costs less than a bit over 100 entries
    assert math.floor(100 * per_entry) - 1 <= bits <= math.floor(100 * per_entry), bits


def test_an_all_zero_draw_is_not_called_random():
    v = both(H.zero_draw())
    assert v.ok and v.facts["regenerated"] == 0 and v.facts["constant_draws"] == 1
    assert "no random frozen matrix" in v.message and "0 bits of min-entropy" in v.message


# ------------------------------------------------------------------ 18–30: issue 38's points


def test_18_every_object_is_closed_in_every_version():
    """The closed schema's generated cases are tests/checker/test_closed_schema.py; here the
    cases an independent checker found accepted: an unknown key inside a layer of each kind,
    in a version-1 document as in a version-3 one."""
    for version, doc in ((1, dense_doc()), (1, conv_doc(1)), (3, conv_doc(3))):
        if version == 3:
            for layer in doc["network"]["layers"]:
                layer["source"] = H.fixed()
        assert both(doc).ok
        for side in ("target", "network"):
            for layer in doc[side]["layers"]:
                layer["scale"] = 2
                refused(doc, "format", 'unknown key "scale"')
                del layer["scale"]


def test_19_a_mask_of_either_kind_doubles_the_stream_words():
    """``gauss:8`` reads 12 words an entry: 2^21 entries read 25,165,824 words (below 2^25),
    and 50,331,648 with a mask of either kind, even one that reads no word."""
    rows = 1 << 20
    for mask, refusal in ((None, None), ({"columns": [0]}, "stream words"),
                          ({"p": 1, "key": [1, 2]}, "stream words"),
                          ({"p": "1/2", "key": [1, 2]}, "stream words")):
        extra = {} if mask is None else {"mask": mask}
        layer = {"input": 0, "weight": {"random": H.record([1, 1], [rows, 2], "gauss:8",
                                                          **extra)},
                 "gamma": [1], "beta": [0], "activation": "identity"}
        doc = H.document([0, 0], [1, 1], [{"weight": [[0, 0]], "bias": [0],
                                           "activation": "identity"}], [layer], [1], version=1)
        v = both(doc)
        if refusal is None:  # the record passes; the one-entry gamma does not fit its rows
            assert v.rule == "shape" and "gamma has length 1" in v.message, v
        else:
            assert v.rule == "provenance" and refusal in v.message, v


def _one_entry_draw(attempt: int, distribution: str) -> dict:
    """g(x) = w·x on [0, 1] by one 1 × 1 draw at ``attempt``, ``w`` the draw itself."""
    from exactnorm.checker.regenerate import regenerate

    rec = H.record([1, 1, 0, attempt], [1, 1], distribution)
    w = regenerate(rec)[0][0]
    doc = H.document([0], [1], [{"weight": [[str(w)]], "bias": [0], "activation": "identity"}],
                     [{"input": 0, "weight": {"random": rec}, "gamma": [1], "beta": [0],
                       "activation": "identity"}], [1], version=3)
    if attempt:
        doc["redraws"] = [{"key": [1, 1, 0, a], "kernel": [1]} for a in range(attempt)]
    return doc


def test_20_min_entropy_0_is_the_whole_bits_rounded_down():
    """``set:1,1,1,1,2`` carries 0.32 bits an entry (docs/generator.md §7): a 1 × 1 draw of it
    has min-entropy 0 in whole bits, so it is a constant draw and is never redrawn; with two
    entries of ``nonzero:1`` (1 bit each) it is random and may be."""
    from exactnorm.checker.regenerate import min_entropy_bits, validate_record

    assert min_entropy_bits(validate_record(H.record([1], [1, 1], "set:1,1,1,1,2"))) == 0
    v = both(_one_entry_draw(0, "set:1,1,1,1,2"))
    assert v.ok and v.facts["constant_draws"] == 1 and v.facts["regenerated"] == 0
    refused(_one_entry_draw(1, "set:1,1,1,1,2"), "redraw", "a draw of min-entropy 0")
    assert min_entropy_bits(validate_record(H.record([1], [1, 1], "nonzero:1"))) == 1
    v = both(_one_entry_draw(0, "nonzero:1"))
    assert v.ok and v.facts["regenerated"] == 1


def _rules_named_by(source: str) -> set[str]:
    import ast

    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "CertificateError":
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant):
                names.add(first.value)
            else:  # a rule passed on: every caller's words are literals of this module
                names.add("<computed>")
    return names


def test_21_every_refusal_names_a_rule_of_the_list():
    """The rules a refusal may name are the list of settled detail 21 (and
    ``vocabulary.RULE_NAMES``); every ``CertificateError`` the checker raises names one of them
    (the one computed name, topology's ``bad_source``, is ``format`` or ``segment``)."""
    from exactnorm.checker.vocabulary import RULE_NAMES

    text = (Path(__file__).resolve().parents[2] / "docs" /
            "certificate-format.md").read_text(encoding="utf-8")
    item = text.split("21. **Rule names.**", 1)[1].split("\n22.", 1)[0]
    assert tuple(re.findall(r"`([a-z]+)`", item.split("Those")[0])) == RULE_NAMES
    named: set[str] = set()
    package = Path(__file__).resolve().parents[2] / "exactnorm" / "checker"
    for path in package.rglob("*.py"):
        named |= _rules_named_by(path.read_text(encoding="utf-8"))
    assert named - {"<computed>"} <= set(RULE_NAMES), named - set(RULE_NAMES)
    assert set(RULE_NAMES) <= named  # and each is raised somewhere


@pytest.mark.parametrize("max_work", [1, 10**3, 10**5, 10**7])
def test_22_limits_are_this_checkers_and_decide_nothing_else(max_work, v3_doc, cnn_doc):
    """A budget or a limit of this checker changes a verdict only into a refusal of rule
    ``limit``: every other rule, and ``valid``, is the same for any budget (the work counted and
    the limits are this implementation's, not part of the claim)."""
    for doc in (dense_doc(), conv_doc(), v3_doc, cnn_doc,
                H.redrawn_nonsquare(3), H.big_denominator_box(2000, unstable=True)):
        default = both(doc)
        v = both(doc, max_work=max_work)
        if v.ok:  # the same verdict; the facts differ in the budget they report only
            assert v.message == default.message and v.facts is not None and \
                default.facts is not None and \
                {**v.facts, "work_budget": None} == {**default.facts, "work_budget": None}
        else:
            assert v == default or v.rule == "limit", (default, v)
        if v.rule == "limit":
            assert "this check's work budget" in v.message


@pytest.mark.parametrize("spelling, ok", [
    ("2", True), ("2.", True), ("2.0", True), ("02.00", True), ("4/2", True), ("004/002", True),
    ("20/10", True), (".2e1", False), ("+2", False), ("2e0", False), (" 2", False),
    ("2 ", False), ("2.0.0", False), (".", False), ("-", False), ("2/", False), ("/2", False),
    ("2/0", False), ("2/00", False), ("0x2", False), ("\u0662", False), ("2_0", False),
    ("1/2/3", False), ("2.5/1", False), ("", False), ("- 2", False), ("−2", False)])
def test_23_finite_decimals_and_fractions_are_exactly_those_of_section_0(spelling, ok):
    """γ = 2 written every way §0 allows gives the verdict of the integer 2; every other
    spelling is refused (rule ``number``)."""
    doc = dense_doc()
    doc["network"]["layers"][0]["gamma"] = [spelling]
    v = both(doc)
    if ok:
        assert v == both(dense_doc()), v
    else:
        assert (v.ok, v.rule) == (False, "number") and "network layer 1 gamma[0]" in v.message
    # a decimal's digits are counted together
    for text, fits in (("1.2345", True), ("12.3456", False), ("-.12345", True)):
        doc = dense_doc()
        doc["network"]["layers"][0]["beta"] = [text]
        v = both(json.dumps(doc), max_digits=5)
        assert (v.rule != "number") == fits, (text, v)


def test_24_a_residual_certificate_is_a_target_file(tmp_path):
    from exactnorm.certificate.target_file import read_target_file
    from tests.checker.test_checker_residual import dense_residual_doc

    path = tmp_path / "residual.json"
    path.write_text(json.dumps(dense_residual_doc()))
    wiring = read_target_file(path).wiring or ()  # None: a chain
    assert [w.input for w in wiring] == [0, 1, 0, 3]
    assert [w.skip is not None for w in wiring] == [False, True, True, False]


def test_25_a_convolution_segment_ending_in_a_dense_layer_is_a_segment_refusal(cnn_doc):
    """The checkpoint of the last convolution moved one layer later: its segment holds the first
    dense layer (an internal error of both arithmetics before)."""
    kinds = [L.get("kind", "dense") for L in cnn_doc["network"]["layers"]]
    cps = cnn_doc["network"]["checkpoints"]
    i = max(k for k, c in enumerate(cps[:-1]) if kinds[c - 1] == "conv")
    assert kinds[cps[i]] == "dense"
    doc = copy.deepcopy(cnn_doc)
    doc["network"]["checkpoints"][i] += 1
    refused(doc, "segment", f"network layer {cps[i] + 1} is a dense layer inside the "
                            f"convolution segment of target layer {i + 1}")
    # a pooling layer there too
    pool = conv_doc()
    pool["network"]["layers"][1] = {"kind": "avgpool", "input": 1, "input_shape": [4, 2, 2],
                                    "kernel_shape": [1, 1], "stride": [1, 1],
                                    "padding": [0, 0], "activation": "identity"}
    refused(pool, "segment", "network layer 2 is a avgpool layer inside the convolution segment")


def _impossibility(name: str = "rank") -> dict:
    from exactnorm.analysis.capacity import decide
    from tests.checker.test_checker_impossibility import CASES

    make, scale = CASES[name]
    net, g = make()
    return decide(net, g, output_scale=scale).document


def test_27_a_four_dimensional_record_on_an_impossibility_dense_layer_is_refused():
    doc = _impossibility()
    layer = doc["network"]["layers"][0]
    rows = len(layer["weight"]) if isinstance(layer["weight"], list) else \
        len(layer["weight"]["num"])
    cols = len(doc["domain"]["lower"])
    layer["weight"] = {"random": H.record([5, 5], [rows, cols, 1, 1])}
    layer.pop("source", None)
    refused(doc, "shape", "this matrix has a 2-d shape [rows, cols]")


def test_28_kind_dense_is_no_kind_in_both_document_kinds():
    doc = _impossibility()
    plain = both(doc)
    for layer in doc["target"]["layers"] + doc["network"]["layers"]:
        layer["kind"] = "dense"
    assert both(doc) == plain
