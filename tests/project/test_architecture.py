"""The package's import layers, enforced by reading every module's imports (docs/architecture.md).

Data flows upward through the layers; a module may import its own layer and the layers below,
never one above::

    errors, version, exactnorm (package root)                        0
    exact          rationals, linalg, padic, sampling, files, parallel   1
    model          network, kinds/, targets, interop, loading        2
    constructions  common, theorem1, lowrank, tradeoff, plan, kinds/ 3
    certificate/, checker/, checker_flint                            4  (the trust boundary)
    analysis       structural, sweeps, detsystem, detpoly, …         5
    outputs        export, batchnorm, report, tables/                6
    api, strategies/                                                 7
    cli, commands, __main__                                          8

The ``checker`` package imports only the standard library (it must stay readable and runnable on
its own, as a copied folder). Every ``import`` statement counts, also inside functions and
``TYPE_CHECKING`` blocks: a lazy import does not make an upward dependency go away.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "exactnorm"

LAYER_OF_TOP = {
    "errors": 0, "version": 0,
    "exact": 1,
    "model": 2,
    "constructions": 3,
    "certificate": 4, "checker": 4,
    "checker_flint": 4,
    "analysis": 5,
    "outputs": 6,
    "api": 7, "strategies": 7,
    "cli": 8, "commands": 8, "__main__": 8,
}

#: the trusted kernel: every module of the checker package
STANDARD_LIBRARY_ONLY = {
    ".".join(["exactnorm", *p.relative_to(PACKAGE).with_suffix("").parts]).removesuffix(
        ".__init__") for p in (PACKAGE / "checker").rglob("*.py")}

#: names the package root resolves lazily from ``exactnorm.api`` (``from exactnorm import certify``)
API_NAMES = {"CONSTRUCTIONS", "certify", "plan_certify", "certify_target", "factors_of",
             "CertifyPlan", "CertifyResult", "Verdict", "ReportResult", "ExportResult",
             "progress_bar", "target_of", "require_version", "check", "check_file", "check_bytes",
             "tables", "TablesResult", "sparse_sweep", "SweepResult", "detpoly", "check_detpoly",
             "DetpolyResult", "realizable", "capacity", "CapacityResult", "plan_capacity",
             "CapacityPlan", "export", "report", "demo_target", "load_target", "load_frozen",
             "frozen_of", "Box", "certificate_document", "save_certificate", "write_certificate",
             "load_certificate", "plan_transformer", "certify_transformer", "is_transformer_file",
             "TransformerResult"}

#: upward imports that live in files another change owns; each entry must still be present (the
#: test fails once it is fixed, so that the entry is removed) — fixing them is listed in the
#: integration notes of docs/architecture.md
KNOWN_UPWARD: set[tuple[str, str]] = set()


#: the package root is a PEP 562 façade: its ``__getattr__`` hands out the API names on first
#: access (``from exactnorm import certify``) — the one import that may point up, from the root only
FACADE = ("exactnorm", "exactnorm.api")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> int:
    parts = module.split(".")
    if parts == ["exactnorm"] or module == "exactnorm.checker.vocabulary":
        # the format's one vocabulary: constants only, imports nothing; every layer names the
        # format's words and limits from it (its package imports only the standard library)
        return 0
    return LAYER_OF_TOP[parts[1]]


def imports_of(path: Path) -> list[tuple[str, int]]:
    """Every module imported by ``path`` as ``(module, line)``, with ``from exactnorm import x``
    resolved to the submodule ``exactnorm.x`` (or to ``exactnorm.api`` for a lazy API name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # only the standalone checker package (its kinds/ included) imports its
                # siblings relatively (a copy of the folder runs with no exactnorm installed)
                here = ["exactnorm", *path.parent.relative_to(PACKAGE).parts]
                base = here[:len(here) - node.level + 1]
                if here[:2] != ["exactnorm", "checker"] or base[:2] != here[:2]:
                    raise AssertionError(f"{path}:{node.lineno}: relative import")
                out.append((".".join(base + ([node.module] if node.module else [])),
                            node.lineno))
                continue
            base = node.module or ""
            if base == "exactnorm":
                for alias in node.names:
                    if alias.name in API_NAMES:
                        out.append(("exactnorm.api", node.lineno))
                    elif (PACKAGE / alias.name).exists() \
                            or (PACKAGE / f"{alias.name}.py").exists():
                        out.append((f"exactnorm.{alias.name}", node.lineno))
                    else:
                        out.append(("exactnorm", node.lineno))
            else:
                out.append((base, node.lineno))
    return out


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer():
    for path in MODULES:
        layer(module_name(path))  # KeyError names a new top-level module without a layer


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_upward_imports(path):
    me = module_name(path)
    mine = layer(me)
    bad = []
    for target, line in imports_of(path):
        ours = target == "exactnorm" or target.startswith("exactnorm.")
        if ours and layer(target) > mine and (me, target) not in KNOWN_UPWARD \
                and (me, target) != FACADE:
            bad.append(f"{path.relative_to(ROOT)}:{line} imports {target} "
                       f"(layer {layer(target)} > {mine})")
    assert not bad, "\n".join(bad)


def test_known_upward_imports_still_exist():
    for me, target in KNOWN_UPWARD:
        path = PACKAGE.joinpath(*me.split(".")[1:]).with_suffix(".py")
        assert any(t == target for t, _ in imports_of(path)), \
            f"{me} no longer imports {target}: remove it from KNOWN_UPWARD"


@pytest.mark.parametrize("module", sorted(STANDARD_LIBRARY_ONLY))
def test_standalone_modules_import_only_the_standard_library(module):
    path = PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")
    if not path.exists():
        path = PACKAGE.joinpath(*module.split(".")[1:], "__init__.py")
    # the standalone modules may import each other (the checker regenerates frozen weights with
    # the reference generator), nothing else of the package
    foreign = sorted({t for t, _ in imports_of(path)
                      if t.split(".")[0] not in sys.stdlib_module_names
                      and t not in STANDARD_LIBRARY_ONLY
                      and f"exactnorm.{t}" not in STANDARD_LIBRARY_ONLY})
    assert not foreign, f"{module} imports {foreign}"


def test_layer_check_can_fail(tmp_path):
    """The checker of this file rejects an upward and a lazy upward import (mutation)."""
    fake = tmp_path / "exactnorm" / "exact" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("import math\n\ndef f():\n    from exactnorm.api import certify\n")
    found = [t for t, _ in imports_of(fake)]
    assert found == ["math", "exactnorm.api"]
    assert layer("exactnorm.api") > layer("exactnorm.exact.bad")
    fake.write_text("from exactnorm import certify, __version__\n")
    assert [t for t, _ in imports_of(fake)] == ["exactnorm.api", "exactnorm"]


def _imported_after(code: str) -> set[str]:
    probe = (f"import sys\n{code}\n"
             "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('sympy', 'matplotlib', 'flint', 'numpy', 'scipy', 'exactnorm'))))")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=120)
    return set(res.stdout.split())


