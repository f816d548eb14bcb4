"""Real-size certification: the construction choice, parallel blocks, progress (issue 14).

Independent checks: the k = 1 identity K = V_out·diag(v_in) is compared with the general
Khatri–Rao builder; certificates from one process, a process pool and a Dask cluster must be
byte-identical and valid for both checkers; the automatic path must produce a certificate the
checkers accept; an over-budget Theorem 1 must fail before any work.
"""

from __future__ import annotations

import io
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from flint import fmpz_mat

from exactnorm import api
from exactnorm.certificate import load_certificate, write_certificate
from exactnorm.cli import main
from exactnorm.commands.certify import PlainProgress
from exactnorm.constructions.choice import (
    THEOREM1_MAX_SYSTEM,
    choose_construction,
    estimate_tradeoff,
    zero_probability,
)
from exactnorm.constructions.theorem1 import draw_pair, khatri_rao_system
from exactnorm.constructions.tradeoff import certify_tradeoff, left_divide
from exactnorm.exact.linalg import khatri_rao, solve_exact
from exactnorm.exact.sampling import parse_distribution
from exactnorm.model.targets import random_target

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_block_size_one_system_is_vout_times_diag_vin():
    dist = parse_distribution("nonzero:8")
    for d_out in (1, 3, 7):
        V_in, V_out = draw_pair(0, 5, 0, 1, d_out, d_out, dist)
        K = khatri_rao_system(V_in, V_out)
        diag = fmpz_mat([[V_in[j, 0] if i == j else 0 for j in range(d_out)]
                         for i in range(d_out)])
        assert K == V_out * diag == khatri_rao(V_in.transpose(), V_out)
        # invertible iff V_out is and v_in has no zero
        assert (K.det() != 0) == (V_out.det() != 0 and all(V_in[j, 0] for j in range(d_out)))


def test_left_divide_equals_solve():
    g = random_target((9, 5), seed=4)
    V = draw_pair(1, 1, 0, 5, 5, 5, parse_distribution("int:8"))[0]
    assert left_divide(V, g.layers[0].weight) == solve_exact(V, g.layers[0].weight)


def test_zero_probability():
    assert zero_probability("int:8") == pytest.approx(1 / 17)
    assert zero_probability("nonzero:8") == 0
    assert zero_probability("set:-1,0,1,2") == pytest.approx(1 / 4)


def test_choice_small_targets_keep_theorem1():
    c = choose_construction(random_target((4, 3, 2), seed=0), "int:8")
    assert c.name == "theorem1" and c.block is None


def test_choice_wide_layers_take_the_fastest_admissible_block():
    g = random_target((80, 64, 2), seed=0)  # m = 5120 > budget
    assert THEOREM1_MAX_SYSTEM < 80 * 64
    zero_free = choose_construction(g, "nonzero:8")
    assert zero_free.name == "tradeoff"
    assert zero_free.estimate.seconds == min(
        e.seconds for name, e in zero_free.alternatives.items() if name != "theorem1")
    # int:8: a row of V_in is zero with probability 17^-k; 64·k·17^-k ≤ 1% first at k = 4
    with_zeros = choose_construction(g, "int:8")
    assert with_zeros.name == "tradeoff" and with_zeros.block >= 4
    assert all(64 * k * (1 / 17) ** k > 0.01 for k in (1, 2))
    assert with_zeros.estimate.seconds == min(
        e.seconds for name, e in with_zeros.alternatives.items()
        if name.startswith("tradeoff") and int(name.split("=")[1]) >= 4)
    # the model agrees with the measured ordering beyond the smallest blocks: time and bytes
    # grow with k, depth falls
    e = [estimate_tradeoff(g, k) for k in (2, 4, 8, 16)]
    assert all(a.seconds < b.seconds and a.certificate_bytes < b.certificate_bytes
               and a.depth > b.depth for a, b in zip(e, e[1:]))


def _certificate_bytes(c, path):
    write_certificate(c, path)
    return path.read_bytes()


