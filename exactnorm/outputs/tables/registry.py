"""The registry of proof tables (SPEC §6) and the two things done with it: write and compare.

Every table is produced by a function in :data:`TABLES` that returns a
:class:`~exactnorm.outputs.tables.proof_table.ProofTable` (or a list of them); fixed seeds, no
timings, no absolute paths, nothing that depends on the BLAS build or the thread count.
``exactnorm tables`` writes them to ``proofs/``; ``exactnorm tables --check`` regenerates into a
temporary folder and compares byte for byte with what is checked in.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from exactnorm.errors import InputError
from exactnorm.exact.files import atomic_write_bytes
from exactnorm.outputs.tables.constructions import table_t2, table_t3
from exactnorm.outputs.tables.exact_vs_float import table_t7
from exactnorm.outputs.tables.proof_table import ProofTable
from exactnorm.outputs.tables.sparse import table_t4
from exactnorm.outputs.tables.sparse_chain import table_t8
from exactnorm.outputs.tables.symbolic import table_t5, table_t6
from exactnorm.outputs.tables.theorem1 import table_t1

__all__ = ["TABLES", "generate_tables", "compare_tables"]

#: key → function returning a ProofTable (or a list of them), in the order they are written
TABLES: dict[str, Callable[[], ProofTable | list[ProofTable]]] = {
    "T1": table_t1,
    "T4": table_t4,
    "T8": table_t8,
    "T5": table_t5,
    "T6": table_t6,
    "T7": table_t7,
    "T2": table_t2,
    "T3": table_t3,
}


def generate_tables(outdir: str | Path, only: Sequence[str] | None = None,
                    progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write the selected tables (all by default) into ``outdir``; returns the written paths."""
    keys = list(TABLES) if not only else list(only)
    unknown = [k for k in keys if k not in TABLES]
    if unknown:
        raise InputError(f"unknown table(s) {', '.join(unknown)}; known: {', '.join(TABLES)}")
    out = Path(outdir)
    written: list[Path] = []
    for key in keys:
        if progress:
            progress(key)
        made = TABLES[key]()
        for t in made if isinstance(made, list) else [made]:
            base = out / f"{t.key}_{t.slug}"
            for suffix, text in ((".md", t.markdown()), (".csv", t.csv()), (".tex", t.latex())):
                path = base.with_suffix(suffix)
                atomic_write_bytes(path, lambda fh, text=text: fh.write(text.encode()))
                written.append(path)
            if t.plot is not None:
                path = base.with_suffix(".png")
                t.plot(path)
                written.append(path)
    return written


def compare_tables(outdir: str | Path, only: Sequence[str] | None = None) -> list[str]:
    """Regenerate into a temporary folder; list files that differ from ``outdir`` or are missing.

    PNG files are compared too; plots are written with fixed metadata so that they are stable.
    """
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in generate_tables(tmp, only):
            mine = Path(outdir) / path.name
            if not mine.is_file():
                problems.append(f"{mine} is missing")
            elif mine.read_bytes() != path.read_bytes():
                problems.append(f"{mine} differs from a fresh regeneration")
    return problems


# ------------------------------------------------------------------ T1


