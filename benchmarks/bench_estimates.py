"""The cost model against measurements: every estimate the plan prints before the work (time,
peak memory, certificate size) next to the measured value, on the benchmark corpus; and the fit
of the model's constants (``exactnorm/constructions/costs.py``, ``FITTED``).

Each case runs in a fresh process (``--one NAME``), exactly the steps of ``exactnorm certify``:
the plan (its estimate is the one the command prints), the construction, writing the
``.json.gz`` and the flint check of the written file; per phase the CPU time of the process and
its workers (``resource.getrusage``; on a shared machine the fairer measure) and the wall time,
the peak RSS of the process and of its largest worker, the file's bytes (and its uncompressed
bytes), the checker's work units and budget. Corpus cases run with the command line's default
options (``jobs`` auto); calibration cases with one process. A transformer of
``tests/model/data`` (token ids in) is what ``exactnorm certify model.onnx`` does with it: the
plan of every slot (the estimate it prints is all slots together), the slots built, one
document written and checked (docs/transformers.md).

Usage::

    python benchmarks/bench_estimates.py                 # the corpus: CSV + docs table
    python benchmarks/bench_estimates.py --only pipe-64-64-10 lenet  # other rows kept
    python benchmarks/bench_estimates.py --fit           # calibration cases, then print FITTED
    python benchmarks/bench_estimates.py --fit --corpus  # fit on calibration and corpus

The corpus table replaces the block between the ``bench_estimates`` markers of
``docs/performance.md`` (``--no-docs`` leaves it); with ``--only`` the other corpus rows are
kept as ``results/estimates.csv`` holds them, each with the 1-minute load it was measured at.
The measured rows of every run are kept in ``results/estimates_rows.tmp`` (the latest of each
case; ``--rows`` refits from them). Ratios are estimate / measured; the goal is every ratio
within [1/2, 2].
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _common import machine, say, write_csv  # noqa: E402

DOCS = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- bench_estimates:begin -->", "<!-- bench_estimates:end -->"
TRANSFORMERS = ROOT / "tests" / "model" / "data"
CACHE = Path(os.environ.get("EXACTNORM_BENCH_CACHE", Path(tempfile.gettempdir())
                            / "exactnorm-bench-models"))

# ------------------------------------------------------------------ targets


def _digits(side: int = 8) -> tuple[Any, Any]:
    if side == 8:
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return X / 16.0, y
    from mlp_models import digits_images

    return digits_images(side)


def pipeline_onnx(hidden: int, path: Path, *, scaler: bool = True, dtype: str = "float32"
                  ) -> Path:
    """``Pipeline(StandardScaler, MLPClassifier((hidden,)))`` on the 8×8 digits, exported by
    skl2onnx (float32 or float64), as a user would (the issue's model)."""
    if path.exists():
        return path
    import numpy as np
    import skl2onnx
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = _digits()
    steps: list[Any] = [("scale", StandardScaler())] if scaler else []
    steps.append(("mlp", MLPClassifier(hidden_layer_sizes=(hidden,), random_state=0,
                                       max_iter=300)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Pipeline(steps).fit(X, y)
    kind = np.float32 if dtype == "float32" else np.float64
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(skl2onnx.to_onnx(model, X[:1].astype(kind)).SerializeToString())
    return path


def mlp_npz(widths: tuple[int, ...], path: Path) -> Path:
    if not path.exists():
        from mlp_models import write_mlp_npz

        path.parent.mkdir(parents=True, exist_ok=True)
        write_mlp_npz(widths, path)
    return path


def _prepare(kind: str, arg: Any) -> None:
    """Train and write the model files of a case beforehand (in this process), so that the
    measured process only reads them, as ``exactnorm certify`` would."""
    if kind == "pipe":
        hidden, scaler, dtype = arg
        name = f"pipe-{hidden}-{'scaler' if scaler else 'plain'}-{dtype}.onnx"
        pipeline_onnx(hidden, CACHE / name, scaler=scaler, dtype=dtype)
    elif kind == "mlp":
        mlp_npz(arg, CACHE / f"mlp-{'-'.join(map(str, arg))}.npz")


def _load(kind: str, arg: Any) -> Any:
    from exactnorm import api

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "pipe":
            hidden, scaler, dtype = arg
            name = f"pipe-{hidden}-{'scaler' if scaler else 'plain'}-{dtype}.onnx"
            return api.load_target(pipeline_onnx(hidden, CACHE / name, scaler=scaler,
                                                 dtype=dtype), box="0:1")
        if kind == "mlp":
            widths = arg
            path = mlp_npz(widths, CACHE / f"mlp-{'-'.join(map(str, widths))}.npz")
            return api.load_target(path)
        if kind == "lenet":
            import numpy as np
            from cnn_models import ARCHITECTURE, INPUT_SHAPE

            from exactnorm.model.interop import target_from_state_dict

            params = dict(np.load(HERE / "lenet_digits.npz"))
            return target_from_state_dict(params, 0, 1, architecture=ARCHITECTURE,
                                          input_shape=INPUT_SHAPE)
        if kind == "resnet":
            return api.load_target(HERE / arg, box="0:1")
        if kind == "transformer":
            from exactnorm.model.interop.transformer import transformer_from_onnx

            return transformer_from_onnx(TRANSFORMERS / arg)
        if kind == "random":
            from exactnorm.model.targets import random_target

            widths, dist = arg
            return random_target(widths, seed=1, distribution=dist)
        if kind == "float":
            import numpy as np

            from exactnorm.model.network import TargetNetwork

            widths = arg
            rng = np.random.default_rng(0)
            Ws = [(rng.standard_normal((b, a)) / math.sqrt(a)).astype(np.float32)
                  for a, b in zip(widths, widths[1:])]
            bs = [(rng.standard_normal(b) / 10).astype(np.float32) for b in widths[1:]]
            from fractions import Fraction

            def exact(a: Any) -> Any:
                return [exact(x) for x in a] if isinstance(a, list) else Fraction(a)

            return TargetNetwork.from_lists(
                [exact(W.astype(float).tolist()) for W in Ws],
                [exact(b.astype(float).tolist()) for b in bs],
                ["relu"] * (len(Ws) - 1) + ["identity"], lower=[0] * widths[0],
                upper=[1] * widths[0])
        if kind == "conv":
            import numpy as np
            from flint import fmpq, fmpq_mat

            from exactnorm.model.layers import TargetLayer
            from exactnorm.model.network import TargetNetwork
            from exactnorm.model.operators import Conv, ConvGeometry

            channels, side = arg
            rng = np.random.default_rng(0)

            def kernel(rows: int, cols: int) -> Any:
                w = (rng.standard_normal((rows, cols)) / math.sqrt(cols)).astype(np.float32)
                return fmpq_mat(rows, cols, [fmpq(*float(x).as_integer_ratio())
                                             for x in w.ravel()])

            g1 = ConvGeometry((1, side, side), (3, 3), padding=(1, 1))
            g2 = ConvGeometry((channels, side, side), (3, 3), padding=(1, 1))
            zero = (fmpq(0),) * channels
            return TargetNetwork((TargetLayer(Conv(g1, kernel(channels, 9)), zero, "relu"),
                                  TargetLayer(Conv(g2, kernel(channels, 9 * channels)), zero,
                                              "identity")),
                                 (fmpq(0),) * side * side, (fmpq(1),) * side * side)
        if kind == "cnn":
            from tests.certificate.test_golden_certificates import cnn_wide_head, lenet_small

            return {"lenet_small": lenet_small, "cnn_wide_head": cnn_wide_head}[arg]()
    raise ValueError(kind)


#: name → (loader kind, argument, plan options); corpus cases use the CLI's defaults
CORPUS: dict[str, tuple[str, Any, dict[str, Any]]] = {
    "pipe-64-32-10": ("pipe", (32, True, "float32"), {}),
    "pipe-64-64-10": ("pipe", (64, True, "float32"), {}),
    "pipe-64-128-10": ("pipe", (128, True, "float32"), {}),
    "mlp-64-64-10-f64": ("pipe", (64, False, "float64"), {}),
    "mlp-196-64-10": ("mlp", (196, 64, 10), {}),
    "mlp-784-128-10": ("mlp", (784, 128, 10), {}),
    "lenet": ("lenet", None, {}),
    "resnet8": ("resnet", "resnet8_digits.onnx", {}),
    # the transformers of docs/transformers.md: every slot planned and built, one document
    **{stem: ("transformer", f"{stem}.onnx", {})
       for stem in ("tiny_preln", "modadd_1l_preln", "modadd_1l_postln", "modadd_2l_preln")},
}

_T1 = {"construction": "theorem1", "jobs": 1}
_ONE = {"jobs": 1}
#: calibration cases: one process, explicit constructions over the model's range
CALIBRATION: dict[str, tuple[str, Any, dict[str, Any]]] = {
    **{f"t1-{d}x{d}": ("random", ((d, d), "rational:4"), _T1) for d in (4, 8, 16, 24, 32)},
    "t1-40x40": ("random", ((40, 40), "rational:4"), _T1),
    "t1-f32-24x24": ("float", (24, 24), _T1),
    "t1-64x10": ("random", ((64, 10), "rational:4"), _T1),
    "t1-10x64": ("random", ((10, 64), "rational:4"), _T1),
    "t1-128x10": ("random", ((128, 10), "rational:4"), _T1),
    "t1-demo": ("random", ((3, 4, 3, 2), "rational:4"), _T1),
    "t1-3layers-16": ("float", (16, 16, 16, 16), _T1),
    "tr1-64-64-10": ("float", (64, 64, 10), {"construction": "tradeoff", "block": 1, "jobs": 1}),
    "tr2-64-64-10": ("float", (64, 64, 10), {"construction": "tradeoff", "block": 2, "jobs": 1}),
    "tr4-64-64-10": ("float", (64, 64, 10), {"construction": "tradeoff", "block": 4, "jobs": 1}),
    "tr8-64-32-10": ("float", (64, 32, 10), {"construction": "tradeoff", "block": 8, "jobs": 1}),
    "tr1-256-120-10": ("float", (256, 120, 10), {"construction": "tradeoff", "block": 1,
                                                "jobs": 1}),
    "tr1-demo": ("random", ((3, 4, 3, 2), "rational:4"), {"construction": "tradeoff",
                                                          "block": 1, "jobs": 1}),
    "cnn-lenet-small": ("cnn", "lenet_small", _ONE),
    "cnn-wide-head": ("cnn", "cnn_wide_head", {"jobs": 1, "max_system": 40}),
    "cnn-lenet-small-blocks": ("cnn", "lenet_small", {"jobs": 1, "block": 1}),
    "conv-plain-8-28": ("conv", (8, 28), {"jobs": 1, "block": 8}),
    "conv-blocks-8-28": ("conv", (8, 28), {"jobs": 1, "block": 1}),
    "conv-plain-16-14": ("conv", (16, 14), {"jobs": 1, "block": 16}),
    "conv-blocks-16-14": ("conv", (16, 14), {"jobs": 1, "block": 2}),
}

ALL = {**CORPUS, **CALIBRATION}


# ------------------------------------------------------------------ one case, in a fresh process

def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _peak() -> tuple[int, int]:
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)


def _certify_steps(kind: str) -> tuple[Any, Any, Any]:
    """``plan(target, **options)``, ``build(target, plan)`` and ``write(result, path)`` as
    ``exactnorm certify`` runs them: a transformer is planned and built slot by slot and
    written as one document (docs/transformers.md), any other target as one certificate."""
    if kind == "transformer":
        from exactnorm.api import certify_transformer, plan_transformer
        from exactnorm.certificate import save_certificate

        return (plan_transformer, lambda _target, plan: certify_transformer(plan),
                lambda result, path: save_certificate(result.document, path))
    from exactnorm import api
    from exactnorm.certificate import write_certificate

    return api.plan_certify, api.certify_target, write_certificate


def _gamma_bits(result: Any) -> int:
    """The largest γ's bits: from the construction's reports, or for a transformer from its
    document's slots (the largest numerator or common denominator of a layer's γ)."""
    if not hasattr(result, "document"):
        return max((r.gamma_bits for r in result.reports), default=0)
    from fractions import Fraction

    def bits(gamma: Any) -> int:
        if isinstance(gamma, dict):
            return max(abs(int(x)).bit_length() for x in [*gamma["num"], gamma["den"]])
        return max(max(abs(q.numerator).bit_length(), q.denominator.bit_length())
                   for q in map(Fraction, gamma))

    return max((bits(layer["gamma"]) for slot in result.document["slots"].values()
                for layer in slot["network"]["layers"]), default=0)


def run_one(name: str, folder: Path) -> dict[str, Any]:
    """The steps of ``exactnorm certify`` on case ``name``, timed per phase (module doc)."""
    from exactnorm import api
    from exactnorm.constructions.costs import footprint_dict

    kind, arg, options = ALL[name]
    plan_of, build, write = _certify_steps(kind)
    out: dict[str, Any] = {"case": name}
    c0, w0 = _cpu(), time.perf_counter()
    target = _load(kind, arg)
    out["load"] = [_cpu() - c0, time.perf_counter() - w0]
    c0, w0 = _cpu(), time.perf_counter()
    plan = plan_of(target, **options)
    out["plan"] = [_cpu() - c0, time.perf_counter() - w0]
    est = plan.estimate
    if kind == "transformer":
        jobs, construction, block = plan.jobs, "transformer", None
    else:
        jobs, construction = plan.options.get("jobs", 1), plan.construction
        block = plan.options.get("block")
    out.update(construction=construction, block=block, jobs=jobs, note=plan.summary)
    out["estimate"] = {"seconds": est.seconds, "wall": est.wall(jobs),
                       "build": est.build_seconds, "write": est.write_seconds,
                       "check": est.check_seconds, "peak": est.peak_bytes,
                       "gz": est.certificate_bytes, "json": est.json_bytes,
                       "gamma_bits": est.gamma_bits,
                       "units": est.checker.units if est.checker else None,
                       "budget": est.checker.budget if est.checker else None}
    fp = est.footprint
    out["features"] = fp.features if fp is not None else None
    out["footprint"] = footprint_dict(fp) if fp is not None else None
    c0, w0 = _cpu(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = build(target, plan)
    out["build"] = [_cpu() - c0, time.perf_counter() - w0]
    out["gamma_bits"] = _gamma_bits(c)
    path = folder / f"{name}.json.gz"
    c0, w0 = _cpu(), time.perf_counter()
    out["gz"] = write(c, path)
    out["write"] = [_cpu() - c0, time.perf_counter() - w0]
    del c
    with gzip.open(path, "rb") as fh:
        out["json"] = sum(len(chunk) for chunk in iter(lambda: fh.read(1 << 20), b""))
    c0, w0 = _cpu(), time.perf_counter()
    verdict = api.check_file(path)
    out["check"] = [_cpu() - c0, time.perf_counter() - w0]
    out["ok"] = verdict.ok
    out["message"] = verdict.message[:200]
    facts = verdict.facts or {}
    out["units"], out["budget"] = facts.get("work"), facts.get("work_budget")
    out["peak"], out["worker_peak"] = _peak()
    path.unlink()
    return out


def measure(name: str, folder: Path) -> dict[str, Any]:
    """:func:`run_one` in a fresh process (``nice`` 10)."""
    cmd = ["nice", "-n", "10", sys.executable, __file__, "--one", name, "--folder", str(folder)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if r.returncode:
        raise RuntimeError(f"{name}: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ the fit

PHASES = ("build", "write", "check", "peak", "gz", "json")


def measured_of(row: dict[str, Any], phase: str) -> float:
    if phase in ("build", "write", "check"):
        return float(row[phase][0])
    if phase == "peak":
        return float(max(row["peak"], row["worker_peak"]))
    return float(row[phase])


def fit(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Non-negative least squares on the relative errors, phase by phase."""
    import numpy as np
    from scipy.optimize import nnls

    out = {}
    for phase in PHASES:
        usable = [r for r in rows if r.get("features") and r["ok"]]
        names = list(usable[0]["features"][phase])
        A = np.array([[r["features"][phase][n] for n in names] for r in usable], dtype=float)
        y = np.array([measured_of(r, phase) for r in usable], dtype=float)
        w = 1.0 / np.maximum(y, 1e-3 if phase in ("build", "write", "check") else 1.0)
        scale = np.maximum(np.abs(A).max(axis=0), 1e-300)
        coef, _ = nnls(A / scale * w[:, None], y * w)
        out[phase] = {n: float(c / s) for n, c, s in zip(names, coef, scale)}
    return out


def print_fitted(coefs: dict[str, dict[str, float]], note: str) -> None:
    say("\nFITTED = Fitted(")
    for phase in PHASES:
        body = ", ".join(f'"{k}": {v:.3g}' for k, v in coefs[phase].items())
        say(f"    {phase}={{{body}}},")
    say(f'    measured="{note}",')
    say(")")


# ------------------------------------------------------------------ the table

#: the columns of results/estimates.csv: one record per corpus case
COLUMNS = ["case", "construction", "block", "jobs", "est_cpu_s", "cpu_s", "est_wall_s", "wall_s",
           "est_peak_bytes", "peak_bytes", "est_gz", "gz", "est_gamma_bits", "gamma_bits",
           "est_units", "units", "load_1min"]
CSV = HERE / "results" / "estimates.csv"
ROWS = HERE / "results" / "estimates_rows.tmp"


def record(r: dict[str, Any]) -> dict[str, Any]:
    """A measured row as the CSV keeps it (estimate and measurement side by side)."""
    e = r["estimate"]
    return {"case": r["case"], "construction": r["construction"], "block": r.get("block"),
            "jobs": r["jobs"], "est_cpu_s": f"{e['seconds']:.3f}",
            "cpu_s": f"{sum(r[p][0] for p in ('build', 'write', 'check')):.3f}",
            "est_wall_s": f"{e['wall']:.3f}",
            "wall_s": f"{sum(r[p][1] for p in ('build', 'write', 'check')):.3f}",
            "est_peak_bytes": e["peak"], "peak_bytes": max(r["peak"], r["worker_peak"]),
            "est_gz": e["gz"], "gz": r["gz"], "est_gamma_bits": e["gamma_bits"],
            "gamma_bits": r["gamma_bits"], "est_units": e["units"], "units": r["units"],
            "load_1min": r.get("load_1min")}


def stored_records() -> list[dict[str, Any]]:
    """The records of results/estimates.csv (none when it is missing)."""
    import csv

    if not CSV.exists():
        return []
    lines = [line for line in CSV.read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


def _num(v: Any) -> float:
    return float(v) if v not in (None, "") else float("nan")


def _ratio(est: float, meas: float) -> float:
    return est / meas if meas else float("inf")


def ratios(rec: dict[str, Any]) -> dict[str, float]:
    """Estimate / measured of CPU time, wall time, peak memory and gz bytes (NaN: no
    estimate)."""
    return {k: _ratio(_num(rec[f"est_{v}"]), _num(rec[v])) for k, v in
            (("cpu", "cpu_s"), ("wall", "wall_s"), ("peak", "peak_bytes"), ("gz", "gz"))}


def table(records: list[dict[str, Any]]) -> list[str]:
    head = ("| model | plan | est. CPU | measured CPU | ratio | est. wall | measured wall | ratio "
            "| est. peak | peak | ratio | est. gz | gz | ratio | load |")
    lines = [head, "|" + "---|" * 15]
    for r in records:
        q = ratios(r)
        plan = r["construction"] + (f" k={r['block']}" if r.get("block") else "") \
            + f", jobs {r['jobs']}"
        mib = 2**20
        lines.append(
            f"| {r['case']} | {plan} | {_num(r['est_cpu_s']):.1f} s | {_num(r['cpu_s']):.1f} s | "
            f"{q['cpu']:.2f} | {_num(r['est_wall_s']):.1f} s | {_num(r['wall_s']):.1f} s | "
            f"{q['wall']:.2f} | {_num(r['est_peak_bytes']) / mib:.0f} MiB | "
            f"{_num(r['peak_bytes']) / mib:.0f} MiB | {q['peak']:.2f} | "
            f"{_num(r['est_gz']) / mib:.2f} MiB | {_num(r['gz']) / mib:.2f} MiB | "
            f"{q['gz']:.2f} | {r.get('load_1min') or '—'} |")
    return lines


def update_docs(lines: list[str], header: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        say(f"docs/performance.md has no {BEGIN} … {END} block; table not written there")
        return
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOCS.write_text(text[:a] + "\n" + header + "\n\n" + "\n".join(lines) + "\n" + text[b:],
                    encoding="utf-8")


def stored_rows() -> dict[str, dict[str, Any]]:
    """The measured rows of earlier runs (JSON lines, one per case, the latest kept)."""
    if not ROWS.exists():
        return {}
    rows = [json.loads(line) for line in ROWS.read_text().splitlines() if line]
    return {r["case"]: r for r in rows}


def report(records: list[dict[str, Any]], *, docs: bool) -> None:
    """The corpus records: printed, written to results/estimates.csv and (``docs``) to the
    table of docs/performance.md."""
    lines = table(records)
    say("\n" + "\n".join(lines))

    def worst_of(keys: tuple[str, ...]) -> float:
        return max((max(v, 1 / v) for r in records for k, v in ratios(r).items()
                    if k in keys and v == v), default=1.0)

    worst, worst_wall = worst_of(("cpu", "peak", "gz")), worst_of(("wall",))
    m = machine()
    say(f"\nworst ratio of CPU time, peak and bytes (estimate/measured or its inverse): "
        f"{worst:.2f} (goal ≤ 2); of wall time: {worst_wall:.2f} (the estimate is for a quiet "
        f"machine; load {m['load_1min']})")
    write_csv("estimates", COLUMNS, [[r.get(c) for c in COLUMNS] for r in records])
    if docs:
        loads = sorted(_num(r["load_1min"]) for r in records if r.get("load_1min"))
        load = f"{loads[0]}–{loads[-1]}" if loads else str(m["load_1min"])
        unrecorded = ("; —: a row of an earlier run that did not record it"
                      if len(loads) < len(records) else "")
        header = (f"Measured by `python benchmarks/bench_estimates.py` on {m['cpu']}, "
                  f"{m['cores']} cores, with a 1-minute load of {load} from other work on the "
                  f"machine (each row's in its last column{unrecorded}): the wall times are "
                  f"inflated by it "
                  f"(the estimate is for a quiet machine), CPU times far less. Worst ratio of "
                  f"CPU time, peak memory and bytes: {worst:.2f}; of wall time: "
                  f"{worst_wall:.2f}.")
        update_docs(lines, header)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--only", nargs="*", default=None,
                    help="case names (the other corpus rows are kept as they are)")
    ap.add_argument("--fit", action="store_true", help="run the calibration cases and fit")
    ap.add_argument("--corpus", action="store_true", help="with --fit: fit on the corpus too")
    ap.add_argument("--no-docs", action="store_true", help="leave docs/performance.md")
    ap.add_argument("--rows", default=None, help="reuse measured rows (JSON lines) instead")
    args = ap.parse_args()
    if args.one:
        folder = Path(args.folder or tempfile.mkdtemp(prefix="exactnorm-est-"))
        print(json.dumps(run_one(args.one, folder)))
        return
    say("machine:", ", ".join(f"{k}={v}" for k, v in machine().items()))
    if args.only is not None:
        unknown = [n for n in args.only if n not in ALL]
        if unknown:
            ap.error(f"unknown case(s) {', '.join(unknown)}; cases: {', '.join(ALL)}")
        names = args.only
    elif args.fit:
        names = list(CALIBRATION) + (list(CORPUS) if args.corpus else [])
    else:
        names = list(CORPUS)
    folder = Path(tempfile.mkdtemp(prefix="exactnorm-est-"))
    rows: list[dict[str, Any]] = []
    if args.rows:
        rows = [json.loads(line) for line in Path(args.rows).read_text().splitlines() if line]
        rows = [r for r in rows if r["case"] in names]
    else:
        kept = stored_rows()  # the rows file keeps the latest row of every case measured
        for name in names:
            _prepare(*ALL[name][:2])
        for name in names:
            t = time.perf_counter()
            try:
                row = measure(name, folder)
            except RuntimeError as exc:
                say(f"{name}: FAILED {str(exc)[-600:]}")
                continue
            row["load_1min"] = round(os.getloadavg()[0], 2)
            rows.append(row)
            kept[name] = row
            ROWS.write_text("".join(json.dumps(r) + "\n" for r in kept.values()))
            q = ratios(record(row))
            say(f"{name:24s} {row['construction']:11s} ok={row['ok']} "
                f"cpu {sum(row[p][0] for p in ('build', 'write', 'check')):7.2f} s "
                f"(est {row['estimate']['seconds']:7.2f}) ratios cpu {q['cpu']:.2f} "
                f"wall {q['wall']:.2f} peak {q['peak']:.2f} gz {q['gz']:.2f} | "
                f"γ bits {row['gamma_bits']} (est {row['estimate']['gamma_bits']}) units "
                f"{row['units']} (est {row['estimate']['units']}) "
                f"[{time.perf_counter() - t:.0f} s, load {row['load_1min']}]")
    if args.rows:
        from exactnorm.constructions.costs import footprint_of

        for r in rows:  # the features of the current code, from the stored footprints
            if r.get("footprint"):
                r["features"] = footprint_of(r["footprint"]).features
    if args.fit:
        print_fitted(fit(rows), f"{time.strftime('%Y-%m-%d')}, {len(rows)} cases, "
                                f"load {machine()['load_1min']}")
        return
    # the corpus's records: this run's, and (with --only) every other case's as stored
    new = {r["case"]: record(r) for r in rows if r["case"] in CORPUS}
    old = {} if args.only is None else {r["case"]: r for r in stored_records()}
    records = [new.get(n) or old[n] for n in CORPUS if n in new or n in old]
    if not new:
        say("no corpus case measured: results/estimates.csv and the docs table left as they are")
        return
    report(records, docs=not args.no_docs)


if __name__ == "__main__":
    main()
