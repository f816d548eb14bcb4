"""Kind words, kind classes and kind attributes live in the kind modules: a mechanical guard
against dispatch sites growing back.

An AST scan of the package: a string constant equal to a word of the format's ``LAYER_KINDS``
(docstrings excepted), an ``isinstance`` against a kind's operator class, and a ``getattr`` or
``hasattr`` probe of a kind attribute (a constant name of an attribute of an operator class or of
a role: ``getattr(layer, "geometry", None)`` asks which kind the layer is) may appear only in a
``*/kinds/*`` module, in ``model/operators/`` (the kinds of the model), or in
``checker/vocabulary.py``. ``KNOWN_SITES`` lists the modules that still have such sites; their
counts must match exactly, so a fix lowers the number there and a new site fails the test.

The same for the measure of issue 31, ``grep -rn "kind ==\\|kind !=\\|kind in ("`` outside the
kind modules: the word ``kind`` there names a layer kind or a skip's route kind of the format,
never a distribution's law (``Distribution.law``, ``DrawRecord.law``), a numpy dtype
(``np.issubdtype``), an ONNX attribute type or a witness, so a new line of it is a new dispatch
site.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from exactnorm.checker.vocabulary import LAYER_KINDS
from exactnorm.model import layers as roles
from exactnorm.model.operators import OPERATORS

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "exactnorm"

#: module → kind sites still there (strings, isinstance checks, probes); shrink as they are fixed
KNOWN_SITES: dict[str, int] = {
}

#: module → lines of the issue's ``kind ==``/``kind !=``/``kind in (`` measure still there (at
#: most; lower it when a site goes): only a skip's route, ``Skip.kind``, the format's own field
KNOWN_KIND_COMPARISONS = {
    "exactnorm/outputs/report.py": 1,           # Skip.kind (the format's skip field)
    "exactnorm/model/routes.py": 4,             # Skip.kind: its validation, entries, float copy
}

#: the issue's grep, ``kind ==\|kind !=\|kind in (``
KIND_COMPARISON = re.compile(r"kind ==|kind !=|kind in \(")

KIND_CLASSES = {cls.__name__ for cls in OPERATORS.values()}

#: names of the attributes of the operators and of the roles, but the two every layer has had
#: since before the kinds (and that name other objects' attributes too: a scikit-learn model's
#: ``activation``)
KIND_ATTRIBUTES = {name for cls in (*OPERATORS.values(), roles.TargetLayer, roles.FrozenLayer,
                                    roles.FloatLayer)
                   for name in (*dir(cls), *getattr(cls, "__dataclass_fields__", {}))
                   if not name.startswith("_")} - {"activation", "input"}


def _allowed(rel: str) -> bool:
    return "/kinds/" in rel or rel.startswith("exactnorm/model/operators/") \
        or rel == "exactnorm/checker/vocabulary.py"


def kind_sites(path: Path, words: set[str], classes: set[str],
               attributes: set[str] = frozenset()) -> list[tuple[int, str]]:
    """``(line, what)`` of every kind word constant (not a docstring), every ``isinstance``
    against a kind class and every ``getattr``/``hasattr`` of a constant kind attribute in
    ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value in words and id(node) not in docstrings:
            found.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "isinstance" and len(node.args) == 2:
            second = node.args[1]
            items = second.elts if isinstance(second, ast.Tuple) else [second]
            names = {n.id if isinstance(n, ast.Name) else getattr(n, "attr", "") for n in items}
            if names & classes:
                found.append((node.lineno, f"isinstance(…, {', '.join(sorted(names))})"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant) and node.args[1].value in attributes:
            found.append((node.lineno, f"{node.func.id}(…, {node.args[1].value!r})"))
    return sorted(found)


def test_kind_words_classes_and_probes_live_in_kind_modules():
    counts: Counter[str] = Counter()
    where: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if _allowed(rel):
            continue
        sites = kind_sites(path, set(LAYER_KINDS), KIND_CLASSES, KIND_ATTRIBUTES)
        if sites:
            counts[rel] = len(sites)
            where[rel] = sites
    new = {rel: where[rel] for rel in counts if rel not in KNOWN_SITES}
    assert not new, f"kind dispatch outside the kind modules: {new}"
    changed = {rel: (KNOWN_SITES[rel], counts.get(rel, 0)) for rel in KNOWN_SITES
               if counts.get(rel, 0) != KNOWN_SITES[rel]}
    assert not changed, f"update KNOWN_SITES (known, found): {changed}"


def test_the_scan_can_fail(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('"""conv"""\n\ndef f(layer):\n    """dense"""\n'
                     '    if isinstance(layer.operator, (Conv, int)):\n'
                     '        return "avgpool"\n'
                     '    g = getattr(layer, "geometry", None) or hasattr(layer, "gamma")\n'
                     '    getattr(model, "coefs_", None), getattr(layer, name)\n'
                     '    return layer.kind == "dense"\n')
    found = kind_sites(probe, set(LAYER_KINDS), KIND_CLASSES, KIND_ATTRIBUTES)
    assert [what for _, what in found] == ["isinstance(…, Conv, int)", "'avgpool'",
                                           "getattr(…, 'geometry')", "hasattr(…, 'gamma')",
                                           "'dense'"]


def test_the_kind_attributes_are_the_operators_and_the_roles():
    assert {"geometry", "groups", "input_shape", "windows", "gamma", "record", "output_shape",
            "weight", "drawn_columns", "stability"} <= KIND_ATTRIBUTES
    assert "activation" not in KIND_ATTRIBUTES


@pytest.mark.parametrize("cls", sorted(KIND_CLASSES))
def test_every_kind_class_is_defined_in_a_kind_module(cls):
    module = next(kind_cls.__module__ for kind_cls in OPERATORS.values()
                  if kind_cls.__name__ == cls)
    assert module.startswith("exactnorm.model.operators."), module


def kind_comparisons(path: Path) -> list[int]:
    """Lines of ``path`` that the issue's grep lists."""
    return [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if KIND_COMPARISON.search(line)]


def test_kind_comparisons_are_layer_or_route_kinds_only():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if _allowed(rel):
            continue
        lines = kind_comparisons(path)
        if len(lines) > KNOWN_KIND_COMPARISONS.get(rel, 0):
            found[rel] = lines
    assert not found, f"new kind comparisons outside the kind modules (name the concept): {found}"


def test_the_comparison_scan_can_fail(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('if d.kind == "set":\n    pass\nif arr.dtype.kind in ("f",):\n    pass\n'
                     'if kind != "z" or law == "set" or np.issubdtype(a, np.floating):\n'
                     '    pass\n')
    assert kind_comparisons(probe) == [1, 3, 5]
