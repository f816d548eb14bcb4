"""Mutation campaigns judged by the oracle: real documents of every kind
(:mod:`tests.checker.oracle_documents`), changed one entry or one structure at a time, checked by
both arithmetics (:func:`tests.helpers.both`), and every verdict held against ground truth.

* a VALID certificate must compute its target: ``f = g`` exactly at every box vertex (or a
  seeded sample of them) and at seeded random rational points (:func:`oracle.claim_fails`);
* an UNREACHABLE impossibility document must survive the search for a reaching tuning
  (:func:`oracle_search.reaching_tuning`, every tuning it returns proved on the whole box);
* a document the checker accepts must be one the oracle can read (else the checker gave a
  meaning to something the format does not define);
* a VALID transformer document must have slots equal to their targets on their boxes and boxes
  that hold the original's values (:func:`oracle_transformer.transformer_claim_fails`);
* no mutant may raise an exception or get different verdicts from the two arithmetics.

The mutants are :mod:`tests.checker.oracle_mutations`'s (single entries, and structures the writer
never produces).

Everything is seeded (``random.Random`` from the kind's name and a seed): the same campaign gives
the same mutants and counts on every machine. :func:`campaign` returns a :class:`Tally`.
"""

from __future__ import annotations

import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.checker import oracle, oracle_documents, oracle_search, oracle_transformer
from tests.checker.oracle_mutations import Doc, family, mutants
from tests.helpers import both


@dataclass
class Finding:
    kind: str
    operator: str
    verdict: str
    oracle: str
    bug: str | None  # the known checker bug this finding belongs to, if any
    document: Doc = field(repr=False)


@dataclass
class Tally:
    kind: str
    mutants: int = 0
    valid: int = 0
    unreachable: int = 0
    invalid: Counter[str] = field(default_factory=Counter)
    operators: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    oracle_checked: int = 0
    searched: int = 0
    findings: list[Finding] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        known = Counter(f.bug for f in self.findings if f.bug)
        return {"kind": self.kind, "mutants": self.mutants, "VALID": self.valid,
                "UNREACHABLE": self.unreachable, "INVALID": sum(self.invalid.values()),
                "rules": dict(sorted(self.invalid.items())), "oracle checks": self.oracle_checked,
                "searches": self.searched,
                "disagreements": len(self.findings), "known bugs": dict(known),
                "unknown": sum(1 for f in self.findings if not f.bug)}


# --------------------------------------------------------------------------- judging


#: checker bugs the campaigns found, by (document family, operator): fixed; a finding is named by
#: its class, and the regression tests demand none
KNOWN_BUGS: dict[tuple[str, str], str] = {
    ("impossibility", "target input"):
        "the impossibility reader ignores a target layer's input (false UNREACHABLE)",
    ("impossibility", "target skip"):
        "the impossibility reader ignores a target layer's skip (false UNREACHABLE)",
}


#: an internal error of the checker's convolution segment rule on a layer of another kind
CONV_SEGMENT_BUG = ("an AssertionError (exit 3) when a convolution segment holds a layer of "
                    "another kind (a checkpoint moved one layer later; rule segment by §8)")


def known_bug(fam: str, operator: str, verdict: str) -> str | None:
    """The known checker bug a finding belongs to, or ``None`` (a new bug)."""
    if verdict.startswith("exception AssertionError in kinds/conv.py:_inner_conv"):
        return CONV_SEGMENT_BUG
    if verdict.startswith("exception"):
        return None
    return KNOWN_BUGS.get((fam, operator))


def _summary(v: Any) -> str:
    return f"{'VALID' if v.ok else 'INVALID'} ({v.rule}): {v.message[:160]}"


def judge(kind: str, operator: str, doc: Doc, tally: Tally, seed: int = 0,
          randoms: int = 6, max_vertices: int = 32) -> None:
    """Check one document with both arithmetics and hold the verdict against the oracle."""
    fam = family(kind)
    tally.mutants += 1
    tally.operators[operator] += 1

    def finding(verdict: str, said: str) -> None:
        tally.outcomes[operator, "disagreement"] += 1
        tally.findings.append(Finding(kind, operator, verdict, said,
                                      known_bug(fam, operator, verdict), doc))

    try:
        v = both(doc)
    except Exception as e:  # an internal error is a finding, whatever it is
        frames = traceback.extract_tb(e.__traceback__)
        if isinstance(e, AssertionError) and frames[-1].name == "both":
            finding("the arithmetics disagree", str(e)[:300])
        else:
            where = " <- ".join(f"{f.filename.rsplit('/', 2)[-2]}/{f.filename.rsplit('/', 1)[-1]}"
                                f":{f.name}" for f in reversed(frames[-3:]))
            finding(f"exception {type(e).__name__} in {where}",
                    "".join(traceback.format_exception_only(type(e), e)).strip()[:300])
        return
    if not v.ok:
        tally.invalid[v.rule] += 1
        tally.outcomes[operator, f"INVALID {v.rule}"] += 1
        return
    tally.outcomes[operator, "UNREACHABLE" if fam == "impossibility" else "VALID"] += 1
    if fam == "transformer":
        tally.valid += 1
        tally.oracle_checked += 1
        try:
            failed = oracle_transformer.transformer_claim_fails(doc, seed=seed)
        except (oracle.Unreadable, KeyError, TypeError, IndexError, ValueError) as e:
            failed = f"the oracle gives the document no meaning: {type(e).__name__}: {e}"
        if failed:
            finding(_summary(v), failed)
        return
    if fam == "certificate":
        tally.valid += 1
        tally.oracle_checked += 1
        try:
            failed = oracle.claim_fails(doc, randoms=randoms, seed=seed,
                                        max_vertices=max_vertices)
        except oracle.Unreadable as e:
            failed = f"the oracle gives the document no meaning: {e}"
        if failed:
            finding(_summary(v), failed)
        return
    tally.unreachable += 1
    tally.searched += 1
    try:
        tuning, how = oracle_search.reaching_tuning(oracle.read_impossibility(doc), seed=seed)
    except oracle.Unreadable as e:
        finding(_summary(v), f"the oracle gives the document no meaning: {e}")
        return
    if tuning is not None:
        finding(_summary(v), f"a tuning reaches the target on the whole box ({how}): "
                             f"gamma {[[str(g) for g in row] for row in tuning.gammas]}, "
                             f"beta {[[str(b) for b in row] for row in tuning.betas]}")


def campaign(kind: str, count: int, seed: int = 0, **kw: Any) -> Tally:
    """The real documents of ``kind`` and ``count`` mutants, judged."""
    tally = Tally(kind)
    for doc in oracle_documents.documents(kind):
        judge(kind, "original", doc, tally, seed, **kw)
    for name, doc in mutants(kind, count, seed):
        judge(kind, name, doc, tally, seed, **kw)
    return tally
