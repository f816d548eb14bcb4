"""``--dry-run`` on the model corpus: the plan of ``certify`` (and of ``capacity`` for the MLPs)
printed without any work, in a fresh process each, wall and CPU time against the 2 s target.

The corpus is the one the estimates are fitted on: scikit-learn MLPs on the 8×8 digits (64-8-10,
64-64-10 with a ``StandardScaler``, float32 and float64 as skl2onnx writes them), the trained
784-128-10 MLP (``mlp_models``), LeNet-5 (``cnn_models``, its ONNX graph), the three committed
ResNet-8 ONNX files and the trained transformers of ``tests/model/data`` (their token box is
their own: no ``--box``). Each run is ``exactnorm certify MODEL --box 0:1 --dry-run --json``; its
object is checked to be a plan (verdict ``PLAN``, exit 0) and that no file was written. CPU time
is the child's user + system time (``resource.getrusage``), which a loaded machine inflates far
less than wall time; both are written with the load average to
``results/dry_run.csv``.

Each command runs twice: as the environment runs it (``wall_s``, ``cpu_s``: with
``PYTHONDONTWRITEBYTECODE=1``, as on the development machines, every module of exactnorm is
compiled again on every run, about half of a small model's dry run), and on a copy of the
package whose bytecode was compiled beforehand (``cpu_s_bytecode``: what an installed package,
or a checkout run twice, does). The CSV header says which the environment does.

    python benchmarks/bench_dry_run.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _common import say, verdict, write_csv

HERE = Path(__file__).resolve().parent
TRANSFORMERS = HERE.parent / "tests" / "model" / "data"
TARGET_SECONDS = 2.0


def _sklearn_models(folder: Path) -> dict[str, Path]:
    import skl2onnx
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = MLPClassifier(hidden_layer_sizes=(8,), random_state=0, max_iter=200).fit(X, y)
        piped = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(64,),
                                                              random_state=0, max_iter=200))
        piped.fit(X, y)
    for name, model, dtype in (("mlp-64-8-10-float32", small, np.float32),
                               ("mlp-64-8-10-float64", small, np.float64),
                               ("pipeline-64-64-10-float32", piped, np.float32)):
        path = folder / f"{name}.onnx"
        path.write_bytes(skl2onnx.to_onnx(model, X[:1].astype(dtype)).SerializeToString())
        out[name] = path
    return out


def corpus(folder: Path, quick: bool) -> dict[str, Path]:
    sys.path.insert(0, str(HERE))
    models = {f"resnet8-{p.stem.removeprefix('resnet8_digits').strip('_') or '8-16-32'}": p
              for p in sorted(HERE.glob("resnet8_digits*.onnx"))}
    models.update({f"transformer-{name}": TRANSFORMERS / f"{name}.onnx" for name in
                   ("tiny_preln", "modadd_1l_preln", "modadd_1l_postln", "modadd_2l_preln")})
    try:
        models.update(_sklearn_models(folder))
    except ImportError as exc:
        say(f"scikit-learn models skipped: {exc}")
    if not quick:
        from cnn_models import onnx_of_lenet, train_lenet
        from mlp_models import digits_images, write_mlp_npz

        write_mlp_npz((784, 128, 10), folder / "mlp-784-128-10.npz")
        models["mlp-784-128-10"] = folder / "mlp-784-128-10.npz"
        X, y = digits_images(28)
        onnx_of_lenet(train_lenet(X[:1500], y[:1500], epochs=2), folder / "lenet.onnx")
        models["lenet-5"] = folder / "lenet.onnx"
    return models


def compiled_copy(folder: Path) -> dict[str, str]:
    """A copy of the package with its bytecode compiled next to it (as pip installs it; a
    ``PYTHONPYCACHEPREFIX`` would hide the dependencies' own bytecode), and the environment
    that imports it."""
    shutil.copytree(HERE.parent / "exactnorm", folder / "exactnorm",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder / "exactnorm")],
                   check=True)
    return {"PYTHONPATH": str(folder)}


def dry_run(argv: list[str], cwd: Path, env: dict[str, str] | None = None
            ) -> tuple[float, float, dict]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "exactnorm", *argv, "--dry-run", "--json"],
                       cwd=cwd, capture_output=True, text=True, check=False,
                       env={**os.environ, "PYTHONPATH": str(HERE.parent), **(env or {})})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    obj = json.loads(r.stdout)
    if (r.returncode, obj["verdict"]) != (0, "PLAN"):
        raise SystemExit(f"{argv}: exit {r.returncode}, {obj['message']}")
    return wall, cpu, obj


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="the committed and scikit-learn models only (no training)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bytecode = compiled_copy(folder / "installed")
        for name, path in corpus(folder, args.quick).items():
            # an .npz target carries its own box; an ONNX model is given one
            box = [] if path.suffix == ".npz" or name.startswith("transformer") \
                else ["--box", "0:1"]
            runs = [("certify", ["certify", str(path), *box, "--out", "c.json"])]
            if name.startswith(("mlp", "pipeline")) and path.suffix != ".npz":
                runs.append(("capacity", ["capacity", str(path), *box, "--target",
                                          str(path)]))
            for verb, argv in runs:
                wall, cpu, obj = dry_run(argv, folder)
                _, cpu_compiled, again = dry_run(argv, folder, bytecode)
                assert not (folder / "c.json").exists() and again["details"] == obj["details"]
                plan = obj["details"]["plan"]
                estimate = plan.get("estimate", {})
                rows.append([name, verb, round(wall, 3), round(cpu, 3), round(cpu_compiled, 3),
                             plan.get("construction", ""), estimate.get("seconds", ""),
                             os.getloadavg()[0]])
                say(f"{name:28} {verb:9} wall {wall:6.2f} s  cpu {cpu:6.2f} s  "
                    f"{verdict(cpu, TARGET_SECONDS, higher_is_better=False)} (CPU); "
                    f"{cpu_compiled:5.2f} s with bytecode")
    path = write_csv("dry_run", ["model", "verb", "wall_s", "cpu_s", "cpu_s_bytecode",
                                 "construction", "estimated_s", "load_1min"], rows,
                     bytecode="not written" if sys.dont_write_bytecode else "written")
    say(f"wrote {path}")


if __name__ == "__main__":
    main()
