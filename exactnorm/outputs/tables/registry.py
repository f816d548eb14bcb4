"""The registry of proof tables (docs/model.md) and the two things done with it: write and compare.

Every table is produced by a function in :data:`TABLES` that returns a
:class:`~exactnorm.outputs.tables.proof_table.ProofTable` (or a list of them); fixed seeds, no
timings, no absolute paths, nothing that depends on the BLAS build or the thread count.
``exactnorm tables`` writes them to ``proofs/``; ``exactnorm tables --check`` regenerates into a
temporary folder and compares byte for byte with what is checked in.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from exactnorm.errors import InputError, require_extra
from exactnorm.exact.files import atomic_write
from exactnorm.outputs.tables.capacity import table_t11
from exactnorm.outputs.tables.constructions import table_t2, table_t3
from exactnorm.outputs.tables.conv import table_t9
from exactnorm.outputs.tables.exact_vs_float import table_t7
from exactnorm.outputs.tables.proof_table import ProofTable
from exactnorm.outputs.tables.resnet import table_t10
from exactnorm.outputs.tables.sparse import table_t4
from exactnorm.outputs.tables.sparse_chain import table_t8
from exactnorm.outputs.tables.symbolic import table_t5, table_t6
from exactnorm.outputs.tables.theorem1 import table_t1
from exactnorm.outputs.tables.transformer import table_t12

__all__ = ["TABLES", "PLOTTED", "generate_tables", "compare_tables"]

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
    "T9": table_t9,
    "T10": table_t10,
    "T11": table_t11,
    "T12": table_t12,
}

#: tables that write a PNG next to their text (need matplotlib, the ``plot`` extra)
PLOTTED = ("T4",)


def generate_tables(outdir: str | os.PathLike[str], only: Sequence[str] | None = None,
                    progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write the selected tables (all by default) into ``outdir``; returns the written paths."""
    keys = list(TABLES) if not only else list(only)
    unknown = [k for k in keys if k not in TABLES]
    if unknown:
        raise InputError(f"unknown table(s) {', '.join(unknown)}; known: {', '.join(TABLES)}")
    plotted = [k for k in keys if k in PLOTTED]
    if plotted:
        # before minutes of computation, not at the plot
        require_extra("matplotlib", f"the plot of table {', '.join(plotted)}")
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
                atomic_write(path, text)
                written.append(path)
            if t.plot is not None:
                path = base.with_suffix(".png")
                t.plot(path)
                written.append(path)
    return written


def compare_tables(outdir: str | os.PathLike[str], only: Sequence[str] | None = None) -> list[str]:
    """Regenerate into a temporary folder; list files that differ from ``outdir`` or are missing.

    Text files are compared byte for byte. A PNG is compared by its decoded pixels when the bytes
    differ: the plot is drawn with fixed metadata, but the zlib stream that compresses the same
    pixels depends on the zlib build bundled with the imaging library, not on anything exactnorm
    computes. Equal pixels (exactly, no tolerance) are the same plot.
    """
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in generate_tables(tmp, only):
            mine = Path(outdir) / path.name
            if not mine.is_file():
                problems.append(f"{mine} is missing")
            elif mine.read_bytes() != path.read_bytes() and not (
                    path.suffix == ".png" and _same_pixels(mine, path)):
                problems.append(f"{mine} differs from a fresh regeneration")
    return problems


def _same_pixels(a: Path, b: Path) -> bool:
    """Whether two PNG files decode to identical pixel arrays (shape, dtype and every value)."""
    import numpy as np
    from matplotlib import image

    try:
        pa, pb = image.imread(a), image.imread(b)
    except (OSError, ValueError, SyntaxError):
        return False
    return pa.shape == pb.shape and pa.dtype == pb.dtype and bool(np.array_equal(pa, pb))


# ------------------------------------------------------------------ T1


