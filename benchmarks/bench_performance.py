"""exactnorm performance, measured side by side in one run; every ratio printed with its target.

Sections (run all, or name some):

  overhead  Γ for one layer: exactnorm pipeline vs one raw ``fmpz_mat.solve`` (target ≤ 1.15×)
  ratio     certify + check of one Theorem-1 layer (d = 24, 32) vs one raw solve of the same
            system, CPU time side by side (target ≤ 0.85)
  sympy     exactnorm vs SymPy LUsolve / DomainMatrix(QQ), pure-Python ground types
            (target ≥ 500× DomainMatrix at m = 100)
  checker   checker time / construction time (flint target ≤ 0.25 at d ≥ 16); pure checker
            ≤ 30 s at d = 32 and ≤ 10× the flint checker
  jobs      multi-layer certify, jobs=2 vs jobs=1 (target ≥ 1.6× on 2 cores)
  float     float64 solve + float construction vs exact: errors, first failing d
  memory    peak memory of certify at d = 32 and 48 (subprocess, ru_maxrss)
  entries   entry distribution vs solve time, Γ bits, singular-draw rate (Schwartz–Zippel bound)

Usage: ``python benchmarks/bench_performance.py [section ...] [--quick]``.
CSV files go to ``benchmarks/results/`` with a machine description line.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_of, machine, say, verdict, write_csv  # noqa: E402
from flint import fmpq_mat, fmpz_mat  # noqa: E402

from exactnorm.api import certificate_document, check  # noqa: E402
from exactnorm.constructions.theorem1 import (  # noqa: E402
    certify_theorem1,
    draw_pair,
    realize_layer_theorem1,
)
from exactnorm.exact.linalg import clear_denominators, khatri_rao_system, vec  # noqa: E402
from exactnorm.exact.sampling import parse_distribution  # noqa: E402
from exactnorm.model.targets import random_target  # noqa: E402
from exactnorm.outputs.tables.exact_vs_float import float_construction_errors  # noqa: E402

SEED = 0


def _layer(d: int, seed: int = SEED):
    g = random_target((d, d), seed=seed, activations=["identity"])
    return g, g.layers[0], g.interval_boxes()[0]


def _system(d: int, dist: str = "int:8", seed: int = SEED):
    """The Khatri–Rao system of target layer 1 exactly as the pipeline draws it."""
    g, tl, _ = _layer(d, seed)
    V_in, V_out = draw_pair(seed, 1, 0, d, d, d * d, parse_distribution(dist))
    K = khatri_rao_system(V_in, V_out)
    rz, _ = clear_denominators(vec(tl.weight, "F"))
    return K, rz


def _realize(tl, box, **options):
    """A zero-argument call of realize_layer_theorem1 for target layer 1 (for best_of)."""
    return functools.partial(realize_layer_theorem1, tl.weight, tl.bias, tl.activation, box,
                             seed=SEED, layer=1, input_node=0, **options)


# ------------------------------------------------------------------ 1. overhead

def bench_overhead(quick: bool) -> None:
    say("\n== 1. Γ for one layer: pipeline vs one raw fmpz_mat.solve (target ≤ 1.15×) ==")
    rows = []
    for d in ((16, 24) if quick else (16, 24, 32)):
        _, tl, box = _layer(d)
        K, rz = _system(d)
        rep = 2 if d >= 32 else 3
        raw, _ = best_of(lambda K=K, rz=rz: K.solve(rz), rep)
        auto, _ = best_of(_realize(tl, box), rep)
        flint, _ = best_of(_realize(tl, box, solver="flint"), rep)
        r_auto, r_flint = auto / raw, flint / raw
        say(f"d={d:3d} m={d*d:5d}: raw solve {raw:7.3f} s | pipeline (auto = p-adic) {auto:7.3f} s "
            f"ratio {r_auto:5.2f} ({verdict(r_auto, 1.15, False)}) | pipeline with "
            f"solver=flint {flint:7.3f} s ratio {r_flint:5.2f} ({verdict(r_flint, 1.15, False)})")
        rows.append([d, d * d, f"{raw:.4f}", f"{auto:.4f}", f"{r_auto:.3f}", f"{flint:.4f}",
                     f"{r_flint:.3f}", 1.15])
    write_csv("overhead", ["d", "m", "raw_fmpz_solve_s", "pipeline_auto_s", "ratio_auto",
                           "pipeline_flint_s", "ratio_flint", "target_ratio_max"], rows)


# ------------------------------------------------------------------ 1b. certify + check

def _cpu_best(fn, repeat: int) -> tuple[float, float]:
    """Smallest CPU time and smallest wall time of ``repeat`` runs (this process)."""
    cpu, wall = float("inf"), float("inf")
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu, wall = min(cpu, time.process_time() - c), min(wall, time.perf_counter() - w)
    return cpu, wall


def bench_ratio(quick: bool) -> None:
    """certify + check of one Theorem-1 layer against one raw FLINT solve of the same system.

    The certify side is what ``exactnorm certify --construction theorem1`` does after reading
    the target: the plan (seed derived from the target), the construction, the certificate's
    bytes and the flint check of those bytes. Each side is timed ``repeat`` times, alternated,
    in one process; the smallest CPU time of each is compared (target ≤ 0.85)."""
    from exactnorm import api, checker_flint
    from exactnorm.certificate import certificate_bytes

    say("\n== 1b. certify + check vs one raw fmpz_mat.solve (target ≤ 0.85) ==")
    rows = []
    for d in ((16, 24) if quick else (24, 32)):
        g, _, _ = _layer(d)
        K, rz = _system(d, "nonzero:8")
        parts: dict[str, float] = {}

        def certify_and_check(g=g, parts=parts) -> None:
            marks = [time.process_time()]
            plan = api.plan_certify(g, "theorem1", jobs=1)
            c = api.certify_target(g, plan)
            marks.append(time.process_time())
            data = certificate_bytes(certificate_document(c))
            marks.append(time.process_time())
            verdict = checker_flint.check_certificate_text(data)
            marks.append(time.process_time())
            assert verdict.ok, verdict.message
            for name, a, b in zip(("certify", "write", "check"), marks, marks[1:]):
                parts[name] = min(parts.get(name, float("inf")), b - a)

        raw = [float("inf"), float("inf")]
        ours = [float("inf"), float("inf")]
        for _ in range(3 if d >= 32 else 5):  # alternated: the same load on both sides
            r = _cpu_best(lambda K=K, rz=rz: K.solve(rz), 1)
            o = _cpu_best(certify_and_check, 1)
            raw = [min(raw[0], r[0]), min(raw[1], r[1])]
            ours = [min(ours[0], o[0]), min(ours[1], o[1])]
        ratio, ratio_wall = ours[0] / raw[0], ours[1] / raw[1]
        say(f"d={d:3d} m={d*d:5d}: raw solve {raw[0]:6.2f} s CPU | certify {parts['certify']:.2f}"
            f" + write {parts['write']:.2f} + check {parts['check']:.2f} = {ours[0]:6.2f} s CPU |"
            f" ratio {ratio:.2f} ({verdict(ratio, 0.85, False)} 0.85; wall {ratio_wall:.2f}) "
            f"| load {os.getloadavg()[0]:.1f}")
        rows.append([d, d * d, f"{raw[0]:.3f}", f"{parts['certify']:.3f}",
                     f"{parts['write']:.3f}", f"{parts['check']:.3f}", f"{ours[0]:.3f}",
                     f"{ratio:.3f}", f"{ratio_wall:.3f}", 0.85])
    write_csv("certify_check_ratio", ["d", "m", "raw_solve_cpu_s", "certify_cpu_s",
                                      "write_cpu_s", "check_cpu_s", "total_cpu_s", "ratio_cpu",
                                      "ratio_wall", "target_ratio_max"], rows)


# ------------------------------------------------------------------ 2. SymPy

_SYMPY_CHILD = textwrap.dedent("""
    import json, sys, time
    from sympy import Matrix, Rational, QQ
    from sympy.polys.matrices import DomainMatrix
    from sympy.external.gmpy import GROUND_TYPES
    data = json.load(sys.stdin)
    K, b, which = data["K"], data["b"], data["which"]
    out = {"ground_types": GROUND_TYPES}
    if which == "domainmatrix":
        t = time.perf_counter()
        A = DomainMatrix([[QQ(x) for x in row] for row in K], (len(K), len(K)), QQ)
        B = DomainMatrix([[QQ(x)] for x in b], (len(K), 1), QQ)
        x = A.lu_solve(B)
        out["seconds"] = time.perf_counter() - t
        out["x0"] = str(x.to_Matrix()[0])
    else:
        t = time.perf_counter()
        x = Matrix(K).LUsolve(Matrix(b))
        out["seconds"] = time.perf_counter() - t
        out["x0"] = str(x[0])
    print(json.dumps(out))
