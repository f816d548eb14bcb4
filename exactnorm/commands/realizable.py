"""``exactnorm realizable``: which targets a narrow frozen pair can reach (Theorem 7;
docs/model.md, symbolic certificates).

With width ``m`` below ``d_in·d_out`` the map ``γ ↦ V_out diag(γ) V_in`` is not onto. A target
``W`` is reachable iff ``rank K = rank [K | vec W]`` (Rouché–Capelli), and the reachable targets
form a linear subspace of dimension ``rank K``. The frozen pair is drawn exactly as Theorem 1
draws layer 1 (``draw_pair(seed, 1, 0, …)``). ``W`` is the first layer of ``--target``, or a
seeded ``int:8`` matrix (``layer_rng(seed, 0)``), or with ``--w reachable`` the reachable
``V_out diag(γ) V_in`` for a seeded γ. The decision is printed either way; the exit code carries
it for scripts: 0 reachable, 1 not reachable, 2 bad input.
The mathematics is :func:`exactnorm.api.realizable`; this module parses and prints.
"""

from __future__ import annotations

import argparse

from rich.table import Table

from exactnorm.commands._common import console
from exactnorm.commands._defaults import DEFAULT_DISTRIBUTION
from exactnorm.commands._json import add_json_option, emit

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("realizable",
                       help="decide exactly whether a target W is reachable at width m "
                            "(exit 0 reachable, 1 not reachable, 2 input error)")
    p.add_argument("--d-in", type=int, default=None, help="input width (default: from --target)")
    p.add_argument("--d-out", type=int, default=None, help="output width (default: from --target)")
    p.add_argument("--width", type=int, required=True, metavar="M", help="frozen width m")
    p.add_argument("--seed", type=int, default=0, help="seed of the frozen weights (default 0)")
    p.add_argument("--distribution", default=DEFAULT_DISTRIBUTION,
                   help=f"frozen weight entries (default {DEFAULT_DISTRIBUTION})")
    p.add_argument("--target", default=None, metavar="FILE",
                   help="target network file; its layer --layer gives W")
    p.add_argument("--layer", type=int, default=1, help="target layer used as W (default 1)")
    p.add_argument("--w", choices=["random", "reachable"], default="random",
                   help="without --target: a random W, or one reachable by construction")
    add_json_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import realizable

    study = realizable(args.width, d_in=args.d_in, d_out=args.d_out, seed=args.seed,
                       distribution=args.distribution, target=args.target, layer=args.layer,
                       w=args.w)
    r = study.decision
    d_in, d_out, n = r.d_in, r.d_out, r.d_in * r.d_out
    verdict = "REACHABLE" if r.reachable else "NOT REACHABLE"
    console.print(f"{verdict}: W ({d_out}×{d_in}) at width m={args.width}: rank K = {r.rank_K}, "
                  f"rank [K | vec W] = {r.rank_augmented}; reachable set has dimension "
                  f"{r.dimension} of {n} (codimension {r.codimension})")
    if r.reachable:
        console.print("witness: γ with K γ = vec W exactly "
                      f"({sum(1 for g in r.gamma or () if g)} nonzero entries)")
    else:
        console.print("witness: y with yᵀK = 0 and yᵀ vec W ≠ 0 "
                      f"({sum(1 for y in r.separator or () if y)} nonzero entries)")
    t = Table(title=f"reachable dimension vs width, d_in={d_in}, d_out={d_out}, "
                    f"seed {args.seed}, {study.distribution}")
    for col in ("m", "rank K = dim reachable", "min(m, d_in·d_out)", "this W reachable"):
        t.add_column(col, justify="right")
    for m, rank, reachable in study.profile:
        t.add_row(str(m), str(rank), str(min(m, n)), "yes" if reachable else "no")
    console.print(t)
    code = 0 if r.reachable else 1
    return emit(args, "REACHABLE" if r.reachable else "UNREACHABLE", code,
                f"{verdict}: W ({d_out}×{d_in}) at width m={args.width}",
                paths={"target": args.target},
                details={"d_in": d_in, "d_out": d_out, "width": args.width,
                         "rank_K": r.rank_K, "rank_augmented": r.rank_augmented,
                         "dimension": r.dimension, "codimension": r.codimension,
                         "profile": [[m, rank, bool(reachable)]
                                     for m, rank, reachable in study.profile]})