def test_jobs_and_dask_give_byte_identical_certificates(tmp_path):
    distributed = pytest.importorskip("distributed")
    g = random_target((6, 4, 3), seed=7)
    opts = dict(block=2, seed=3, distribution="nonzero:8", retry=5)
    serial = certify_tradeoff(g, **opts)
    reference = _certificate_bytes(serial, tmp_path / "serial.json.gz")
    assert api.check(load_certificate(tmp_path / "serial.json.gz")).ok
    assert api.check_file(tmp_path / "serial.json.gz", pure=True).ok
    pooled = certify_tradeoff(g, jobs=2, **opts)
    assert _certificate_bytes(pooled, tmp_path / "pool.json.gz") == reference
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        dasked = certify_tradeoff(g, scheduler=cluster.scheduler_address, **opts)
        out = tmp_path / "cli.json.gz"
        assert main(["certify", "--force",
                     "--construction", "tradeoff", "--block", "2", "--seed", "0",
                     "--distribution", "nonzero:8", "--scheduler", cluster.scheduler_address,
                     "--out", str(out)]) == 0
    assert _certificate_bytes(dasked, tmp_path / "dask.json.gz") == reference
    assert main(["certify", "--force", "--construction", "tradeoff", "--block", "2", "--seed", "0",
                 "--distribution", "nonzero:8", "--jobs", "2", "--no-check",
                 "--out", str(tmp_path / "cli2.json.gz")]) == 0
    assert out.read_bytes() == (tmp_path / "cli2.json.gz").read_bytes()