""")


def _sympy_time(K: fmpz_mat, rz: fmpz_mat, which: str, timeout: float) -> tuple[float, str, str]:
    payload = json.dumps({"K": [[int(x) for x in row] for row in K.tolist()],
                          "b": [int(x) for x in rz.entries()], "which": which})
    env = dict(os.environ, SYMPY_GROUND_TYPES="python")
    try:
        res = subprocess.run([sys.executable, "-c", _SYMPY_CHILD], input=payload, text=True,
                             capture_output=True, env=env, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return float("inf"), "timeout", ""
    out = json.loads(res.stdout)
    return out["seconds"], out["ground_types"], out["x0"]


def bench_sympy(quick: bool) -> None:
    say("\n== 2. exactnorm vs SymPy (pure-Python ground types, subprocess), same system ==")
    rows = []
    for d in ((4, 6, 8) if quick else (4, 6, 8, 10)):
        m = d * d
        _, tl, box = _layer(d)
        K, rz = _system(d)
        ours, _ = best_of(_realize(tl, box), 5)
        x0 = str(fmpq_mat(K).solve(fmpq_mat(rz))[0, 0])
        raw, _ = best_of(lambda K=K, rz=rz: K.solve(rz), 5)
        dm, gt, dm_x0 = _sympy_time(K, rz, "domainmatrix", 600)
        lu, _, lu_x0 = _sympy_time(K, rz, "lusolve", 600)
        agree = (dm_x0 in (x0, "")) and (lu_x0 in (x0, ""))
        r_dm, r_lu = dm / ours, lu / ours
        target = " (target ≥ 500: " + verdict(r_dm, 500, True) + ")" if m == 100 else ""
        say(f"m={m:4d}: exactnorm pipeline {ours*1e3:8.2f} ms (solve alone {raw*1e3:6.2f} ms) | "
            f"SymPy DomainMatrix(QQ) {dm:8.3f} s = {r_dm:6.0f}× pipeline{target}, "
            f"{dm / raw:6.0f}× solve | SymPy Matrix.LUsolve {lu:8.3f} s = {r_lu:6.0f}× pipeline | "
            f"ground types {gt} | same x[0]: {agree}")
        rows.append([m, f"{ours:.5f}", f"{raw:.5f}", f"{dm:.4f}", f"{r_dm:.0f}", f"{dm / raw:.0f}",
                     f"{lu:.4f}", f"{r_lu:.0f}", gt, agree])
    write_csv("sympy", ["m", "exactnorm_pipeline_s", "exactnorm_solve_s", "sympy_domainmatrix_s",
                        "ratio_domainmatrix_pipeline", "ratio_domainmatrix_solve",
                        "sympy_lusolve_s", "ratio_lusolve_pipeline", "sympy_ground_types",
                        "same_solution"], rows)


# ------------------------------------------------------------------ 3. checker

def bench_checker(quick: bool) -> None:
    say("\n== 3. checker time / construction time (flint target ≤ 0.25 at d ≥ 16); "
        "pure checker ≤ 30 s at d = 32 and ≤ 10× flint ==")
    rows = []
    for d in ((8, 16) if quick else (8, 16, 24, 32)):
        g = random_target((d, d), seed=SEED, activations=["identity"])
        build, c = best_of(lambda g=g: certify_theorem1(g, seed=SEED), 2)
        doc = certificate_document(c)
        fast, v = best_of(lambda doc=doc: check(doc), 2)
        assert v.ok, v.message
        pure, vp = best_of(lambda doc=doc: check(doc, pure=True), 1)
        assert vp == v
        r, pf = fast / build, pure / fast
        tgt = f" ({verdict(r, 0.25, False)})" if d >= 16 else ""
        pure_tgt = f" ({verdict(pure, 30.0, False)} 30 s)" if d == 32 else ""
        say(f"d={d:3d}: construction {build:7.3f} s | flint checker {fast:7.3f} s = {r:5.3f}{tgt}"
            f" | pure checker {pure:8.3f} s{pure_tgt} = {pf:5.2f}× flint "
            f"({verdict(pf, 10.0, False)} 10×)")
        rows.append([d, f"{build:.4f}", f"{fast:.4f}", f"{r:.3f}", f"{pure:.4f}",
                     f"{pure / build:.3f}", f"{pf:.3f}", 0.25, 10.0])
    write_csv("checker", ["d", "construction_s", "flint_check_s", "flint_ratio", "pure_check_s",
                          "pure_ratio", "pure_over_flint", "target_flint_ratio_max",
                          "target_pure_over_flint_max"], rows)


# ------------------------------------------------------------------ 4. jobs

def bench_jobs(quick: bool) -> None:
    from exactnorm.certificate import certificate_bytes

    say("\n== 4. multi-layer certify: jobs=2 vs jobs=1 (target ≥ 1.6×) ==")
    say("   (L equal layers on 2 processes cannot beat L/ceil(L/2): 1.5× for 3 layers, 2× for 4)")
    rows = []
    w = 16 if quick else 24
    for widths in ((w,) * 4, (w,) * 5):
        g = random_target(widths, seed=SEED)
        t1, c1 = best_of(lambda g=g: certify_theorem1(g, seed=SEED, jobs=1), 2)
        t2, c2 = best_of(lambda g=g: certify_theorem1(g, seed=SEED, jobs=2), 2)
        same = (certificate_bytes(certificate_document(c1))
                == certificate_bytes(certificate_document(c2)))
        layers = len(widths) - 1
        bound = layers / math.ceil(layers / 2)
        r = t1 / t2
        say(f"{layers} layers of {w}×{w}: jobs=1 {t1:.3f} s | jobs=2 {t2:.3f} s | speed-up "
            f"{r:.2f}× ({verdict(r, 1.6, True)}; ideal {bound:.2f}×) | byte-identical: {same}")
        rows.append([f"{layers} layers {w}x{w}", f"{t1:.4f}", f"{t2:.4f}", f"{r:.3f}",
                     f"{bound:.2f}", same, 1.6])
    d = 16 if quick else 48
    g1 = random_target((d, d), seed=SEED, activations=["identity"])
    s1, a = best_of(lambda: certify_theorem1(g1, seed=SEED, jobs=1), 1)
    s2, b = best_of(lambda: certify_theorem1(g1, seed=SEED, jobs=2), 1)
    same1 = certificate_bytes(certificate_document(a)) == certificate_bytes(certificate_document(b))
    say(f"1 layer d={d}: jobs=1 {s1:.3f} s | jobs=2 {s2:.3f} s (p-adic lifting over two primes) "
        f"| speed-up {s1 / s2:.2f}× (no target: the O(m³) modular inverse runs in both) | "
        f"identical: {same1}")
    rows.append([f"1 layer d={d}", f"{s1:.4f}", f"{s2:.4f}", f"{s1 / s2:.3f}", "", same1, ""])
    write_csv("jobs", ["case", "jobs1_s", "jobs2_s", "speedup", "ideal", "identical",
                       "target_min"], rows)


# ------------------------------------------------------------------ 5. float64

def bench_float(quick: bool) -> None:
    say("\n== 5. float64 (numpy solve + float construction) vs exact ==")
    rows, first_bad = [], None
    for d in ((2, 4, 8, 12, 16) if quick else (2, 3, 4, 6, 8, 12, 16, 20, 24, 32)):
        r = float_construction_errors(d)
        bad = r["f_minus_g"] > 1e-6 or r["wrong_pattern_neurons"] > 0
        if bad and first_bad is None:
            first_bad = d
        say(f"d={d:3d}: cond(K) {r['cond']:9.2e} | max|Γf−Γ| {r['gamma_abs_err']:9.2e} "
            f"(rel {r['gamma_rel_err']:8.1e}) | max|f−g| {r['f_minus_g']:9.2e} | neurons with "
            f"wrong ReLU pattern {r['wrong_pattern_neurons']:4d} | exact Γ bits "
            f"{r['gamma_bits']}{'  <- fails' if bad else ''}")
        rows.append([r[k] for k in ("d", "m", "cond", "gamma_abs_err", "gamma_rel_err",
                                    "f_minus_g", "wrong_pattern_neurons", "gamma_bits")])
    say(f"smallest d with |f−g| > 1e-6 or a wrong activation pattern: {first_bad}")
    write_csv("float_vs_exact", ["d", "m", "cond_K", "gamma_abs_err", "gamma_rel_err",
                                 "max_f_minus_g", "wrong_pattern_neurons", "exact_gamma_bits"],
              rows)


# ------------------------------------------------------------------ 6. memory

_MEM_CHILD = textwrap.dedent("""
    import resource, sys, time
    from exactnorm.model.targets import random_target
    from exactnorm.constructions.theorem1 import certify_theorem1
    from exactnorm.certificate import certificate_document
    from exactnorm.api import check
    d, jobs = int(sys.argv[1]), int(sys.argv[2])
    g = random_target((d, d), seed=0, activations=["identity"])
    t = time.perf_counter(); c = certify_theorem1(g, seed=0, jobs=jobs)
    t1 = time.perf_counter() - t
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    doc = certificate_document(c)
    t = time.perf_counter(); v = check(doc); t2 = time.perf_counter() - t
    rss2 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"{t1:.2f} {t2:.2f} {rss1 / 1024:.0f} {rss2 / 1024:.0f} {kids / 1024:.0f} {v.ok}")
