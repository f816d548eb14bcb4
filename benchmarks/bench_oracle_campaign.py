"""Mutation campaigns of every document kind judged by the independent oracle: the summary.

For each document kind (certificates of every layer kind and version, residual, channel blocks,
sparse, trade-off, low-rank, capacity's REACHABLE certificate, impossibility documents of every
witness kind), the real documents and their seeded mutants are checked by both arithmetics and
held against ground truth (tests/checker/oracle_campaign.py): a VALID certificate must compute
its target at box vertices and random rational points, an UNREACHABLE document must survive the
search for a reaching tuning. Prints one row per kind (mutants, VALID, UNREACHABLE, INVALID and
its rules, oracle checks, searches, disagreements with the known bug they belong to, CPU seconds)
and the disagreements grouped by bug with one example each; writes
``benchmarks/results/oracle_campaign.csv``.

    python benchmarks/bench_oracle_campaign.py                 # the default suite's counts
    python benchmarks/bench_oracle_campaign.py --slow          # 4× the mutants, seeds 0–3
    python benchmarks/bench_oracle_campaign.py --kinds "impossibility kink" --save DIR
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import machine, write_csv  # noqa: E402

from tests.checker.oracle_campaign import Tally, campaign  # noqa: E402
from tests.checker.test_oracle_campaign import KINDS, default_count  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slow", action="store_true", help="4× the mutants over seeds 0–3")
    ap.add_argument("--kinds", nargs="*", default=None, help="only these document kinds")
    ap.add_argument("--count", type=int, default=None, help="mutants per kind and seed")
    ap.add_argument("--save", default=None, help="write every disagreement's document here")
    args = ap.parse_args()
    kinds = args.kinds or KINDS
    seeds = [0, 1, 2, 3] if args.slow else [0]
    print("# " + ", ".join(f"{k}={v}" for k, v in machine().items()))
    head = (f"{'document kind':<30}{'mutants':>8}{'VALID':>7}{'UNREACH':>8}{'INVALID':>8}"
            f"{'oracle':>7}{'search':>7}{'disagree':>9}{'unknown':>8}{'CPU s':>7}  rules")
    print(head)
    rows, findings, total = [], [], Tally("all")
    wall = time.perf_counter()
    for kind in kinds:
        count = args.count or default_count(kind) * (4 if args.slow else 1)
        cpu = time.process_time()
        t = Tally(kind)
        for seed in seeds:
            part = campaign(kind, count, seed, **({"randoms": 12, "max_vertices": 64}
                                                  if args.slow else {}))
            for name in ("mutants", "valid", "unreachable", "oracle_checked", "searched"):
                setattr(t, name, getattr(t, name) + getattr(part, name))
            t.invalid.update(part.invalid)
            t.findings += part.findings
        cpu = time.process_time() - cpu
        unknown = sum(1 for f in t.findings if not f.bug)
        rules = ", ".join(f"{r} {n}" for r, n in t.invalid.most_common())
        print(f"{kind:<30}{t.mutants:>8}{t.valid:>7}{t.unreachable:>8}"
              f"{sum(t.invalid.values()):>8}{t.oracle_checked:>7}{t.searched:>7}"
              f"{len(t.findings):>9}{unknown:>8}{cpu:>7.1f}  {rules}", flush=True)
        rows.append([kind, t.mutants, t.valid, t.unreachable, sum(t.invalid.values()),
                     t.oracle_checked, t.searched, len(t.findings), unknown, round(cpu, 2),
                     json.dumps(dict(t.invalid), sort_keys=True)])
        findings += t.findings
        for name in ("mutants", "valid", "unreachable", "oracle_checked", "searched"):
            setattr(total, name, getattr(total, name) + getattr(t, name))
        total.invalid.update(t.invalid)
    print(f"{'total':<30}{total.mutants:>8}{total.valid:>7}{total.unreachable:>8}"
          f"{sum(total.invalid.values()):>8}{total.oracle_checked:>7}{total.searched:>7}"
          f"{len(findings):>9}{sum(1 for f in findings if not f.bug):>8}"
          f"  (wall {time.perf_counter() - wall:.0f} s, load {os.getloadavg()[0]:.1f})")
    by_bug: dict[str, list] = defaultdict(list)
    for f in findings:
        by_bug[f.bug or "NEW: not a known bug"].append(f)
    print("\ndisagreements with the oracle, by checker bug:")
    for bug, group in sorted(by_bug.items()):
        where = Counter(f"{f.kind} / {f.operator}" for f in group)
        print(f"* {bug}: {len(group)} — " + "; ".join(f"{k} ×{n}" for k, n in where.items()))
        print(f"    e.g. checker: {group[0].verdict[:200]}")
        print(f"         oracle:  {group[0].oracle[:300]}")
    if not findings:
        print("  none")
    if args.save:
        out = Path(args.save)
        out.mkdir(parents=True, exist_ok=True)
        for n, f in enumerate(findings):
            name = f"{n:03d}-{f.kind}-{f.operator}".replace(" ", "_").replace(":", "")
            (out / f"{name}.json").write_text(json.dumps(f.document) + "\n")
        print(f"\n{len(findings)} documents written to {out}")
    path = write_csv("oracle_campaign" + ("_slow" if args.slow else ""),
                     ["kind", "mutants", "valid", "unreachable", "invalid", "oracle_checks",
                      "searches", "disagreements", "unknown", "cpu_s", "rules"], rows)
    print(f"written: {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
