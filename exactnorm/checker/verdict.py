"""What a valid verdict proves, in words and as JSON facts (docs/certificate-format.md §6,
"Counts in the verdict"). Standard library only.

The verdict names the box, the target's widths and the construction, and says what every frozen
matrix is: how many there are, which were regenerated from their draw records and from which
seed, by which seed rule (derived from the canonical target and box — rule ``target.v2`` — or
from the target as written — the first rule ``target`` — both verified, or chosen by the
writer), whether their stream keys are bound to their positions (version 3) or chosen by the
writer (versions 1 and 2), the min-entropy of the draws and what it is worth (below 128 bits, a
writer could have tried about ``2^k`` variants), and each matrix that is not random: constant
draws, matrices declared fixed (named), routes and matrices given without a record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .numbers import CertificateError, IntVector, Verdict, show, show_ratio
from .provenance import Provenance, role_name
from .records import TargetRecord
from .vocabulary import SEED_RULE_CHOSEN, SEED_RULE_TARGET

__all__ = ["facts_of", "verdict_of", "describe_box", "progress_step", "provenance_facts",
           "provenance_text", "SEARCH_BITS"]


def _shown(v: IntVector, k: int) -> str:
    """Entry k in lowest terms, or by bit sizes when reducing it would cost a huge gcd."""
    return show_ratio(v.nums[k], v.den)


def describe_box(lower: IntVector, upper: IntVector) -> str:
    """``[0,1]^784`` for a cube; else the first intervals, and every pinned coordinate
    (lower = upper) by name, since the target may weight it heavily."""
    n = len(lower)
    if len(set(lower.nums)) == 1 and len(set(upper.nums)) == 1:
        return f"[{_shown(lower, 0)},{_shown(upper, 0)}]^{n}"
    shown = " x ".join(f"[{_shown(lower, t)},{_shown(upper, t)}]" for t in range(min(n, 3)))
    text = f"{shown}{' x ...' if n > 3 else ''} (dimension {n})"
    pinned = [t for t in range(3, n)
              if lower.nums[t] * upper.den == upper.nums[t] * lower.den]
    if pinned:
        named = ", ".join(f"x{t} = {_shown(lower, t)}" for t in pinned[:5])
        more = f" and {len(pinned) - 5} more" if len(pinned) > 5 else ""
        text += f"; pinned: {named}{more}"
    return text


def _widths(widths: list[int]) -> str:
    if len(widths) <= 12:
        return "-".join(map(str, widths))
    return (f"{'-'.join(map(str, widths[:5]))}-...-{'-'.join(map(str, widths[-5:]))} "
            f"({len(widths) - 1} layers)")


#: a draw set with at least this many bits of min-entropy cannot have been searched for
SEARCH_BITS = 128

#: how the verdict names each seed rule's derivation
_DERIVATION = {
    SEED_RULE_TARGET: "derived from the canonical target and box, verified",
    SEED_RULE_CHOSEN: "chosen by the writer",
}
#: what a writer could have varied to choose among seeds, by seed rule
_VARIANTS = {
    SEED_RULE_TARGET: "variants of what the rule does not pin (the box, the construction, "
                      "edits outside the canonical form)",
    SEED_RULE_CHOSEN: "seeds",
}


def provenance_facts(prov: Provenance) -> dict[str, Any]:
    """What the frozen matrices were proven to be, as JSON-ready facts (shared by every document
    kind): every frozen matrix counted — drawn (random, or a constant draw), declared fixed, or
    given explicitly (identity and selection routes, matrices without a record) — the seed and
    its rule, the min-entropy of the draws and, below :data:`SEARCH_BITS`, how many variants a
    writer could have tried (``grinding_bits``)."""
    random = [d for d in prov.draws if d.bits > 0]
    smallest = min(random, key=lambda d: d.bits) if random else None
    total = sum(d.bits for d in random)
    return {"version": prov.version, "frozen_matrices": prov.frozen_matrices,
            "drawn": len(prov.draws),
            "regenerated": prov.regenerated, "explicit": prov.explicit,
            "seed": min(prov.seeds) if prov.seeds else None,
            "seed_rule": prov.seed_rule if prov.draws else None,
            "provenance": (None if not prov.draws else
                           "positional" if prov.version >= 3 else "unbound"),
            "distributions": sorted(prov.distributions), "constant_draws": prov.constant,
            "entropy_bits": total,
            "grinding_bits": total if prov.draws and total < SEARCH_BITS else None,
            "smallest_draw_bits": smallest.bits if smallest else None,
            "smallest_draw": smallest.where if smallest else None,
            "draw_bits": [[d.layer, role_name(d.role), d.bits] for d in prov.draws],
            "fixed": prov.fixed[:20], "fixed_count": len(prov.fixed), "pooling": prov.pools,
            "redraws": prov.redraws}


def facts_of(doc: dict, lower: IntVector, upper: IntVector, target: list[TargetRecord],
             n_layers: int, prov: Provenance) -> dict[str, Any]:
    """What a valid verdict proves, as JSON-ready facts."""
    info = doc.get("provenance")
    construction = info.get("construction") if isinstance(info, dict) else None
    facts = {"box": describe_box(lower, upper), "dimension": len(lower),
             "target_widths": [len(lower)] + [tl.width for tl in target],
             "construction": construction[:60] if isinstance(construction, str) else None,
             "segments": len(target), "frozen_layers": n_layers, "version": prov.version}
    facts.update(provenance_facts(prov))
    return facts


def _worth(f: dict[str, Any]) -> str:
    """What the draws' min-entropy is worth against a writer who searched."""
    total = f["entropy_bits"]
    if total >= SEARCH_BITS:
        return (f"at least {SEARCH_BITS} bits, so no search could have chosen these particular "
                f"matrices")
    variants = _VARIANTS.get(f["seed_rule"], "seeds") if f["provenance"] == "positional" else \
        "stream keys and seeds"
    return (f"below {SEARCH_BITS} bits, so a writer could have tried about 2^{total} {variants} "
            f"and kept the one whose draws suited them")