""")


def bench_memory(quick: bool) -> None:
    say("\n== 6. peak memory (ru_maxrss of a fresh process; worker processes separately) ==")
    rows = []
    for d in ((16, 32) if quick else (32, 48)):
        out = subprocess.run([sys.executable, "-c", _MEM_CHILD, str(d), "1"], text=True,
                             capture_output=True, check=True).stdout.split()
        t1, t2, rss1, rss2, kids, ok = out
        say(f"d={d:3d} (m={d*d}): certify {t1} s, peak {rss1} MiB | + flint check {t2} s, "
            f"peak {rss2} MiB | valid {ok}")
        rows.append([d, d * d, t1, rss1, t2, rss2, ok])
    write_csv("memory", ["d", "m", "certify_s", "peak_after_certify_mib", "check_s",
                         "peak_after_check_mib", "valid"], rows)


# ------------------------------------------------------------------ 7. entry distributions

DISTRIBUTIONS = ("set:-1,1", "nonzero:1", "int:1", "int:2", "nonzero:8", "int:8", "int:64",
                 "bits:16", "bits:30")


def singular_rate(dist: str, d_in: int, d_out: int, draws: int) -> float:
    """Fraction of draws (seeds 0..draws-1, layer 1, attempt 0) with a singular K (exact rank)."""
    dd = parse_distribution(dist)
    m = d_in * d_out
    bad = 0
    for s in range(draws):
        V_in, V_out = draw_pair(s, 1, 0, d_in, d_out, m, dd)
        bad += khatri_rao_system(V_in, V_out).rank() < m
    return bad / draws


def schwartz_zippel(dist: str, m: int) -> str:
    size = parse_distribution(dist).support_size
    bound = 2 * m / size
    return f"{bound:.3g}" + (" (vacuous)" if bound >= 1 else "")


def bench_entries(quick: bool) -> None:
    sizes = (16,) if quick else (16, 24)
    draws = 100 if quick else 300
    say(f"\n== 7. entry distribution: solve time, Γ bits, singular-draw rate ({draws} draws) ==")
    rows = []
    for dist in DISTRIBUTIONS:
        rates = {(3, 4): singular_rate(dist, 3, 4, draws), (4, 4): singular_rate(dist, 4, 4, draws)}
        line = [dist, f"{rates[(3, 4)]:.3f}", schwartz_zippel(dist, 12), f"{rates[(4, 4)]:.3f}",
                schwartz_zippel(dist, 16)]
        msg = (f"{dist:10s} singular 3×4 {rates[(3, 4)]:6.3f} (SZ ≤ {schwartz_zippel(dist, 12)}) "
               f"4×4 {rates[(4, 4)]:6.3f} (SZ ≤ {schwartz_zippel(dist, 16)})")
        for d in sizes:
            g, tl, box = _layer(d)
            try:
                K, rz = _system(d, dist)
                raw, _ = best_of(lambda K=K, rz=rz: K.solve(rz), 1)
                t, (_, rep) = best_of(_realize(tl, box, distribution=dist, retry=5), 1)
                line += [f"{raw:.4f}", f"{t:.4f}", rep.gamma_bits, rep.attempts]
                msg += f" | d={d}: raw solve {raw:7.3f} s, pipeline {t:7.3f} s, Γ bits " \
                       f"{rep.gamma_bits:6d}, draws {rep.attempts}"
            except ZeroDivisionError:
                line += ["singular", "", "", ""]
                msg += f" | d={d}: draw singular"
        say(msg)
        rows.append(line)
    cols = ["distribution", "singular_rate_3x4", "sz_bound_3x4", "singular_rate_4x4",
            "sz_bound_4x4"]
    for d in sizes:
        cols += [f"raw_solve_s_d{d}", f"pipeline_s_d{d}", f"gamma_bits_d{d}", f"draws_d{d}"]
    write_csv("entries", cols, rows)


SECTIONS = {"overhead": bench_overhead, "ratio": bench_ratio, "sympy": bench_sympy,
            "checker": bench_checker,
            "jobs": bench_jobs, "float": bench_float, "memory": bench_memory,
            "entries": bench_entries}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sections", nargs="*", choices=[[], *SECTIONS], default=[])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    args = ap.parse_args()
    say("machine:", ", ".join(f"{k}={v}" for k, v in machine().items()))
    t0 = time.perf_counter()
    for name in args.sections or list(SECTIONS):
        SECTIONS[name](args.quick)
    say(f"\ntotal {time.perf_counter() - t0:.1f} s; CSV in benchmarks/results/")


if __name__ == "__main__":
    main()