def test_realizable_does_not_import_sympy():
    mods = _imported_after("from exactnorm.cli import main\n"
                           "main(['realizable', '--d-in', '2', '--d-out', '2', '--width', '3'])")
    assert "exactnorm.analysis.realizability" in mods
    assert not any(m.split(".")[0] == "sympy" for m in mods)


def test_a_dry_run_imports_what_the_plan_uses(tmp_path):
    """``certify --dry-run`` of a model file reads it and plans (exactnorm.api resolves its names
    on first use): the checker's verbs, the exports, reports, capacity and the transformer
    reader are not imported."""
    pytest.importorskip("onnx")
    import onnx

    from tests.model.resnet_onnx import small_resnet_onnx

    path = tmp_path / "resnet.onnx"
    onnx.save(small_resnet_onnx(seed=0), str(path))
    mods = _imported_after("from exactnorm.cli import main\n"
                           f"assert main(['certify', {str(path)!r}, '--box', '0:1', "
                           "'--dry-run']) == 0")
    assert {"exactnorm.constructions.plan", "exactnorm.model.interop.onnx"} <= mods
    unused = {m for m in mods if m.startswith((
        "exactnorm.api._check", "exactnorm.api._capacity", "exactnorm.api._outputs",
        "exactnorm.api._transformer", "exactnorm.outputs", "exactnorm.analysis",
        "exactnorm.model.interop.transformer", "exactnorm.constructions.transformer"))}
    assert not unused, sorted(unused)


