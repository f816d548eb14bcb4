"""``exactnorm realizable``: which targets a narrow frozen pair can reach (SPEC §4, Theorem 7).

With width ``m`` below ``d_in·d_out`` the map ``γ ↦ V_out diag(γ) V_in`` is not onto. A target
``W`` is reachable iff ``rank K = rank [K | vec W]`` (Rouché–Capelli), and the reachable targets
form a linear subspace of dimension ``rank K``. The frozen pair is drawn exactly as Theorem 1
draws layer 1 (``draw_pair(seed, 1, 0, …)``). ``W`` is the first layer of ``--target``, or a
seeded ``int:8`` matrix (``layer_rng(seed, 0)``), or with ``--w reachable`` the reachable
``V_out diag(γ) V_in`` for a seeded γ. The decision is printed either way; the exit code carries
it for scripts: 0 reachable, 1 not reachable, 2 bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from exactnorm.commands._common import console
from exactnorm.errors import InputError
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION

__all__ = ["register", "MAX_PRODUCT"]

#: refuse d_in·d_out beyond this (exact ranks of (d_in·d_out)×m systems, one per table row)
MAX_PRODUCT = 1024


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
    p.set_defaults(func=run)


def _target_weight(args: argparse.Namespace) -> Any:
    from exactnorm.model.interop import load_target_any

    g = load_target_any(args.target)
    if not 1 <= args.layer <= len(g.layers):
        raise InputError(f"--layer must lie in 1..{len(g.layers)}, got {args.layer}")
    return g.layers[args.layer - 1].weight


def run(args: argparse.Namespace) -> int:
    from exactnorm.analysis.symbolic import decide_realizable, reachable_target
    from exactnorm.constructions.theorem1 import draw_pair
    from exactnorm.exact.sampling import layer_rng, parse_distribution, sample_matrix

    if args.seed < 0:
        raise InputError("--seed must be non-negative")
    if args.width < 1:
        raise InputError("--width must be positive")
    W = _target_weight(args) if args.target is not None else None
    d_in, d_out = args.d_in, args.d_out
    if W is not None:
        if args.w != "random":
            raise InputError("--w applies only without --target")
        if (d_in or W.ncols()) != W.ncols() or (d_out or W.nrows()) != W.nrows():
            raise InputError(f"target layer {args.layer} is {W.nrows()}×{W.ncols()}, not "
                             f"{d_out}×{d_in} (d_out×d_in)")
        d_in, d_out = W.ncols(), W.nrows()
    if d_in is None or d_out is None:
        raise InputError("--d-in and --d-out are required without --target")
    if d_in < 1 or d_out < 1:
        raise InputError("--d-in and --d-out must be positive")
    if d_in * d_out > MAX_PRODUCT or args.width > MAX_PRODUCT:
        raise InputError(f"d_in·d_out and --width are limited to {MAX_PRODUCT}")
    dist = parse_distribution(args.distribution)
    V_in, V_out = draw_pair(args.seed, 1, 0, d_in, d_out, args.width, dist)
    if W is None and args.w == "random":
        W = sample_matrix(layer_rng(args.seed, 0), d_out, d_in, "int:8")
    elif W is None:
        gamma = [int(x) for x in sample_matrix(layer_rng(args.seed, 0), args.width, 1,
                                               "int:8").entries()]
        W = reachable_target(V_in, V_out, gamma)
    r = decide_realizable(V_in, V_out, W)
    n = d_in * d_out
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
                    f"seed {args.seed}, {dist.spec}")
    for col in ("m", "rank K = dim reachable", "min(m, d_in·d_out)", "this W reachable"):
        t.add_column(col, justify="right")
    for m in range(1, max(args.width, n) + 1):
        Vi, Vo = draw_pair(args.seed, 1, 0, d_in, d_out, m, dist)
        rm = decide_realizable(Vi, Vo, W) if m != args.width else r
        t.add_row(str(m), str(rm.rank_K), str(min(m, n)), "yes" if rm.reachable else "no")
    console.print(t)
    return 0 if r.reachable else 1