def _float32_mlp(widths, path, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {}
    for i, (a, b) in enumerate(zip(widths, widths[1:]), 1):
        arrays[f"W{i}"] = (rng.standard_normal((b, a)) / math.sqrt(a)).astype(np.float32)
        arrays[f"b{i}"] = (rng.standard_normal(b) / 10).astype(np.float32)
    arrays["lower"] = np.zeros(widths[0], np.float32)
    arrays["upper"] = np.ones(widths[0], np.float32)
    np.savez(path, **arrays)


def test_automatic_choice_end_to_end(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("exactnorm.commands._common.PLAIN_PROGRESS_SECONDS", 0)
    npz = tmp_path / "mlp.npz"
    _float32_mlp((49, 16, 10), npz)
    out = tmp_path / "c.json.gz"
    # a budget below 49·16 sends the default path to the trade-off, as 784·128 does
    assert main(["certify", "--force", "--target", str(npz), "--max-system", "256", "--out",
                 str(out)]) == 0
    captured = capsys.readouterr()
    k = api.plan_certify(api.load_target(npz), max_system=256).options["block"]
    assert "tradeoff chosen" in captured.err and f"block size {k}" in captured.err
    assert "nonzero:8" in captured.err and "VALID" in captured.out
    assert "tradeoff chosen" in captured.out  # the summary says so too
    blocks = math.ceil(49 / k) + math.ceil(16 / k)
    assert f"/{blocks} blocks" in captured.err  # plain progress off a terminal
    doc = load_certificate(out)
    assert doc["version"] == 3 and doc["provenance"]["block"] == k
    assert doc["provenance"]["distribution"] == "nonzero:8"
    assert api.check(doc, pure=True).ok
    # the same file is rejected when one compact numerator changes
    doc["network"]["layers"][1]["gamma"]["num"][0] = str(int(
        doc["network"]["layers"][1]["gamma"]["num"][0]) + 1)
    assert not api.check(doc).ok


def test_jobs_auto_uses_the_cores_for_long_work_only(tmp_path, capsys, monkeypatch):
    from exactnorm.exact import parallel

    monkeypatch.setattr(parallel, "available_cores", lambda: 3)
    assert parallel.auto_jobs(parallel.AUTO_JOBS_SECONDS) == 3
    assert parallel.auto_jobs(parallel.AUTO_JOBS_SECONDS / 2) == 1
    used = []
    real_map = parallel.map_tasks

    def spy(fn, tasks, *, jobs=1, scheduler=None):
        used.append(jobs)
        return real_map(fn, tasks, jobs=1, scheduler=scheduler)

    monkeypatch.setattr("exactnorm.constructions.tradeoff.map_tasks", spy)
    npz = tmp_path / "mlp.npz"
    _float32_mlp((49, 16, 10), npz)
    files = {}
    for jobs in ("auto", "1"):
        # an estimate of 5 s or more takes every core: lower the threshold for this small target
        monkeypatch.setattr(parallel, "AUTO_JOBS_SECONDS", 0.0)
        out = tmp_path / f"c{jobs}.json.gz"
        assert main(["certify", "--force",
                     "--target", str(npz), "--max-system", "256", "--jobs", jobs,
                     "--out", str(out), "--no-check"]) == 0
        files[jobs] = out.read_bytes()
    assert used == [3, 1]
    assert "--jobs auto: 3 processes" in capsys.readouterr().err
    assert files["auto"] == files["1"]
    for bad in ("0", "x", "-2"):
        assert main(["certify", "--force", "--jobs", bad, "--out", str(tmp_path / "d.json")]) == 2
        assert "--jobs" in capsys.readouterr().err


def test_explicit_theorem1_beyond_budget_fails_at_once(tmp_path, capsys):
    npz = tmp_path / "mlp.npz"
    _float32_mlp((49, 16, 10), npz)
    t = time.perf_counter()
    code = main(["certify", "--force", "--target", str(npz), "--construction", "theorem1",
                 "--max-system", "256", "--out", str(tmp_path / "c.json")])
    assert code == 2 and time.perf_counter() - t < 10
    err = capsys.readouterr().err
    assert "system of size 784" in err and "peak ≈" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "c.json").exists()


def test_plain_progress_is_throttled():
    out = io.StringIO()
    ticks = iter(range(100))
    p = PlainProgress("x", out, every=5, clock=lambda: next(ticks))
    for done in range(1, 41):
        p(done, 40)
    lines = out.getvalue().splitlines()
    # clock 0 at the start, then 1, 2, …: the first line after 5 ticks, then every 5, then last
    assert lines[0].startswith("x: 5/40 blocks, 5 s elapsed, ETA 35 s")
    assert lines[-1].startswith("x: 40/40 blocks")
    assert len(lines) == 8  # 5, 10, …, 40


def test_short_runs_print_no_progress():
    out = io.StringIO()
    p = PlainProgress("x", out, every=5, clock=iter([0, 1, 2]).__next__)
    p(1, 2)
    p(2, 2)
    assert out.getvalue() == ""


@pytest.mark.slow
def test_196_64_10_trained_mlp_end_to_end(tmp_path, capsys):
    sys.path.insert(0, str(BENCHMARKS))
    from mlp_models import write_mlp_npz

    npz = tmp_path / "mlp.npz"
    write_mlp_npz((196, 64, 10), npz)
    out = tmp_path / "c.json.gz"
    # 196·64 = 12,544 > budget: the default path must choose the trade-off by itself
    assert main(["certify", "--force", "--target", str(npz), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "tradeoff chosen" in captured.err and "VALID" in captured.out
    doc = json.loads(__import__("gzip").decompress(out.read_bytes()))
    assert doc["version"] == 3 and doc["provenance"]["construction"] == "tradeoff"
    assert doc["provenance"]["shift_mode"] == "integer"
    # one segment of 3·196 + 1 layers; both checkers agree, message included
    pure, fast = api.check(doc, pure=True), api.check(doc)
    assert pure.ok and pure == fast and pure.facts["frozen_layers"] == 3 * 196 + 1 + 3 * 64 + 1
    skips = [s["weight"] for L in doc["network"]["layers"] for s in L.get("skip", [])]
    assert all(set(w) in ({"identity"}, {"selection", "columns"}) for w in skips)
