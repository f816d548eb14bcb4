"""Single-layer exact certification at d_in = d_out = 48 and 64, end to end, fresh process each.

certify (Theorem 1, ``jobs``) → certificate document → ``.json.gz`` → load → python-flint check.
Targets: 2 minutes at d = 48 (m = 2304) and 10 minutes at d = 64 (m = 4096) on 2 cores.

Usage: ``python benchmarks/bench_large.py [--sizes 48 64] [--jobs 2] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, say, verdict, write_csv  # noqa: E402

TARGET_SECONDS = {48: 120, 64: 600}

_CHILD = textwrap.dedent("""
    import json, os, resource, sys, time
    from exactnorm.model.targets import random_target
    from exactnorm.constructions.theorem1 import certify_theorem1
    from exactnorm.certificate import certificate_document, save_certificate, load_certificate
    from exactnorm import checker_flint
    d, jobs, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    sys.set_int_max_str_digits(0)  # Γ has thousands of digits
    g = random_target((d, d), seed=0, activations=["identity"])
    T = {}
    t0 = t = time.perf_counter()
    c = certify_theorem1(g, seed=0, jobs=jobs); T["certify"] = time.perf_counter() - t
    t = time.perf_counter(); doc = certificate_document(c); T["document"] = time.perf_counter() - t
    t = time.perf_counter(); size = save_certificate(doc, out); T["save"] = time.perf_counter() - t
    del doc, c
    t = time.perf_counter(); doc = load_certificate(out); T["load"] = time.perf_counter() - t
    t = time.perf_counter(); v = checker_flint.check_certificate(doc)
    T["check"] = time.perf_counter() - t
    T["total"] = time.perf_counter() - t0
    layer = doc["network"]["layers"][0]
    bits = max(max(int(p).bit_length() for p in str(x).lstrip("-").split("/"))
               for x in layer["gamma"])
    raw = os.path.getsize(out)
    print(json.dumps({"seconds": T, "valid": v.ok, "gz_bytes": raw, "gamma_bits": bits,
                      "peak_self_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "peak_children_mib":
                          resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
""")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[48, 64])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", default=None, help="directory to keep the certificates in")
    args = ap.parse_args()
    say("machine:", ", ".join(f"{k}={v}" for k, v in machine().items()))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        for d in args.sizes:
            out = where / f"theorem1_d{d}.json.gz"
            proc = subprocess.run([sys.executable, "-c", _CHILD, str(d), str(args.jobs), str(out)],
                                  text=True, capture_output=True)
            if proc.returncode:
                raise SystemExit(f"d={d} failed:\n{proc.stderr}")
            res = json.loads(proc.stdout)
            T = res["seconds"]
            target = TARGET_SECONDS.get(d)
            tgt = f" (target ≤ {target} s: {verdict(T['total'], target, False)})" if target else ""
            say(f"d={d} m={d * d} jobs={args.jobs}: total {T['total']:.1f} s{tgt} | certify "
                f"{T['certify']:.1f} s, document {T['document']:.1f} s, save .json.gz "
                f"{T['save']:.1f} s, load {T['load']:.1f} s, flint check {T['check']:.1f} s | "
                f"valid {res['valid']} | max γ bits {res['gamma_bits']} | certificate "
                f"{res['gz_bytes'] / 2**20:.1f} MiB gz | peak RSS {res['peak_self_mib']:.0f} MiB "
                f"(worker {res['peak_children_mib']:.0f} MiB)")
            rows.append([d, d * d, args.jobs, *(f"{T[k]:.2f}" for k in
                                               ("certify", "document", "save", "load", "check",
                                                "total")),
                         target, res["valid"], res["gamma_bits"], res["gz_bytes"],
                         f"{res['peak_self_mib']:.0f}", f"{res['peak_children_mib']:.0f}"])
    write_csv("large", ["d", "m", "jobs", "certify_s", "document_s", "save_gz_s", "load_s",
                        "check_s", "total_s", "target_s", "valid", "gamma_bits", "gz_bytes",
                        "peak_rss_mib", "peak_worker_rss_mib"], rows)


if __name__ == "__main__":
    main()
