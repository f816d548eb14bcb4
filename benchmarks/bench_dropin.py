"""Real-size models in and drop-in exports out (issue 34), every step an ``exactnorm`` command.

Three models: the trained 784-128-10 MLP of ``mlp_models.py`` with a final Softmax (the head is
kept, the logits are certified) and the LeNet-5 of ``cnn_models.py`` (``lenet_digits.npz``),
both written as ONNX with the onnx helper API (no torch), and the trained ResNet-8 shipped as
``resnet8_digits.onnx`` (PyTorch's exporter; ``train_resnet8.py``). Data: scikit-learn's 1,797
digits upsampled to 28×28 (``X.npy`` flat for the MLP, ``Ximg.npy`` as images for LeNet and the
ResNet, labels ``y.npy``).

Each command runs in a fresh process, timed with its peak RSS (``/usr/bin/time``-like, from
``resource``); the results go to ``results/dropin.csv`` and are printed with the command line,
so that every number in the README can be rerun as written:

* ``certify`` (default options) to ``.json`` and ``.json.gz`` (sizes);
* ``export --format onnx`` with and without ``--no-check`` (the cost of checking first);
* ``export --verify 20 --source MODEL --data X --labels y`` (errors, accuracies, sizes, latency);
* ``report`` with and without ``--data X --labels y``.

Usage::

    python benchmarks/bench_dropin.py [--keep DIR] [--only mlp|lenet|resnet8]

With ``--only``, the other models' rows of ``results/dropin.csv`` are kept as they were.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine, write_csv  # noqa: E402
from bench_real_size import run_measured  # noqa: E402
from cnn_models import onnx_of_lenet  # noqa: E402
from mlp_models import digits_images, train_mlp  # noqa: E402


def mlp_onnx(path: Path) -> None:
    """The 784-128-10 MLP as Gemm → Relu → Gemm → Softmax (float32, batch N)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    (W1, b1), (W2, b2) = train_mlp((784, 128, 10), seed=0)
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2"))]
    nodes = [helper.make_node("Gemm", ["input", "W1", "b1"], ["h"], name="fc1", transB=1),
             helper.make_node("Relu", ["h"], ["r"], name="relu1"),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["logits"], name="fc2", transB=1),
             helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 784])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def timed(argv: list[str], cwd: Path) -> dict[str, object]:
    """Run ``exactnorm ARGV`` in a fresh process (through bench_real_size's wrapper, so that the
    peak RSS is that command's own): wall seconds, peak MiB, its output."""
    r = run_measured([sys.executable, "-m", "exactnorm.cli", *argv], cwd=cwd)
    if r["code"]:
        raise SystemExit(f"exactnorm {' '.join(argv)} failed:\n{r['stderr']}")
    return {"seconds": r["seconds"], "peak_mib": r["peak_kib"] / 1024, "stdout": r["stdout"]}


def measured(stdout: str) -> list[str]:
    """The export's printed latency, the source's latency and size, and the accuracy of the
    export on the data, as printed (empty when the command does not print them)."""
    lat = src_lat = src_size = acc = ""
    for line in stdout.splitlines():
        m = re.match(r"latency (.+?) per sample .*?(?:; the source: (.+))?$", line)
        if m:
            lat, src_lat = m.group(1), m.group(2) or ""
        m = re.match(r"size .*\(the source: (.+)\)$", line)
        if m:
            src_size = m.group(1)
        m = re.search(r"export vs exact target: .*accuracy ([\d.]+%)", line)
        if m:
            acc = m.group(1)
    return [lat, src_lat, src_size, acc]


MODELS = ("mlp", "lenet", "resnet8")


def kept_rows(only: str | None) -> list[list[str]]:
    """The rows of the other models in the current ``results/dropin.csv`` (with ``--only``)."""
    path = HERE / "results" / "dropin.csv"
    if only is None or not path.is_file():
        return []
    with open(path, newline="") as fh:
        rows = list(csv.reader(line for line in fh if not line.startswith("#")))
    return [r for r in rows[1:] if r and r[0] != only]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", default=None, help="folder for models, certificates, exports")
    ap.add_argument("--only", choices=MODELS, default=None)
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dropin-"))
    work.mkdir(parents=True, exist_ok=True)
    X, y = digits_images(28)
    np.save(work / "X.npy", X.astype(np.float32))
    np.save(work / "Ximg.npy", X.astype(np.float32).reshape(-1, 1, 28, 28))
    np.save(work / "y.npy", y)
    if args.only in (None, "mlp"):
        mlp_onnx(work / "mlp.onnx")
    if args.only in (None, "lenet"):
        onnx_of_lenet(dict(np.load(HERE / "lenet_digits.npz")), work / "lenet.onnx")
    if args.only in (None, "resnet8"):
        shutil.copyfile(HERE / "resnet8_digits.onnx", work / "resnet8.onnx")
    rows: list[list[object]] = [*kept_rows(args.only)]
    for name, data in (("mlp", "X.npy"), ("lenet", "Ximg.npy"), ("resnet8", "Ximg.npy")):
        if args.only not in (None, name):
            continue
        steps = [
            ["certify", f"{name}.onnx", "--box", "0:1", "--out", f"{name}.json", "--force"],
            ["certify", f"{name}.onnx", "--box", "0:1", "--out", f"{name}.json.gz",
             "--force"],
            ["export", f"{name}.json.gz", "--format", "onnx", "--out", f"{name}.export.onnx",
             "--no-check"],
            ["export", f"{name}.json.gz", "--format", "onnx", "--out", f"{name}.export.onnx"],
            ["export", f"{name}.json.gz", "--format", "onnx", "--out", f"{name}.export.onnx",
             "--verify", "20", "--source", f"{name}.onnx", "--data", data, "--labels",
             "y.npy"],
            ["report", f"{name}.json.gz", "--out", f"report_{name}"],
            ["report", f"{name}.json.gz", "--out", f"report_{name}_data", "--data", data,
             "--labels", "y.npy"],
        ]
        for argv in steps:
            r = timed(argv, work)
            out = argv[argv.index("--out") + 1]
            size = os.path.getsize(work / out) if (work / out).is_file() else ""
            line = f"exactnorm {' '.join(argv)}"
            print(f"{r['seconds']:7.1f} s  {r['peak_mib']:7.0f} MiB  {size!s:>10}  {line}",
                  flush=True)
            if "--source" in argv or "--data" in argv:
                print("    " + "\n    ".join(str(r["stdout"]).strip().splitlines()[1:]))
            rows.append([name, line, round(float(r["seconds"]), 1),
                         round(float(r["peak_mib"])), size, *measured(str(r["stdout"]))])
    path = write_csv("dropin", ["model", "command", "seconds", "peak_mib", "bytes", "latency",
                                "source_latency", "source_size", "accuracy"], rows)
    print(f"wrote {path}; machine: {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
