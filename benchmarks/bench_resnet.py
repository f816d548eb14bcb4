"""ResNet-8 on 28×28 digits end to end: time, peak memory and bytes per phase.

Phases (one process, default options; the goal of issue 32 is ≤ 10 min, ≤ 4 GiB, ≤ 300 MB of
``.json.gz``, both arithmetics VALID):

1. read the target: ``benchmarks/resnet8_digits.onnx`` (BatchNorm folded by PyTorch's exporter)
   through exactnorm's ONNX reader when it reads residual graphs; otherwise the target is built
   here from the ONNX initializers (:func:`target_from_initializers`: every float32 weight as
   its exact dyadic rational, the wiring of ``benchmarks/train_resnet8.py``'s BasicBlocks);
2. certify (the plan's estimate is printed first; per target layer: construction, systems,
   sizes, exact ranks, bits, seconds);
3. write the certificate (``.json.gz``);
4. check with python-flint, then with the standard-library checker (``--no-pure`` skips it);
5. export to ONNX (float64) and compare with the original under onnxruntime on 300 digits.

``--compare-plain`` also solves the largest convolutions as one Theorem 1 system (the plain
construction, without blocks) and prints their sizes and times beside the blocks'; ``--side N``
runs a seeded random ResNet-8 of the same shape on an N×N image instead of the trained one
(quick runs); ``--channels 16,32,64`` uses ``resnet8_digits_16_32_64.onnx``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine, peak_rss_mb, write_csv  # noqa: E402

GOAL = {"seconds": 600, "gib": 4, "mb": 300}
#: ONNX initializer names of the trained model (benchmarks/train_resnet8.py) → resnet8's names
NAMES = {"stem": "stem.0", "b1c1": "layer1.conv1", "b1c2": "layer1.conv2",
         "b2c1": "layer2.conv1", "b2p": "layer2.shortcut.0", "b2c2": "layer2.conv2",
         "b3c1": "layer3.conv1", "b3p": "layer3.shortcut.0", "b3c2": "layer3.conv2"}


def _exact(a: np.ndarray) -> list[Any]:
    from flint import fmpq

    out = []
    for x in np.asarray(a, dtype=np.float64).ravel().tolist():
        f = Fraction(x)  # a float32 is a dyadic rational: exact
        out.append(fmpq(f.numerator, f.denominator))
    return out


def target_from_initializers(path: Path) -> Any:
    """The exact ResNet-8 target of a ``train_resnet8.py`` ONNX export, from its initializers
    (the hook until exactnorm's ONNX reader reads residual graphs)."""
    import onnx
    from flint import fmpq_mat
    from onnx import numpy_helper

    from exactnorm.outputs.tables.resnet import resnet8

    model = onnx.load(str(path))
    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    weights = {}
    for name, onnx_name in NAMES.items():
        W = init[f"{onnx_name}.weight"]
        b = init[f"{onnx_name}.weight_bias"]
        weights[name] = (fmpq_mat(W.shape[0], int(np.prod(W.shape[1:])), _exact(W)),
                         tuple(_exact(b)))
    fc = init["fc.weight"]
    weights["fc"] = (fmpq_mat(fc.shape[0], fc.shape[1], _exact(fc)), tuple(_exact(init["fc.bias"])))
    side = model.graph.input[0].type.tensor_type.shape.dim[2].dim_value
    widths = (init["stem.0.weight"].shape[0], init["layer2.conv1.weight"].shape[0],
              init["layer3.conv1.weight"].shape[0])
    return resnet8(side, widths, classes=fc.shape[0], weights=weights)


def read_target(path: Path) -> tuple[Any, str]:
    from exactnorm.api import load_target
    from exactnorm.errors import ExactnormError

    try:
        return load_target(str(path), box=(0, 1)), "exactnorm's ONNX reader"
    except (ExactnormError, TypeError) as exc:
        return target_from_initializers(path), f"initializers ({str(exc)[:60]}…)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--channels", default="8,16,32")
    ap.add_argument("--side", type=int, default=None, help="seeded random target, N×N image")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--keep", default=None, help="folder for the certificate and export")
    ap.add_argument("--no-pure", action="store_true", help="skip the standard-library check")
    ap.add_argument("--no-export", action="store_true", help="skip phase 5")
    ap.add_argument("--compare-plain", action="store_true",
                    help="also solve the blocked layers as one Theorem 1 system each")
    ap.add_argument("--plain-max", type=int, default=4608, metavar="M",
                    help="--compare-plain: largest one system solved (the cost model puts "
                         "m = 9216 at about 27 min and 16 GiB)")
    args = ap.parse_args()
    widths = tuple(int(v) for v in args.channels.split(","))

    from exactnorm.api import check_file, plan_certify
    from exactnorm.certificate import certificate_document, write_certificate
    from exactnorm.constructions.plan import certify_target
    from exactnorm.outputs.tables.resnet import resnet8

    folder = Path(args.keep or tempfile.mkdtemp(prefix="exactnorm-resnet-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    rows: list[list[Any]] = []

    def phase(name: str, t0: float, note: str = "") -> None:
        rows.append([name, round(time.perf_counter() - t0, 2), round(peak_rss_mb()), note])
        print(f"{name:<30} {rows[-1][1]:>8.2f} s  peak {rows[-1][2]:>6} MiB  {note}", flush=True)

    t0 = time.perf_counter()
    onnx_path = HERE / ("resnet8_digits.onnx" if widths == (8, 16, 32)
                        else f"resnet8_digits_{'_'.join(map(str, widths))}.onnx")
    if args.side:
        target, how = resnet8(args.side, widths, seed=0), f"random, {args.side}×{args.side}"
    else:
        target, how = read_target(onnx_path)
    phase("1 read target (exact)", t0, how)

    t0 = time.perf_counter()
    # the command line's defaults: the seed rule "target" (derived from the target and box)
    plan = plan_certify(target, jobs=args.jobs)
    print("plan:", plan.summary)
    c = certify_target(target, plan)
    phase("2 certify", t0)
    for r in c.reports:
        block = r.witness.get("block") if isinstance(r.witness, dict) else None
        how = f"{r.systems} blocks of {block}" if r.systems > 1 and block else \
            f"{r.systems} system(s)"
        print(f"   layer {r.layer:>2}: {r.d_in}→{r.d_out}, {how}, m ≤ {r.system_size}, "
              f"rank {r.rank_text()}, γ bits {r.gamma_bits}, β bits {r.beta_bits}, "
              f"{r.seconds:.1f} s")
    cert = folder / "resnet8.json.gz"
    t0 = time.perf_counter()
    size = write_certificate(c, cert)
    phase("3 write certificate", t0, f"{size / 1e6:.1f} MB")
    doc = certificate_document(c)
    for pure, name in ((False, "4a check (flint)"), (True, "4b check (pure Python)")):
        if pure and args.no_pure:
            continue
        t0 = time.perf_counter()
        v = check_file(cert, pure=pure)
        phase(name, t0, "VALID" if v.ok else f"INVALID ({v.rule}): {v.message[:80]}")
    t0 = time.perf_counter()
    try:
        if args.no_export:
            raise RuntimeError("skipped (--no-export)")
        from exactnorm.outputs.export import onnx_model

        exported = folder / "export.onnx"
        exported.write_bytes(onnx_model(doc).SerializeToString())
        note = f"{exported.stat().st_size / 1e6:.1f} MB"
        if not args.side:
            import onnxruntime as ort
            from mlp_models import digits_images

            X, _ = digits_images(28)
            X = X[:300].reshape(-1, 1, 28, 28)

            def run(path: Path) -> np.ndarray:
                s = ort.InferenceSession(str(path))
                name = s.get_inputs()[0].name
                kind = np.float64 if s.get_inputs()[0].type == "tensor(double)" else np.float32
                return np.concatenate([s.run(None, {name: X[i:i + 1].astype(kind)})[0]
                                       for i in range(len(X))]).astype(np.float64)

            a, b = run(onnx_path), run(exported)
            note += (f"; vs original: max rel. error {np.abs(a - b).max() / np.abs(a).max():.1e}"
                     f", argmax agree {(a.argmax(1) == b.argmax(1)).mean():.3f}")
    except Exception as exc:  # noqa: BLE001 - a benchmark reports what failed and goes on
        note = f"export failed: {type(exc).__name__}: {str(exc)[:80]}"
    phase("5 export ONNX (float64)", t0, note)
    if args.compare_plain:
        compare_plain(target, c.reports, args.plain_max)
    total = sum(row[1] for row in rows)
    print(f"total {total:.1f} s, peak {max(r[2] for r in rows)} MiB, certificate "
          f"{size / 1e6:.1f} MB; goal ≤ {GOAL['seconds']} s, ≤ {GOAL['gib']} GiB, "
          f"≤ {GOAL['mb']} MB")
    tag = "x".join(map(str, widths)) + (f"_side{args.side}" if args.side else "")
    write_csv(f"resnet8_{tag}", ["phase", "seconds", "peak_mib", "note"], rows)
    return 0


def compare_plain(target: Any, reports: list[Any], plain_max: int) -> None:
    """Solve every blocked convolution as one Theorem 1 system too (up to ``plain_max``
    unknowns; the estimate above), and print both."""
    from exactnorm.constructions.choice import estimate_pair
    from exactnorm.constructions.kinds.conv import realize_conv_layer

    boxes = target.interval_boxes()
    for r in reports:
        if r.systems <= 1:
            continue
        layer = target.layers[r.layer - 1]
        m = layer.weight.nrows() * layer.weight.ncols()
        if m > plain_max:
            e = estimate_pair(m)
            print(f"   layer {r.layer:>2} plain: one system m = {m} not solved (> --plain-max): "
                  f"estimated {e.seconds / 60:.0f} min, {e.peak_bytes / 2**30:.0f} GiB; blocks: "
                  f"{r.systems} × m = {r.system_size}, {r.seconds:.1f} s", flush=True)
            continue
        t0 = time.perf_counter()
        _, plain = realize_conv_layer(layer, boxes[target.wire(r.layer).input], seed=0,
                                      index=r.layer, input_node=0)
        print(f"   layer {r.layer:>2} plain: one system m = {plain.system_size}, "
              f"γ bits {plain.gamma_bits}, {time.perf_counter() - t0:.1f} s; blocks: "
              f"{r.systems} × m = {r.system_size}, γ bits {r.gamma_bits}, {r.seconds:.1f} s",
              flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
