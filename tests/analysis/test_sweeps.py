"""Sparse sweeps: backend-independent results, resumable logs, thresholds, CLI and plots.

docs/sparse.md sweeps. The results of a sweep must not depend on who runs the draws: serial, a local
process pool or a Dask cluster give byte-identical CSV files, and so does any split of the draws
into tasks or an interrupted-then-resumed run. The counts themselves are recomputed here through
an independent path (NetworkX matchings on the dense pattern).
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from exactnorm.analysis.structural import structural_rank_networkx
from exactnorm.analysis.sweeps import (
    Cell,
    _masks,
    aggregate,
    estimate_thresholds,
    hidden_width,
    make_tasks,
    parse_grid,
    read_task_log,
    run_sweep,
    run_task,
)
from exactnorm.cli import main
from exactnorm.errors import InputError
from exactnorm.outputs.tables.sparse import plot_transitions, write_sweep_outputs

GRID = dict(sizes=[2, 3, 4], factors=["1", "1.5", "2"], ps=["0.3", "0.6", "0.9"], draws=24,
            seed=5)



def _khatri_rao_pattern_dense(mi: np.ndarray, mo: np.ndarray) -> np.ndarray:
    """The support of K = V_inᵀ ⊙ V_out as a dense Boolean array: a second, obvious construction
    to compare with the sparse one of the package."""
    dense = mi.T[:, None, :] & mo[None, :, :]          # (d_in, d_out, m)
    return dense.reshape(mi.shape[1] * mo.shape[0], mi.shape[0])

def _outputs(rows, tmp: Path) -> dict[str, bytes]:
    write_sweep_outputs(rows, tmp, "test", plot=False)
    return {p.name: p.read_bytes() for p in sorted(tmp.iterdir()) if p.suffix in (".csv", ".md")}


@pytest.fixture(scope="module")
def serial_rows():
    return run_sweep(make_tasks(**GRID, chunk=8))


def test_process_pool_and_chunking_give_identical_files(serial_rows, tmp_path):
    reference = _outputs(serial_rows, tmp_path / "serial")
    pooled = run_sweep(make_tasks(**GRID, chunk=8), jobs=2)
    assert _outputs(pooled, tmp_path / "pool") == reference
    # a different split of the draws into tasks aggregates to the same cells
    rechunked = run_sweep(make_tasks(**GRID, chunk=5))
    assert _outputs(rechunked, tmp_path / "chunk5") == reference


def test_dask_local_cluster_gives_identical_files(serial_rows, tmp_path):
    distributed = pytest.importorskip("distributed")
    reference = _outputs(serial_rows, tmp_path / "serial")
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        rows = run_sweep(make_tasks(**GRID, chunk=8), scheduler=cluster.scheduler_address)
        argv = ["sparse-sweep", "--sizes", "2,3,4", "--factors", "1,1.5,2", "--p-grid",
                "0.3,0.6,0.9", "--draws", "24", "--seed", "5", "--no-plot"]
        assert main([*argv, "--out", str(tmp_path / "cli-dask"),
                     "--scheduler", cluster.scheduler_address]) == 0
    assert _outputs(rows, tmp_path / "dask") == reference
    assert main([*argv, "--out", str(tmp_path / "cli-serial")]) == 0
    for name in ("cells.csv", "cells.md", "thresholds.csv", "thresholds.md"):
        assert (tmp_path / "cli-dask" / name).read_bytes() == \
            (tmp_path / "cli-serial" / name).read_bytes()
        if name.endswith(".csv"):      # the Markdown names the command, the CSV does not
            assert (tmp_path / "cli-dask" / name).read_bytes() == reference[name]


def test_counts_match_an_independent_recount(serial_rows):
    """Recount every draw of two cells with NetworkX on the dense pattern."""
    cells = {(c.d, c.factor, c.p): c for c in aggregate(serial_rows)}
    for d, factor, p in ((3, "1", "0.6"), (4, "1.5", "0.3"), (4, "2", "0.6")):
        (task,) = make_tasks(sizes=[d], factors=[factor], ps=[p], draws=24, chunk=24, seed=5)
        n, m = d * d, hidden_width(d, factor)
        inv = dead_fail = deficient = nnz = 0
        for t in range(24):
            _, mi, mo = _masks(task, t)
            nnz += int(mi.sum() + mo.sum())
            live = sum(1 for k in range(m) if mi[k].any() and mo[:, k].any())
            rank = structural_rank_networkx(_khatri_rao_pattern_dense(mi, mo))
            if rank == n:
                inv += 1
            elif live < n:
                dead_fail += 1
            else:
                deficient += 1
        c = cells[(d, factor, p)]
        assert (c.invertible, c.dead_failures, c.deficiency_failures, c.nnz) == (
            inv, dead_fail, deficient, nnz)
        assert c.draws == 24


def test_resume_skips_finished_tasks_and_survives_a_cut_line(serial_rows, tmp_path):
    tasks = make_tasks(**GRID, chunk=8)
    log = tmp_path / "tasks.jsonl"
    run_sweep(tasks[:10], log=log)
    with open(log, "a") as fh:                       # an interruption mid-line
        fh.write('{"seed": 5, "d": 4, "fac')
    assert len(read_task_log(log)) == 10
    seen = []
    rows = run_sweep(tasks, log=log, resume=True, progress=lambda done, total: seen.append(done))
    assert seen[0] == 10 and seen[-1] == len(tasks)  # ten tasks were not run again
    assert rows == serial_rows
    assert len(log.read_text().splitlines()) == len(tasks)
    # a resume of a complete log runs nothing
    seen.clear()
    assert run_sweep(tasks, log=log, resume=True, progress=lambda d, t: seen.append(d)) == rows
    assert seen == [len(tasks)]


def test_rows_are_json_and_seeded_by_task_keys():
    (task,) = make_tasks(sizes=[3], factors=["1"], ps=["0.5"], draws=6, chunk=6, seed=1)
    row = run_task(task)
    assert json.loads(json.dumps(row)) == row
    # splitting one task in two gives the same counts (seeds are per draw, not per task)
    a, b = make_tasks(sizes=[3], factors=["1"], ps=["0.5"], draws=6, chunk=3, seed=1)
    ra, rb = run_task(a), run_task(b)
    for key in ("invertible", "dead_failures", "deficiency_failures", "nnz", "dead_neurons"):
        assert ra[key] + rb[key] == row[key]


def test_threshold_is_the_start_of_the_final_run_of_good_points():
    def cell(p, inv):
        return Cell(0, 8, "1", p, "both", "", 64, 64, draws=100, invertible=inv)

    cells = [cell("0.2", 10), cell("0.3", 99), cell("0.4", 98), cell("0.5", 99), cell("0.6", 100)]
    (th,) = estimate_thresholds(cells)
    assert th.p_star == "0.5" and th.below.p == "0.4"
    sq, lg, lg2 = th.references
    assert lg2 == 2 * lg and abs(sq * sq - lg) < 1e-12
    (none,) = estimate_thresholds([cell("0.5", 90), cell("1", 98)])
    assert none.p_star is None


def test_grid_parsing_and_widths():
    assert parse_grid("0.05:0.2:0.05") == ["0.05", "0.1", "0.15", "0.2"]
    assert parse_grid("1,0.5") == ["1", "0.5"]
    assert [hidden_width(d, "1.5") for d in (1, 3, 5)] == [2, 14, 38]   # ties round up
    assert hidden_width(4, Fraction(2)) == 32
    for bad in ("0.1:0.5", "0.5:0.1:0.1", "x", "0.0000001"):
        with pytest.raises(InputError):
            parse_grid(bad)
    with pytest.raises(InputError):
        make_tasks(sizes=[2], factors=["1"], ps=["0"], draws=2)
    with pytest.raises(InputError):
        make_tasks(sizes=[2], factors=["0.5"], ps=["0.5"], draws=2)
    with pytest.raises(InputError):
        make_tasks(sizes=[2], factors=["1"], ps=["0.5"], draws=2, mask_side="left")
    with pytest.raises(InputError):
        make_tasks(sizes=[2], factors=["1"], ps=["0.5"], draws=2, values="gauss:8")


def test_mask_sides_mask_only_their_side():
    for side in ("input", "output", "both"):
        (task,) = make_tasks(sizes=[3], factors=["1"], ps=["0.5"], draws=1, mask_side=side)
        _, mi, mo = _masks(task, 0)
        assert mi.all() == (side == "output") and mo.all() == (side == "input")
    # the masks drawn for a side do not depend on the side choice
    both = _masks(make_tasks(sizes=[3], factors=["1"], ps=["0.5"], draws=1)[0], 0)
    inp = _masks(make_tasks(sizes=[3], factors=["1"], ps=["0.5"], draws=1,
                            mask_side="input")[0], 0)
    assert (both[1] == inp[1]).all()


def test_concrete_values_are_checked_on_invertible_patterns():
    tasks = make_tasks(sizes=[3], factors=["1", "2"], ps=["0.8"], draws=20, values="bits:40")
    for c in aggregate(run_sweep(tasks)):
        assert c.concrete_checked == c.invertible
        assert c.concrete_singular == 0       # probability ≤ 18/2^41 per draw
    # int:8 often leaves zeros on the support; singular draws are then possible but counted
    tasks = make_tasks(sizes=[2], factors=["1"], ps=["1"], draws=60, values="set:0,1")
    (c,) = aggregate(run_sweep(tasks))
    assert c.concrete_checked == 60 and 0 < c.concrete_singular < 60


def test_plot_is_deterministic(serial_rows, tmp_path):
    cells = aggregate(serial_rows)
    plot_transitions(cells, tmp_path / "a.png")
    plot_transitions(cells, tmp_path / "b.png")
    data = (tmp_path / "a.png").read_bytes()
    assert data.startswith(b"\x89PNG") and data == (tmp_path / "b.png").read_bytes()
    assert b"Software" not in data and b"matplotlib" not in data.lower()


def test_cli_sparse_sweep_and_resume(tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sparse-sweep", "--sizes", "2,3", "--factors", "1,2", "--p-grid", "0.4:1:0.3",
            "--draws", "10", "--chunk", "5", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "p*(d)" in text
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"cells.csv", "cells.md", "thresholds.csv", "thresholds.md", "transitions.png",
            "tasks.jsonl"} <= set(first)
    lines = (out / "tasks.jsonl").read_text().splitlines()
    (out / "tasks.jsonl").write_text("\n".join(lines[:3]) + "\n")
    assert main([*argv, "--resume", str(out / "tasks.jsonl"), "--jobs", "2"]) == 0
    capsys.readouterr()
    again = {p.name: p.read_bytes() for p in out.iterdir()}
    for name in ("cells.csv", "cells.md", "thresholds.csv", "thresholds.md", "transitions.png"):
        assert again[name] == first[name], name
    assert main(["sparse-sweep", "--p-grid", "0:1:0.5", "--out", str(out)]) == 2
    assert main(["sparse-sweep", "--resume", str(tmp_path / "missing.jsonl"),
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "does not exist" in err


def test_t4_is_registered():
    from exactnorm.outputs.tables.registry import TABLES
    from exactnorm.outputs.tables.sparse import table_t4

    assert TABLES["T4"] is table_t4
    np.testing.assert_equal(parse_grid("0.05:1:0.05")[-1], "1")
