"""T1: Theorem 1 certification statistics for one-layer d×d targets (fixed seeds, no timings)."""

from __future__ import annotations

from exactnorm.outputs.tables.proof_table import ProofTable

__all__ = ["table_t1"]


T1_SIZES = (2, 4, 8, 16)


T1_SEEDS = (0, 1, 2)


def table_t1() -> ProofTable:
    """T1: Theorem 1 certification statistics for one-layer d×d targets, fixed seeds."""
    from exactnorm.api import certificate_document, certify, check
    from exactnorm.model.targets import random_target

    rows = []
    for d in T1_SIZES:
        gbits, bbits, ranks, verdicts = [], [], [], []
        tuned = frozen = 0
        for seed in T1_SEEDS:
            g = random_target((d, d), seed=seed, activations=["identity"])
            c = certify(g, "theorem1", seed=seed, retry=0)
            doc = certificate_document(c)
            fast = check(doc)
            agree = check(doc, pure=True) == fast if d <= 8 else True
            verdicts.append(fast.ok and agree)
            r = c.reports[0]
            gbits.append(r.gamma_bits)
            bbits.append(r.beta_bits)
            ranks.append(r.rank)
            tuned, frozen = c.network.tuned_parameters, c.network.frozen_parameters
        rows.append([d, d * d, len(T1_SEEDS), f"{min(ranks)}/{d * d}", min(gbits), max(gbits),
                     max(bbits), tuned, frozen, 2 * d * d + d,
                     "all valid" if all(verdicts) else "FAILED"])
    return ProofTable(
        key="T1", slug="theorem1_certification",
        title="Theorem 1, exact certification of one-layer d×d targets",
        command="exactnorm tables --only T1",
        columns=["d", "m = d²", "seeds", "min exact rank", "min γ bits", "max γ bits",
                 "max β bits", "tuned params", "frozen params", "target params", "checker"],
        rows=rows,
        notes=[
            "Targets: random_target((d, d), seed, 'rational:4'), identity activation, "
            "box [-1, 1]^d.",
            "Frozen weights: nonzero:8 (integers uniform on ±1…±8), seeds 0, 1, 2; no redraws.",
            "γ/β bits: largest numerator or denominator bit size over all entries.",
            "checker: python-flint checker on every certificate, and agreement with the "
            "standard-library checker for d ≤ 8.",
        ],
    )