def test_package_api_names_are_the_api_module_names():
    import exactnorm
    from exactnorm import api

    assert set(exactnorm._API_NAMES) == API_NAMES == set(api.__all__)
    for name in API_NAMES:
        assert getattr(exactnorm, name) is getattr(api, name) and name in api.__all__


def test_import_exactnorm_is_light_and_api_names_resolve():
    mods = _imported_after("import exactnorm")
    assert mods == {"exactnorm", "exactnorm.version"}  # the root and its leaf, nothing heavy
    mods = _imported_after("from exactnorm import certify, check, load_target\n"
                           "assert certify.__module__ == 'exactnorm.api'\n"
                           "assert check.__module__ == 'exactnorm.api'")
    assert "exactnorm.api" in mods and "sympy" not in mods


# ------------------------------------------------------------------- the API mirrors the CLI


def test_every_verb_has_its_api_function():
    from exactnorm import api
    from exactnorm.cli import COMMAND_MODULES

    for name in COMMAND_MODULES:
        verb = name.rsplit(".", 1)[1]
        assert callable(getattr(api, verb, None)), f"exactnorm.api.{verb} is missing"
        assert verb in api.__all__


VERBS = sorted(name.rsplit(".", 1)[1] for name in __import__(
    "exactnorm.cli", fromlist=["COMMAND_MODULES"]).COMMAND_MODULES)


def test_every_verb_is_covered():
    assert {"certify", "check", "export", "report", "tables", "sparse_sweep", "detpoly",
            "realizable"} <= set(VERBS)


@pytest.mark.parametrize("verb", VERBS)
def test_commands_only_parse_call_and_print(verb):
    """Every command module reaches the mathematics only through exactnorm.api."""
    path = PACKAGE / "commands" / f"{verb}.py"
    forbidden = ("exactnorm.checker", "exactnorm.analysis.realizability",
                 "exactnorm.analysis.detpoly", "exactnorm.analysis.witnesses",
                 "exactnorm.constructions", "exactnorm.outputs", "exactnorm.exact",
                 "exactnorm.model", "exactnorm.certificate", "exactnorm.analysis")
    used = [t for t, _ in imports_of(path) if t.startswith(forbidden)]
    assert not used, f"commands/{verb}.py imports {used}"
    assert "exactnorm.api" in [t for t, _ in imports_of(path)]


# ------------------------------------------------------------------ a light command line

HEAVY = ("numpy", "flint", "scipy", "sympy", "matplotlib")


@pytest.mark.parametrize("argv", [
    ["--help"], ["certify", "--help"], ["check", "--help"], ["export", "--help"],
    ["certify", "--jobs", "x"], ["certify", "--no-such-flag"], ["check"], ["frobnicate"],
])
def test_help_and_argument_errors_import_nothing_heavy(argv):
    """``exactnorm --help`` and a usage error must not pay for FLINT, NumPy or SciPy."""
    probe = ("import sys\nfrom exactnorm.cli import main\n"
             f"code = main({argv!r})\n"
             "heavy = sorted({m.split('.')[0] for m in sys.modules} & set(" + repr(HEAVY) + "))\n"
             "sys.stderr.write('HEAVY=' + ','.join(heavy) + ' CODE=' + str(code) + '\\n')")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=True)
    line = [t for t in res.stderr.splitlines() if t.startswith("HEAVY=")][-1]
    heavy, code = line[len("HEAVY="):].split(" CODE=")
    assert heavy == "", f"{argv} imported {heavy}"
    assert int(code) == (0 if "--help" in argv else 2)


