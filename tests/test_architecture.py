"""The package's import layers, enforced by reading every module's imports (docs/architecture.md).

Data flows upward through the layers; a module may import its own layer and the layers below,
never one above::

    errors, exactnorm (package root)                                 0
    exact          rationals, linalg, padic, sampling, files         1
    model          network, targets, interop                         2
    constructions  common, theorem1, lowrank, tradeoff               3
    certificate, checker, checker_flint, regenerate                  4  (the trust boundary)
    analysis       structural, sweeps, detsystem, detpoly, …         5
    outputs        export, report, tables/                           6
    api, strategies                                                  7
    cli, commands, __main__                                          8

``checker.py`` and ``regenerate.py`` import only the standard library (they must stay readable
and runnable on their own). Every ``import`` statement counts, also inside functions and
``TYPE_CHECKING`` blocks: a lazy import does not make an upward dependency go away.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "exactnorm"

LAYER_OF_TOP = {
    "errors": 0,
    "exact": 1,
    "model": 2,
    "constructions": 3,
    "certificate": 4, "certificate_conv": 4, "certificate_reading": 4, "checker": 4,
    "checker_flint": 4, "regenerate": 4,
    "analysis": 5,
    "outputs": 6,
    "api": 7, "strategies": 7, "strategies_conv": 7,
    "cli": 8, "commands": 8, "__main__": 8,
}

#: the trusted kernel: every module of the checker package, and the shim at the old name
STANDARD_LIBRARY_ONLY = {"exactnorm.regenerate"} | {
    f"exactnorm.checker.{p.stem}" if p.stem != "__init__" else "exactnorm.checker"
    for p in (PACKAGE / "checker").glob("*.py")}

#: names the package root resolves lazily from ``exactnorm.api`` (``from exactnorm import certify``)
API_NAMES = {"certify", "check", "check_file", "tables", "sparse_sweep", "detpoly",
             "check_detpoly", "realizable", "export", "report", "load_target", "demo_target",
             "certificate_document", "save_certificate", "load_certificate", "plan_certify",
             "progress_bar", "CertifyResult", "ReportResult", "Verdict"}

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
                # only the standalone checker package imports its siblings relatively (a copy
                # of the folder runs with no exactnorm installed)
                if node.level != 1 or path.parent != PACKAGE / "checker":
                    raise AssertionError(f"{path}:{node.lineno}: relative import")
                out.append((f"exactnorm.checker.{node.module}" if node.module
                            else "exactnorm.checker", node.lineno))
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


def test_package_api_names_are_the_api_module_names():
    import exactnorm
    from exactnorm import api

    assert set(exactnorm._API_NAMES) == API_NAMES
    for name in API_NAMES:
        assert getattr(exactnorm, name) is getattr(api, name) and name in api.__all__


def test_import_exactnorm_is_light_and_api_names_resolve():
    mods = _imported_after("import exactnorm")
    assert mods == {"exactnorm"}
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
                       "MAX_CERTIFICATE_BYTES_CAP", "MIN_WORK",
                       "WORK_PER_BIT"}  # imported, not repeated
    assert set(_defaults.MIRRORS) | {"CONSTRUCTIONS"} | from_vocabulary == {
        n for n in vars(_defaults) if n.isupper() and n != "MIRRORS"}
