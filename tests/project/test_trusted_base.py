"""The trusted base (docs/architecture.md, "The trusted base"): exactly the files listed here, the
checker's standard-library kernel and its python-flint arithmetics, for both document kinds; their
total size is held under a ceiling, so that the kernel grows only by a deliberate edit of this
test, and they import nothing outside the kernel but the standard library and python-flint."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: every module of the trusted kernel (one reader, one walk, one Budget, one Provenance)
TRUSTED = (
    "exactnorm/checker/__init__.py",
    "exactnorm/checker/__main__.py",
    "exactnorm/checker/arithmetic.py",
    "exactnorm/checker/boxes.py",
    "exactnorm/checker/budget.py",
    "exactnorm/checker/document.py",
    "exactnorm/checker/files.py",
    "exactnorm/checker/impossibility.py",
    "exactnorm/checker/impossibility_reading.py",
    "exactnorm/checker/kinds/__init__.py",
    "exactnorm/checker/kinds/affine.py",
    "exactnorm/checker/kinds/avgpool.py",
    "exactnorm/checker/kinds/base.py",
    "exactnorm/checker/kinds/conv.py",
    "exactnorm/checker/kinds/dense.py",
    "exactnorm/checker/kinds/globalavgpool.py",
    "exactnorm/checker/kinds/window.py",
    "exactnorm/checker/modular.py",
    "exactnorm/checker/numbers.py",
    "exactnorm/checker/protocol.py",
    "exactnorm/checker/provenance.py",
    "exactnorm/checker/reading.py",
    "exactnorm/checker/records.py",
    "exactnorm/checker/regenerate.py",
    "exactnorm/checker/schema.py",
    "exactnorm/checker/seed.py",
    "exactnorm/checker/topology.py",
    "exactnorm/checker/transformer.py",
    "exactnorm/checker/verdict.py",
    "exactnorm/checker/vocabulary.py",
    "exactnorm/checker/walk.py",
    "exactnorm/checker_flint/__init__.py",
    "exactnorm/checker_flint/arithmetic.py",
    "exactnorm/checker_flint/linear.py",
)

#: the ceiling of the trusted base, in lines of its files: 6,188 when impossibility documents had
#: a second reader, Budget and Provenance; 6,329 once they were rules of the one kernel (graph
#: targets, witness budgets and the hostile-document fixes included); 7,333 with the transformer
#: document kind (checker/transformer.py) and the provenance rules of version 3 (redraws by
#: structural rank, the canonical seed rule); 7,612 with the closed schema (checker/schema.py, the
#: key tables of every object of both document kinds, applied first as rule format): 7,950;
#: 8,018 with grouped convolutions (checker/kinds/window.py: a conv layer's ``group`` and its
#: kernel read as the block-diagonal kernel of the whole patch)
CEILING = 8_100


def _lines(path: str) -> int:
    return len((ROOT / path).read_text(encoding="utf-8").splitlines())


def test_the_trusted_files_are_exactly_the_kernel_packages():
    found = {p.relative_to(ROOT).as_posix() for folder in ("checker", "checker_flint")
             for p in (ROOT / "exactnorm" / folder).rglob("*.py")}
    assert found == set(TRUSTED), f"update TRUSTED: {sorted(found ^ set(TRUSTED))}"


def test_the_trusted_base_is_held_under_its_ceiling():
    total = sum(_lines(path) for path in TRUSTED)
    assert 0 < total <= CEILING, (f"the trusted base has {total:,} lines, above its ceiling of "
                                  f"{CEILING:,}: shrink it, or raise CEILING deliberately")


def _imports(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
    return out


def test_the_trusted_base_imports_only_itself_the_standard_library_and_flint():
    allowed_packages = {"flint", "exactnorm.checker", "exactnorm.checker_flint"}
    for path in TRUSTED:
        for name in _imports(path):
            top = name.split(".")[0]
            inside = any(name == p or name.startswith(p + ".") for p in allowed_packages)
            if path.startswith("exactnorm/checker/"):
                # the standard-library kernel: relative imports of itself only (level > 0)
                assert top in sys.stdlib_module_names or top == "__future__", (path, name)
            else:
                assert inside or top in sys.stdlib_module_names or top == "__future__", \
                    (path, name)
