"""The exported rewritten transformers against their source models on every sequence of the task.

Not a test: for each trained model of ``benchmarks/train_transformers.py`` (committed in
``tests/model/data/``) it certifies the model (or reads ``--certificates DIR/<name>.json.gz``),
exports the rewritten transformer to ONNX in float64 and float32 and to exact JSON, and on every
sequence of modular addition (``a b =`` for all ``a, b < 23``: 529 sequences, 1587 positions)
compares the export under onnxruntime with the source model and with the float64 reference of
the original transformer: predictions equal (every position and the last one), the largest logit
error, the accuracy. Also the sizes, the export's wall and CPU time, and the latency of one
sequence through each model. Written to ``benchmarks/results/transformer_export.csv``; the load
average is in the CSV's header line (the machine may be shared).

    nice -n 10 python benchmarks/bench_transformer_export.py [--only NAME] [--certificates DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_rss_mb, say, write_csv  # noqa: E402

from exactnorm import api  # noqa: E402
from exactnorm.api._transformer_outputs import load_document  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "model" / "data"
MODELS = ("modadd_1l_preln", "modadd_2l_preln", "modadd_1l_postln")
P = 23


def timed(fn, *args, **kw):  # type: ignore[no-untyped-def]
    """``fn(*args, **kw)`` with its wall and CPU seconds."""
    w, c = time.perf_counter(), time.process_time()
    out = fn(*args, **kw)
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=MODELS, default=None)
    ap.add_argument("--certificates", default=None, metavar="DIR")
    args = ap.parse_args()
    tokens = np.array([[a, b, P] for a in range(P) for b in range(P)], dtype=np.int64)
    labels = (tokens[:, 0] + tokens[:, 1]) % P
    rows = []
    work = Path(tempfile.mkdtemp(prefix="exactnorm-bench-"))
    np.save(work / "tokens.npy", tokens)
    np.save(work / "labels.npy", labels)
    for name in [args.only] if args.only else MODELS:
        source = DATA / f"{name}.onnx"
        cert = Path(args.certificates) / f"{name}.json.gz" if args.certificates else None
        if cert is None or not cert.exists():
            cert = work / f"{name}.json.gz"
            say(f"{name}: certifying …")
            result = api.certify(str(source))
            api.save_certificate(result.document, cert)
        doc = load_document(cert)
        verdict, check_wall, check_cpu = timed(api.check, doc)
        assert verdict.ok, verdict.message
        for dtype in ("float64", "float32"):
            out = work / f"{name}.{dtype}.onnx"
            r, wall, cpu = timed(api.export, doc, out, format="onnx", dtype=dtype,
                                 source=source, data=work / "tokens.npy",
                                 labels=work / "labels.npy", check=False,
                                 allow_float32_error=True)
            d = r.verification["data"]
            e, s, a = d["export"], d["source"], d["agreement"]
            rows.append([name, dtype, r.bytes, r.verification["source_bytes"], round(wall, 2),
                         round(cpu, 2), d["positions"], a["equal"], a["equal_last"],
                         e["changed"], f"{e['max_abs']:.3g}", f"{e['max_rel']:.3g}",
                         f"{s['max_abs']:.3g}", f"{e['accuracy']:.4f}", f"{s['accuracy']:.4f}",
                         f"{r.verification['latency'] * 1e3:.3f}",
                         f"{r.verification['source_latency'] * 1e3:.3f}",
                         round(check_wall, 2), round(check_cpu, 2)])
            say(f"{name} {dtype}: {r.bytes:,} bytes (source {rows[-1][3]:,}), export {wall:.1f} s"
                f" wall {cpu:.1f} s CPU; equal predictions {a['equal']}/{d['positions']} "
                f"positions, {a['equal_last']}/{d['sequences']} last; max logit error "
                f"{e['max_abs']:.3g} (source {s['max_abs']:.3g}); accuracy {e['accuracy']:.2%} "
                f"(source {s['accuracy']:.2%}); latency {rows[-1][15]} ms (source "
                f"{rows[-1][16]} ms)")
        out = work / f"{name}.json"
        r, wall, cpu = timed(api.export, doc, out, format="json", check=False)
        rows.append([name, "json", r.bytes, "", round(wall, 2), round(cpu, 2)] + [""] * 13)
        say(f"{name} json (exact, read back): {r.bytes:,} bytes in {wall:.1f} s wall "
            f"{cpu:.1f} s CPU")
        for f in work.glob(f"{name}.*"):
            if f.suffix in (".onnx", ".json"):
                os.remove(f)
    path = write_csv("transformer_export", [
        "model", "format", "bytes", "source_bytes", "export_wall_s", "export_cpu_s",
        "positions", "equal_predictions", "equal_last", "changed_vs_reference",
        "max_abs_logit_error", "max_rel_logit_error", "source_max_abs_error", "accuracy",
        "source_accuracy", "latency_ms", "source_latency_ms", "check_wall_s", "check_cpu_s"],
        rows)
    say(f"peak RSS {peak_rss_mb():.0f} MiB; wrote {path}")


if __name__ == "__main__":
    main()