def test_the_light_probe_sees_heavy_imports():
    """Mutation of the test above: a verb that runs does import NumPy and FLINT."""
    mods = _imported_after("from exactnorm.cli import main\nmain(['certify', '--help'])")
    assert not {m.split(".")[0] for m in mods} & set(HEAVY)
    mods = _imported_after("from exactnorm.cli import main\n"
                           "main(['check', 'no-such-file.json'])")
    assert {"numpy", "flint"} <= {m.split(".")[0] for m in mods}


def test_cli_defaults_mirror_the_library():
    """The parsers' defaults (repeated so that --help stays light) equal the library's."""
    import importlib

    from exactnorm.api import CONSTRUCTIONS
    from exactnorm.commands import _defaults

    for name, (module, attr) in _defaults.MIRRORS.items():
        assert getattr(_defaults, name) == getattr(importlib.import_module(module), attr), name
    assert tuple(sorted(CONSTRUCTIONS)) == _defaults.CONSTRUCTIONS
    from_vocabulary = {"DEFAULT_MAX_CERTIFICATE_BYTES", "DEFAULT_MAX_DIGITS", "DEFAULT_MAX_WORK",
                       "MAX_CERTIFICATE_BYTES_CAP", "MIN_WORK", "OUTPUT_SCALES",
                       "WORK_PER_BIT"}  # imported, not repeated
    assert set(_defaults.MIRRORS) | {"CONSTRUCTIONS"} | from_vocabulary == {
        n for n in vars(_defaults) if n.isupper() and n != "MIRRORS"}


# ------------------------------------------------------------------ import hygiene (issue 31)
#
# Each debt below is listed where it still exists; a test fails when a listed entry is gone, so
# the lists shrink with the fixes and never hide a new debt.

#: strongly connected components of the import graph (module-level and function-level imports,
#: the façade edge excepted) that still exist
KNOWN_CYCLES: set[frozenset[str]] = set()

#: ``(importer, module, name)``: private names imported from another module
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str, str]] = set()

#: at most this many ``.py`` files directly in the package (``__init__``, ``__main__`` included)
MAX_ROOT_MODULES = 6
#: root modules above that number that still have to move into a package
KNOWN_ROOT_SURPLUS: set[str] = set()

MAX_MODULE_LINES = 700
#: modules still over the limit (owned by another change)
KNOWN_LONG_MODULES: set[str] = set()


def _module_index() -> dict[str, Path]:
    return {module_name(p): p for p in MODULES}


