"""What can re-tuning only the normalization of *your* network reach? Decided exactly, on digits.

Trains, in a few seconds, a 64–256–10 MLP on one half of scikit-learn's digits (the *frozen*,
"pretrained" network) and, on the other half, two independent targets: a linear 64 → 10
classifier and a 64–32–10 MLP. Then asks ``exactnorm.capacity`` (docs/capacity.md):

1. the capacity profile of the frozen network: the exact rank of its Khatri–Rao matrix against
   the 640 a universal pair needs (``not universal`` at width 256);
2. the linear target: ``UNREACHABLE`` for every tuning (a rank witness, Theorem LB: width 256 is
   below Burkholz's c2·c0 − c2 + 1 = 631), and with ``best=True`` the exact least-squares
   optimum in the stable class and the achieved sup-norm error;
3. the 64–32–10 target: ``UNREACHABLE`` by a kink witness (a kink of the target parallel to no
   row of the frozen first layer);
4. the frozen network with its normalization re-tuned (new γ, β): ``REACHABLE``, an ordinary
   certificate whose frozen matrices are the trained ones;
5. with ``--wide``: a 64–1024–10 frozen network, ``universal``, and the linear target
   ``REACHABLE`` (an exact solve of a 640 × 640 system with the float64 weights' 180-bit
   entries: about a minute on 2 cores, γ of about 80 kbit).

Every document is checked by both checker arithmetics. Run: ``python examples/capacity_digits.py
[--wide] [--out DIR]`` (needs ``pip install "exactnorm[sklearn]"``).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from exactnorm import api, checker, checker_flint
from exactnorm.errors import require_extra
from exactnorm.model.batchnorm import retuned as retune
from exactnorm.model.box import Box
from exactnorm.model.interop import frozen_from_sklearn
from exactnorm.model.network import TargetNetwork

__all__ = ["main", "train"]


def train(width: int, part: str, iters: int, seed: int) -> Any:
    """An MLP classifier of one hidden ReLU layer on one half of the digits (pixels / 16)."""
    datasets = require_extra("sklearn.datasets", "this example")
    from sklearn import exceptions
    from sklearn import neural_network as neural

    X, y = datasets.load_digits(return_X_y=True)
    half = len(X) // 2
    rows = slice(0, half) if part == "first" else slice(half, None)
    model = neural.MLPClassifier(hidden_layer_sizes=(width,), max_iter=iters, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", exceptions.ConvergenceWarning)
        return model.fit(X[rows] / 16, y[rows])


def _linear_target() -> TargetNetwork:
    datasets = require_extra("sklearn.datasets", "this example")
    from sklearn import linear_model as linear

    X, y = datasets.load_digits(return_X_y=True)
    half = len(X) // 2
    ridge = linear.RidgeClassifier().fit(X[half:] / 16, y[half:])
    W = [[Fraction(float(x)) for x in row] for row in ridge.coef_.astype(np.float32)]
    b = [Fraction(float(x)) for x in ridge.intercept_.astype(np.float32)]
    return TargetNetwork.from_lists([W], [b], ["identity"], lower=[0] * 64, upper=[1] * 64)


def _both(doc: dict[str, Any]) -> str:
    pure, flint = checker.check_certificate(doc), checker_flint.check_certificate(doc)
    assert pure == flint and pure.ok, (pure.message, flint.message)
    return f"{(pure.facts or {}).get('claim', 'REACHABLE')} VALID (pure and flint checkers)"


def _show(title: str, r: Any, out: Path | None, name: str) -> None:
    print(f"\n== {title}")
    for line in r.lines():
        print(line)
    if r.document is not None:
        print(_both(r.document))
        if out is not None:
            api.save_certificate(r.document, out / name)
            print(f"written to {out / name}")
    print("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in r.seconds.items()))


def main(wide: bool = False, out: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    frozen = train(256, "first", 60, 0)
    mlp32 = train(32, "second", 200, 1)
    print(f"trained the frozen 64-256-10 MLP and the 64-32-10 target in "
          f"{time.perf_counter() - t0:.1f} s")
    box = "0:1"
    facts: dict[str, Any] = {}
    r = api.capacity(frozen)
    _show("capacity profile of the frozen 64-256-10 network", r, out, "profile")
    facts["universal_256"] = r.profile[0].universal

    linear = _linear_target()
    r = api.capacity(frozen, target=linear, best=True)
    _show("a linear 64 → 10 target trained on the other half (with --best)", r, out,
          "linear_256.json")
    facts["linear_256"] = r.word

    r = api.capacity(frozen, box=box, target=mlp32)
    _show("an independently trained 64-32-10 MLP", r, out, "mlp32_256.json")
    facts["mlp32_256"] = r.word

    net = frozen_from_sklearn(frozen)
    rng = random.Random(0)
    gammas = [[Fraction(rng.randint(1, 8), 4) for _ in range(n)] for n in (256, 10)]
    betas = [[Fraction(rng.randint(-4, 4), 8) for _ in range(n)] for n in (256, 10)]
    retuned = retune(net, gammas, betas, Box.of("0:1"))
    r = api.capacity(frozen, target=retuned)
    _show("the frozen network with re-tuned γ, β", r, out, "retuned_256.json")
    facts["retuned_256"] = r.word

    if wide:
        frozen1024 = train(1024, "first", 30, 0)
        r = api.capacity(frozen1024, target=linear)
        _show("the linear target from a frozen 64-1024-10 network", r, out, "linear_1024.json")
        facts["universal_1024"] = r.profile[0].universal
        facts["linear_1024"] = r.word
    return facts


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wide", action="store_true",
                        help="also the 64-1024-10 network (about a minute more)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for the documents (default: a temporary one)")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="exactnorm-capacity-"))
    print(main(wide=args.wide, out=folder))