def _not_drawn(f: dict[str, Any]) -> str:
    """The frozen matrices that are not random, each kind named."""
    text = ""
    if f["constant_draws"]:
        text += f"; {f['constant_draws']} constant draw(s) (0 bits of min-entropy), not random"
    if f["fixed_count"]:
        shown = "; ".join(f["fixed"][:3])
        more = f" and {f['fixed_count'] - 3} more" if f["fixed_count"] > 3 else ""
        text += f"; {f['fixed_count']} declared fixed, not random ({shown}{more})"
    routes = f["explicit"] - f["fixed_count"]
    if routes:
        text += (f"; {routes:,} given explicitly (identity or selection routes, or matrices "
                 f"without a draw record)")
    return text


def provenance_text(f: dict[str, Any]) -> str:
    """The frozen matrices in words (:func:`provenance_facts`): how many there are, which were
    drawn, from which seed by which rule, what their min-entropy is worth, and every one that is
    not random — constant draws, declared fixed (named), given explicitly. What is said of the
    seed (``derived from the canonical target and box, verified``) is said of the drawn
    matrices only: the count says how many of all the frozen matrices they are."""
    n, k, total = f["regenerated"], f["constant_draws"], f["frozen_matrices"]
    matrices = f"frozen matri{'x' if total == 1 else 'ces'}"
    if n == 0 and k == 0:
        return f"{total:,} {matrices}, none drawn from a seed{_not_drawn(f)}"
    seed = f["seed"]
    dists = ", ".join(f["distributions"])
    if n == 0:
        return (f"no random frozen matrix: {k} constant draw(s) regenerated from seed {seed} "
                f"({dists}; 0 bits of min-entropy), not random"
                f"{_not_drawn(dict(f, constant_draws=0))}")
    drawn = f"{n:,} {matrices}" if n == total else f"{n:,} of the {total:,} {matrices}"
    if f["provenance"] == "positional":
        rule = _DERIVATION.get(f["seed_rule"], _DERIVATION[SEED_RULE_CHOSEN])
        text = (f"{drawn} drawn from seed {seed} ({rule}) at the stream keys of their "
                f"positions ({dists}), each with at least {f['smallest_draw_bits']:,} bits of "
                f"min-entropy (smallest: {f['smallest_draw']}), {f['entropy_bits']:,} in total: "
                f"{_worth(f)}")
    else:
        text = (f"{drawn} regenerated from seed {seed} ({dists}; version {f['version']}: stream "
                f"keys chosen by the writer, not bound to positions), {f['entropy_bits']:,} bits "
                f"of min-entropy in total: {_worth(f)}")
    return text + _not_drawn(f)


def verdict_of(run: Callable[[], dict[str, Any]]) -> Verdict:
    """Run the rules; ``run`` returns the facts of :func:`facts_of` or raises CertificateError."""
    try:
        facts = run()
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc), exc.layer, exc.neuron)
    except RecursionError:
        return Verdict(False, "format", "document is nested too deeply")
    how = f" by construction {show(facts['construction'])}" if facts["construction"] else ""
    pools = f"; {facts['pooling']} pooling map(s) declared" if facts["pooling"] else ""
    if facts["redraws"]:
        pools += f"; {facts['redraws']} redraw(s), each after a draw shown singular"
    return Verdict(True, "valid", f"f = g on {facts['box']} for target "
                                  f"{_widths(facts['target_widths'])}{how}; "
                                  f"{facts['segments']} segment(s), {facts['frozen_layers']} "
                                  f"frozen layer(s); {provenance_text(facts)}{pools}",
                   facts=facts)


def progress_step(progress: Callable[[int, int], None] | None,
                  total: int) -> Callable[[int], None] | None:
    """``step(j)`` reporting ``progress(j - 1, total)``."""
    if progress is None:
        return None
    report = progress

    def step(j: int) -> None:
        report(j - 1, total)

    return step
