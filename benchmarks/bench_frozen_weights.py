"""Certificate size and reading cost of frozen weights by reference vs explicit (version 2).

Why: ``certify --frozen-weights`` needs a default. By reference a random matrix is a draw record
of about 200 bytes; explicit, it is every entry *plus* the record (the checker regenerates the
draw in both modes and compares). This script writes both for a few trade-off and Theorem-1
certificates and measures: bytes (plain and gzip), the time of the standard-library regenerator
over every record (what the pure checker adds), and the time to parse the explicit entries into
Fractions (what an explicit certificate costs the pure checker on top of it).

Usage::

    python benchmarks/bench_frozen_weights.py [--quick]

Writes ``benchmarks/results/frozen_weights.csv``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import say, write_csv  # noqa: E402

from exactnorm import certificate  # noqa: E402
from exactnorm.checker import regenerate as rg  # noqa: E402
from exactnorm.constructions.theorem1 import certify_theorem1  # noqa: E402
from exactnorm.constructions.tradeoff import certify_tradeoff  # noqa: E402
from exactnorm.model.targets import random_target  # noqa: E402


def cases(quick: bool):
    yield "theorem1 16-16-4", certify_theorem1(
        random_target((16, 16, 4), seed=0, activations=["relu", "identity"]), seed=0)
    yield "tradeoff 64-16-4, k=4", certify_tradeoff(
        random_target((64, 16, 4), seed=0, activations=["relu", "identity"]), block=4, seed=0)
    if not quick:
        yield "tradeoff 196-32-10, k=4", certify_tradeoff(
            random_target((196, 32, 10), seed=0, activations=["relu", "identity"]), block=4,
            seed=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rows = []
    for name, c in cases(args.quick):
        entries = c.network.frozen_parameters
        out = [name, entries, c.network.depth]
        for mode in ("reference", "explicit"):
            data = certificate.certificate_bytes(
                certificate.certificate_document(c, version=2, frozen_weights=mode))
            out += [len(data), len(gzip.compress(data, compresslevel=6, mtime=0))]
        doc = json.loads(certificate.certificate_bytes(
            certificate.certificate_document(c, version=2, frozen_weights="explicit")))
        t0 = time.perf_counter()
        for layer in doc["network"]["layers"]:
            rg.regenerate(layer["source"])
        regen = time.perf_counter() - t0
        t0 = time.perf_counter()
        for layer in doc["network"]["layers"]:
            [[Fraction(x) for x in row] for row in layer["weight"]]
        parse = time.perf_counter() - t0
        out += [round(regen, 3), round(parse, 3)]
        say(f"{name}: {entries:,} frozen entries, depth {c.network.depth} | reference "
            f"{out[3]:,} B (gz {out[4]:,}) | explicit {out[5]:,} B (gz {out[6]:,}) | "
            f"regenerate all {regen:.3f} s | parse explicit {parse:.3f} s")
        rows.append(out)
    write_csv("frozen_weights", ["certificate", "frozen_entries", "depth", "reference_bytes",
                                 "reference_gz_bytes", "explicit_bytes", "explicit_gz_bytes",
                                 "regenerate_s", "parse_explicit_s"], rows)


if __name__ == "__main__":
    main()