def package_imports(path: Path, modules: dict[str, Path], me: str | None = None
                    ) -> list[tuple[str, str | None, bool]]:
    """Every import of a package module in ``path`` as ``(module, name, in_function)``.

    ``from a.b import c`` names the submodule ``a.b.c`` when there is one (else ``a.b`` with
    name ``c``); relative imports (the checker package's) are resolved; imports inside
    functions count (``in_function``), ``TYPE_CHECKING`` blocks too.
    """
    me = me or module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[tuple[str, str | None, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda))
            if isinstance(child, ast.Import):
                out.extend((a.name, None, inner) for a in child.names
                           if a.name.split(".")[0] == "exactnorm")
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.rsplit(".", child.level - 1)[0] if child.level > 1 \
                        else package
                    base = f"{base}.{child.module}" if child.module else base
                else:
                    base = child.module or ""
                if base.split(".")[0] != "exactnorm":
                    continue
                for a in child.names:
                    sub = f"{base}.{a.name}"
                    out.append((sub, None, inner) if sub in modules else (base, a.name, inner))
            visit(child, inner)

    visit(tree, False)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module → the package modules it imports (the façade's lazy API edge excepted)."""
    modules = _module_index()
    graph = {m: {t for t, _, _ in package_imports(p, modules) if t in modules and t != m}
             for m, p in modules.items()}
    graph[FACADE[0]].discard(FACADE[1])
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.add(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.add(frozenset(component))
    return found


def test_cycle_finder_can_fail():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert cycles(graph) == {frozenset("abc")}
    assert cycles({"a": {"b"}, "b": set()}) == set()


def test_no_import_cycles():
    found = cycles(import_graph())
    new = found - KNOWN_CYCLES
    assert not new, f"import cycles: {[sorted(c) for c in new]}"
    gone = KNOWN_CYCLES - found
    assert not gone, f"fixed, remove from KNOWN_CYCLES: {[sorted(c) for c in gone]}"


def private_imports() -> set[tuple[str, str, str]]:
    modules = _module_index()
    return {(module_name(p), t, name) for p in MODULES
            for t, name, _ in package_imports(p, modules)
            if name is not None and name.startswith("_") and not name.startswith("__")}


def test_no_private_names_imported_across_modules():
    found = private_imports()
    assert not found - KNOWN_PRIVATE_IMPORTS, sorted(found - KNOWN_PRIVATE_IMPORTS)
    gone = KNOWN_PRIVATE_IMPORTS - found
    assert not gone, f"fixed, remove from KNOWN_PRIVATE_IMPORTS: {sorted(gone)}"


def test_private_import_finder_can_fail(tmp_path):
    fake = PACKAGE / "exact" / "linalg.py"
    found = package_imports(fake, _module_index())
    assert ("exactnorm.errors", "ShapeError", False) in found
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from exactnorm.certificate import _weight\n")
    assert ("exactnorm.certificate", "_weight", True) in \
        package_imports(probe, {"exactnorm.certificate": PACKAGE}, "exactnorm.exact.probe")


def test_at_most_six_modules_at_the_package_root():
    root = {p.name for p in PACKAGE.glob("*.py")}
    assert len(root - KNOWN_ROOT_SURPLUS) <= MAX_ROOT_MODULES, sorted(root)
    assert root >= KNOWN_ROOT_SURPLUS, \
        f"moved, remove from KNOWN_ROOT_SURPLUS: {sorted(KNOWN_ROOT_SURPLUS - root)}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_module_over_700_lines(path):
    rel = str(path.relative_to(ROOT))
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if rel in KNOWN_LONG_MODULES:
        assert lines > MAX_MODULE_LINES, f"{rel} is short now: remove it from KNOWN_LONG_MODULES"
    else:
        assert lines <= MAX_MODULE_LINES, f"{rel} has {lines} lines"


#: command modules (by file) that still reach below the API
KNOWN_COMMAND_EXCEPTIONS: set[str] = set()


@pytest.mark.parametrize("path", sorted((PACKAGE / "commands").glob("[!_]*.py")),
                         ids=lambda p: p.stem)
def test_every_command_module_only_parses_calls_and_prints(path):
    """Every file of commands/ (not only the registered verbs) reaches the mathematics only
    through exactnorm.api."""
    forbidden = ("exactnorm.checker", "exactnorm.constructions", "exactnorm.outputs",
                 "exactnorm.exact", "exactnorm.model", "exactnorm.certificate",
                 "exactnorm.analysis")
    used = [t for t, _ in imports_of(path) if t.startswith(forbidden)]
    if path.stem in KNOWN_COMMAND_EXCEPTIONS:
        assert used, f"commands/{path.name} is clean: remove it from KNOWN_COMMAND_EXCEPTIONS"
    else:
        assert not used, f"commands/{path.name} imports {used}"


#: the one module that starts worker processes (``map_tasks``)
PROCESS_POOL_MODULE = "exactnorm.exact.parallel"


def test_one_process_pool_function_for_the_whole_package():
    """Only exact/parallel.py imports concurrent.futures or multiprocessing; everyone else goes
    through its map_tasks (order, chunking, Dask and pickling rules in one place)."""
    pools = ("concurrent.futures", "multiprocessing")
    users = set()
    for path in MODULES:
        for target, _ in imports_of(path):
            if target.startswith(pools):
                users.add(module_name(path))
    assert users == {PROCESS_POOL_MODULE}, sorted(users)
