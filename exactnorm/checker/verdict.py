"""What a valid verdict proves, in words and as JSON facts (docs/certificate-format.md §6,
"Counts in the verdict"). Standard library only.

The verdict names the box, the target's widths and the construction, and says what the frozen
matrices are: how many were regenerated from their draw records and from which seed, whether
that seed was derived from the target (rule ``target``, verified) or chosen by the writer, whether
their stream keys are bound to their positions (version 3) or chosen by the writer (versions 1
and 2), the min-entropy each random draw carries, and which matrices are constant draws, fixed,
selections or identities.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .numbers import CertificateError, IntVector, Verdict, show, show_ratio
from .provenance import Provenance, role_name
from .records import TargetRecord

__all__ = ["facts_of", "verdict_of", "describe_box", "progress_step"]


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


def facts_of(doc: dict, lower: IntVector, upper: IntVector, target: list[TargetRecord],
             n_layers: int, prov: Provenance) -> dict[str, Any]:
    """What a valid verdict proves, as JSON-ready facts."""
    info = doc.get("provenance")
    construction = info.get("construction") if isinstance(info, dict) else None
    random = [d for d in prov.draws if d.bits > 0]
    smallest = min(random, key=lambda d: d.bits) if random else None
    return {"box": describe_box(lower, upper), "dimension": len(lower),
            "target_widths": [len(lower)] + [tl.width for tl in target],
            "construction": construction[:60] if isinstance(construction, str) else None,
            "segments": len(target), "frozen_layers": n_layers, "version": prov.version,
            "regenerated": prov.regenerated, "explicit": prov.explicit,
            "seed": min(prov.seeds) if prov.seeds else None,
            "seed_rule": prov.seed_rule if prov.draws else None,
            "provenance": (None if not prov.draws else
                           "positional" if prov.version >= 3 else "unbound"),
            "distributions": sorted(prov.distributions), "constant_draws": prov.constant,
            "entropy_bits": sum(d.bits for d in random),
            "smallest_draw_bits": smallest.bits if smallest else None,
            "smallest_draw": smallest.where if smallest else None,
            "draw_bits": [[d.layer, role_name(d.role), d.bits] for d in prov.draws],
            "fixed": prov.fixed[:20], "fixed_count": len(prov.fixed), "pooling": prov.pools,
            "redraws": prov.redraws}


def _draws_text(f: dict[str, Any]) -> str:
    """The frozen draws in words: count, seed and its rule, binding of keys, min-entropy."""
    n, k = f["regenerated"], f["constant_draws"]
    if n == 0 and k == 0:
        return "no frozen matrix regenerated from a seed"
    seed = f["seed"]
    dists = ", ".join(f["distributions"])
    if n == 0:
        text = f"no random frozen matrix: {k} constant draw(s) regenerated from seed {seed} " \
               f"({dists}; 0 bits of min-entropy)"
        return text
    if f["provenance"] == "positional":
        rule = "derived from the target and box, verified" if f["seed_rule"] == "target" \
            else "chosen by the writer"
        text = (f"{n:,} frozen matrices drawn from seed {seed} ({rule}) at the stream keys of "
                f"their positions ({dists}), each with at least {f['smallest_draw_bits']:,} "
                f"bits of min-entropy (smallest: {f['smallest_draw']}), "
                f"{f['entropy_bits']:,} in total")
    else:
        text = (f"{n:,} frozen matrices regenerated from seed {seed} ({dists}; version "
                f"{f['version']}: stream keys chosen by the writer, not bound to positions)")
    if k:
        text += f"; {k} constant draw(s) (0 bits of min-entropy), not random"
    return text


def verdict_of(run: Callable[[], dict[str, Any]]) -> Verdict:
    """Run the rules; ``run`` returns the facts of :func:`facts_of` or raises CertificateError."""
    try:
        facts = run()
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc), exc.layer, exc.neuron)
    except RecursionError:
        return Verdict(False, "format", "document is nested too deeply")
    how = f" by construction {show(facts['construction'])}" if facts["construction"] else ""
    fixed = ""
    if facts["fixed_count"]:
        fixed = f"; {facts['fixed_count']} declared fixed (first: {facts['fixed'][0]})"
    pools = f"; {facts['pooling']} pooling map(s) declared" if facts["pooling"] else ""
    if facts["redraws"]:
        pools += f"; {facts['redraws']} redraw(s), each after a draw shown singular"
    return Verdict(True, "valid", f"f = g on {facts['box']} for target "
                                  f"{_widths(facts['target_widths'])}{how}; "
                                  f"{facts['segments']} segment(s), {facts['frozen_layers']} "
                                  f"frozen layer(s); {_draws_text(facts)}, "
                                  f"{facts['explicit']:,} given explicitly{fixed}{pools}",
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
