"""Mutation campaigns of every document kind, judged by the oracle (issue 38: ground truth, not
only our own verdicts). Each real document of :mod:`tests.checker.oracle_documents` and its
seeded mutants (:mod:`tests.checker.oracle_campaign`) are checked by both arithmetics; every VALID
certificate must compute its target at the box's vertices and random points, every UNREACHABLE
document must survive the search for a reaching tuning, every VALID transformer document must
have slots equal to their targets on their boxes and boxes that hold the original's values
(:mod:`tests.checker.oracle_transformer`), and no mutant may raise or split the arithmetics.
The default run keeps to about a minute; ``-m slow`` runs larger campaigns over three more
seeds. ``python benchmarks/bench_oracle_campaign.py`` prints the counts.

The checker bugs the first campaigns found are named in
:data:`tests.checker.oracle_campaign.KNOWN_BUGS` and :data:`~tests.checker.oracle_campaign.
CONV_SEGMENT_BUG` (so that a finding is reported by its class); all are fixed, and each has a
regression test below that demands no finding of its class, and one document of each checked on
its own.
"""

from __future__ import annotations

import copy
import functools

import pytest

from tests.checker import oracle, oracle_documents, oracle_search
from tests.checker.oracle_campaign import CONV_SEGMENT_BUG, KNOWN_BUGS, Tally, campaign
from tests.helpers import both

KINDS = (oracle_documents.CERTIFICATE_KINDS + oracle_documents.IMPOSSIBILITY_KINDS
         + oracle_documents.TRANSFORMER_KINDS)


def default_count(kind: str) -> int:
    """Mutants per kind in the default run (impossibility documents are small and fast)."""
    if kind == oracle_documents.RESNET_KIND:
        return 6
    if kind in oracle_documents.TRANSFORMER_KINDS:
        return 40
    return 200 if kind in oracle_documents.IMPOSSIBILITY_KINDS else 80


@functools.cache
def tally(kind: str, count: int, seed: int = 0) -> Tally:
    return campaign(kind, count, seed)


def _report(findings: list) -> str:
    return "\n".join(f"{f.kind} / {f.operator}: {f.verdict} — oracle: {f.oracle}"
                     for f in findings[:10])


@pytest.mark.parametrize("kind", KINDS)
def test_every_verdict_of_the_campaign_agrees_with_the_oracle(kind):
    count = default_count(kind)
    t = tally(kind, count)
    originals = len(oracle_documents.documents(kind))
    assert t.mutants == count + originals
    word = "UNREACHABLE" if kind in oracle_documents.IMPOSSIBILITY_KINDS else "VALID"
    assert t.outcomes["original", word] == originals, t.outcomes
    assert sum(t.invalid.values()) > 0  # the mutants are refused, not only waved through
    unknown = [f for f in t.findings if f.bug is None]
    assert not unknown, _report(unknown)


def _known(bug: str, kinds: list[str]) -> list:
    return [f for k in kinds for f in tally(k, default_count(k)).findings if f.bug == bug]


def test_no_false_impossibility_for_a_target_layer_reading_another_node():
    found = _known(KNOWN_BUGS["impossibility", "target input"],
                   oracle_documents.IMPOSSIBILITY_KINDS)
    assert not found, _report(found)


def test_no_false_impossibility_for_a_target_layer_with_a_skip():
    found = _known(KNOWN_BUGS["impossibility", "target skip"],
                   oracle_documents.IMPOSSIBILITY_KINDS)
    assert not found, _report(found)


def test_no_internal_error_on_a_convolution_segment_holding_another_kind():
    kinds = [k for k in oracle_documents.CERTIFICATE_KINDS if not k.startswith("dense")]
    found = _known(CONV_SEGMENT_BUG, kinds)
    assert not found, _report(found)


# ------------------------------------------------------------------ one document of each bug


def _unreachable_and_reached(doc: dict) -> bool:
    v = both(doc)
    if not (v.ok and v.facts.get("claim") == "UNREACHABLE"):
        return False
    return oracle_search.reaching_tuning(oracle.read_impossibility(doc))[0] is not None


def test_target_layer_2_reading_x_is_not_called_unreachable():
    """A kink document whose target layer 2 reads ``x``: the target is affine and reached."""
    doc = copy.deepcopy(oracle_documents.documents("impossibility kink")[0])
    doc["target"]["layers"][1]["input"] = 0
    assert not _unreachable_and_reached(doc)


def test_an_identity_skip_that_cancels_the_kink_is_not_called_unreachable():
    """Target ``−relu(W_1 x + b_1) + b_2`` plus the identity skip of node 1: a constant."""
    doc = copy.deepcopy(oracle_documents.documents("impossibility kink")[1])
    doc["target"]["layers"][1]["skip"] = {"from": 1, "kind": "identity",
                                          "weight": {"identity": 2}}
    assert not _unreachable_and_reached(doc)


def test_a_convolution_segment_ending_in_a_dense_layer_gets_rule_segment():
    doc = copy.deepcopy(oracle_documents.documents("conv v3")[0])
    doc["network"]["checkpoints"][0] += 1  # the dense layer after the convolution joins it
    v = both(doc)
    assert (v.ok, v.rule) == (False, "segment"), v


# ------------------------------------------------------------------------------- slow


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_larger_campaigns_agree_with_the_oracle(kind, seed):
    count = 4 * default_count(kind)
    t = campaign(kind, count, seed, randoms=12, max_vertices=64)
    unknown = [f for f in t.findings if f.bug is None]
    assert not unknown, _report(unknown)


# ------------------------------------------------------------- the judging can fail


class _Accepting:
    """A stand-in checker that accepts everything (what a broken checker could do)."""

    def __init__(self, claim: str | None = None, error: Exception | None = None) -> None:
        self.claim, self.error = claim, error

    def __call__(self, doc: dict) -> object:
        if self.error is not None:
            raise self.error
        return type("V", (), {"ok": True, "rule": "valid", "message": "accepted",
                              "facts": {"claim": self.claim}})()


def test_a_checker_that_accepts_everything_is_caught(monkeypatch):
    from tests.checker import oracle_campaign

    cert = copy.deepcopy(oracle_documents.documents("dense v3")[0])
    last = cert["network"]["layers"][-1]
    last["beta"] = {"den": 1, "num": [7] * len(oracle.vector(last["beta"]))}
    reachable = copy.deepcopy(oracle_documents.documents("impossibility kink")[0])
    reachable["target"]["layers"][1]["input"] = 0
    monkeypatch.setattr(oracle_campaign, "both", _Accepting("UNREACHABLE"))
    t = Tally("stand-in")
    oracle_campaign.judge("dense v3", "number: beta", cert, t)
    oracle_campaign.judge("impossibility kink", "number: box", reachable, t)
    monkeypatch.setattr(oracle_campaign, "both", _Accepting(error=KeyError("deep inside")))
    oracle_campaign.judge("conv v3", "checkpoint", cert, t)
    assert [(f.operator, f.bug) for f in t.findings] == [("number: beta", None),
                                                         ("number: box", None),
                                                         ("checkpoint", None)]
    assert t.findings[0].oracle.startswith("f != g at")
    assert t.findings[1].oracle.startswith("a tuning reaches the target on the whole box")
    assert t.findings[2].verdict.startswith("exception KeyError")
