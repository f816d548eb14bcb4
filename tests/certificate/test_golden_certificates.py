"""Golden certificate bytes: a guard for refactorings that must not change a single byte.

Each case builds a construction at a fixed seed, writes its certificate and compares the SHA-256
of the file with the digest recorded below. The digests were first computed from the code at
commit ``75a6a39``, before the layer kinds became plug-ins (issue 31), and every step of that
migration kept them. They were recomputed on purpose twice: at the merge of issue 30 (certificate
version 3 by default, stream keys fixed by position, hence other frozen draws, the declared seed
rule, targets over one denominator when shorter), and, for the two cases whose seed is derived
from the target, when the seed rule became ``target.v2`` (the canonical form of the target on its
box, docs/generator.md §8: another seed, hence other draws, and the word ``target.v2``; every
other case kept its bytes). A digest pins bytes, so each case also has the independent checker
accept the same file (both arithmetics): a digest of an invalid certificate is never kept.

The cases cover every writer path: Theorem 1 (versions 1 and 3, frozen weights by reference and
explicit, a seed chosen and the seed derived from the target), the width/depth trade-off chosen
by the cost model on a wide input (selection routing) and with masked routing, low rank,
Bernoulli-masked draws with redraws, and convolutional targets (convolution, average pooling and
a dense head realized by Theorem 1 or by the trade-off, one of them with the seed derived from
the target).

If a change is *meant* to change bytes (a new format version), recompute the digests with
``python -m tests.certificate.test_golden_certificates`` and say why in the commit message.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from flint import fmpq, fmpq_mat

from exactnorm import api, checker, checker_flint
from exactnorm.model.network import TargetLayer as Dense
from exactnorm.model.network import TargetNetwork
from exactnorm.model.network import TargetNetwork as Network
from exactnorm.model.operators import AvgPool, ConvGeometry
from exactnorm.model.operators import Conv as ConvMap
from exactnorm.model.targets import demo_target, random_target

# --------------------------------------------------------------------------- targets


def Conv(g: ConvGeometry, W: fmpq_mat, b: tuple, act: str) -> Dense:  # noqa: N802
    return Dense(ConvMap(g, W), b, act)


def Pool(g: ConvGeometry) -> Dense:  # noqa: N802
    return Dense(AvgPool(g))


def _rng_rationals(seed: int) -> tuple[Callable[[int, int], fmpq_mat], Callable[[int], tuple]]:
    rng = random.Random(seed)

    def mat(r: int, c: int) -> fmpq_mat:
        return fmpq_mat(r, c, [fmpq(rng.randint(-8, 8), 8) for _ in range(r * c)])

    def vec(n: int) -> tuple:
        return tuple(fmpq(rng.randint(-8, 8), 8) for _ in range(n))

    return mat, vec


def lenet_small() -> Any:
    """LeNet-shaped on 1×8×8: conv 3×3 p1 → 2, avgpool 2, conv 3×3 → 3, dense 12 → 2."""
    mat, vec = _rng_rationals(1)
    g1 = ConvGeometry((1, 8, 8), (3, 3), padding=(1, 1))
    g2 = ConvGeometry((2, 4, 4), (3, 3))
    return Network((Conv(g1, mat(2, 9), vec(2), "relu"),
                    Pool(ConvGeometry((2, 8, 8), (2, 2), stride=(2, 2))),
                    Conv(g2, mat(3, 18), vec(3), "relu"),
                    Dense(mat(2, 12), vec(2), "identity")),
                   (fmpq(0),) * 64, (fmpq(1),) * 64)


def cnn_wide_head() -> Any:
    """conv 3×3 s1 → 2 on 1×6×6, avgpool 2 s1, a dense head 18 → 6 → 2 beyond the budget."""
    mat, vec = _rng_rationals(5)
    g = ConvGeometry((1, 6, 6), (3, 3))
    return Network((Conv(g, mat(2, 9), vec(2), "relu"),
                    Pool(ConvGeometry((2, 4, 4), (2, 2), stride=(2, 2))),
                    Dense(mat(6, 8), vec(6), "relu"),
                    Dense(mat(2, 6), vec(2), "identity")),
                   (fmpq(-1),) * 36, (fmpq(1),) * 36)


def low_rank_target() -> TargetNetwork:
    """Two layers of rank 1 and 2 (the low-rank construction's factors are computed)."""
    u, v = [1, -2, 3], [2, 0, -1, 1]
    W1 = [[a * b for b in v] for a in u]
    W2 = [[1, 2, -1], [2, 4, -2]]
    half = Fraction(1, 2)
    return TargetNetwork.from_lists([W1, W2], [[1, 0, -1], [half, 0]], ["relu", "identity"],
                                    lower=[-1, 0, 0, -half], upper=[1, 1, 2, half])


# --------------------------------------------------------------------------- cases


def _dense(target: Any) -> bool:
    return all(isinstance(layer, Dense) for layer in target.layers)


def _certify(target: Any, **options: Any) -> Any:
    if _dense(target) or options.get("seed", "target") == "target":
        return api.certify(target, **options)  # the API's seed rule: "target" by default
    from exactnorm.constructions.plan import construct

    return construct(target, **options)


def _write(c: Any, path: Path, **options: Any) -> None:
    api.write_certificate(c, path, **options)


#: name → (target, certify options, write options, file name)
CASES: dict[str, tuple[Callable[[], Any], dict[str, Any], dict[str, Any], str]] = {
    "demo-theorem1": (demo_target, {"seed": 0}, {}, "c.json"),
    "demo-theorem1-v1": (demo_target, {"seed": 3}, {"version": 1}, "c.json"),
    "demo-explicit-gz": (demo_target, {"seed": 1}, {"frozen_weights": "explicit"}, "c.json.gz"),
    "wide-tradeoff-auto": (lambda: random_target((98, 6, 3), seed=7), {"seed": 2,
                                                                        "max_system": 100},
                           {}, "c.json.gz"),
    "tradeoff-mask": (lambda: random_target((10, 4, 2), seed=2),
                      {"construction": "tradeoff", "block": 3, "routing": "mask", "seed": 4},
                      {}, "c.json"),
    "lowrank": (low_rank_target, {"construction": "lowrank", "seed": 5}, {}, "c.json"),
    "sparse-redraws": (lambda: random_target((3, 3, 2), seed=5),
                       {"construction": "theorem1", "sparsity": "3/4", "distribution": "int:4",
                        "seed": 1}, {}, "c.json"),
    "cnn-lenet": (lenet_small, {"seed": 0}, {}, "c.json"),
    "cnn-lenet-explicit-gz": (lenet_small, {"seed": 2}, {"frozen_weights": "explicit"},
                              "c.json.gz"),
    "cnn-tradeoff-head": (cnn_wide_head, {"seed": 1, "max_system": 40, "jobs": 1}, {},
                          "c.json"),
    "demo-seed-target": (demo_target, {}, {}, "c.json"),
    "cnn-lenet-seed-target": (lenet_small, {"jobs": 1}, {}, "c.json"),
}

#: SHA-256 of each case's certificate file, recomputed at the merge of issue 30 (version 3); the
#: two seed-target cases again for seed rule target.v2
GOLDEN = {
    "cnn-lenet": "fc4d565c075c574411922b6b6e36da2683972ed8cade9bb4b48377724d7781e7",
    "cnn-lenet-explicit-gz": "4459a7ed02f169d946517c2fb0921472c438e43a20d1565436dd43e8bb8f616a",
    "cnn-lenet-seed-target": "57037c45185a33608dc35abdf185c142634e08e56d3b1ff202ea4a36097a842d",
    "cnn-tradeoff-head": "edc794957861aefe1f8e86176b794164b2e55ac744c84bb7ee833eb6a78fc0ed",
    "demo-explicit-gz": "f64656ea0305c112ff5a7a656da75d3b1c7f77b108018a9cbd7f2f2268f6fa17",
    "demo-seed-target": "d07b646680a8a6269bba0a5744f86bc4ae9b19787352b9ab41e25c0c7a5d8588",
    "demo-theorem1": "f4b8ebedd8dc9c0396c4cd30c73a1219b0754df37dba66581ab917aa61594228",
    "demo-theorem1-v1": "545e2ea548d5a65d60081f2fc61dc128a3ebe523818c4dbe41abaab476c5c54c",
    "lowrank": "97cbf7af7f6ee5504f873988bea02d356e6ca0c1b9308eeab3f65131072426c6",
    "sparse-redraws": "b068e36d7f3717dafd6d9be50215039acab84ac5ade703c563a46dbe36034bfe",
    "tradeoff-mask": "2cb5e9c1a132a737e069cda67e2de63762e7a772d6aa74ad70632ce14821fb8c",
    "wide-tradeoff-auto": "386b95689c616490b988da490aa7ad5b48133de6aa92f9687b63550250eb6571",
}


def build(name: str, folder: Path) -> Path:
    make, options, write, filename = CASES[name]
    path = folder / f"{name}-{filename}"
    _write(_certify(make(), **options), path, **write)
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", sorted(CASES))
def test_certificate_bytes_equal_the_golden_digest(name, tmp_path):
    path = build(name, tmp_path)
    assert digest(path) == GOLDEN[name], f"{name}: certificate bytes changed"
    doc = api.load_certificate(path)
    for module in (checker, checker_flint):
        verdict = module.check_certificate(doc)
        assert verdict.ok, (name, verdict)


def test_the_cases_cover_every_writer_path(tmp_path):
    """The golden set is only a guard if it exercises what a migration could break."""
    docs = {name: api.load_certificate(build(name, tmp_path)) for name in
            ("sparse-redraws", "cnn-tradeoff-head", "wide-tradeoff-auto", "demo-theorem1-v1",
             "demo-seed-target", "cnn-lenet-seed-target", "demo-theorem1")}
    assert docs["sparse-redraws"].get("redraws")
    for name in ("demo-seed-target", "cnn-lenet-seed-target"):
        assert docs[name]["seed_rule"] == "target.v2" and docs[name]["version"] == 3, name
    assert "seed_rule" not in docs["demo-theorem1"] and docs["demo-theorem1"]["version"] == 3
    head = docs["cnn-tradeoff-head"]
    assert {L.get("kind", "dense") for L in head["network"]["layers"]} == \
        {"conv", "avgpool", "dense"}
    assert [r["construction"] for r in head["provenance"]["dense_runs"]] == ["tradeoff"]
    assert docs["wide-tradeoff-auto"]["provenance"]["construction"] == "tradeoff"
    assert any("skip" in L for L in docs["wide-tradeoff-auto"]["network"]["layers"])
    assert docs["demo-theorem1-v1"]["version"] == 1


# python -m tests.certificate.test_golden_certificates: print the digests
if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = {name: digest(build(name, Path(tmp))) for name in sorted(CASES)}
    json.dump(out, sys.stdout, indent=4)
    print()
