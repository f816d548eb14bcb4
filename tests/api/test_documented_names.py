"""Every name the documentation gives exists: each dotted ``exactnorm.…`` name of README and
docs/*.md resolves (a module, or an attribute of one), each ``autofunction``/``autoclass`` of
the API reference too, every name a code block imports, and every function the user guide says
is an attribute of the package (``exactnorm.write_certificate`` was documented and missing)."""

from __future__ import annotations

import ast
import importlib
import re

import pytest

import exactnorm
from tests.helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOTTED = re.compile(r"(?<![\w./-])exactnorm(?:\.[A-Za-z_]\w*)+")


def format_names() -> set[str]:
    """The format, generator and seed-text names of the package (``exactnorm.shake256.v1``,
    ``b"exactnorm.seed.v1"``, …): strings of the code, not Python names."""
    found = set()
    for path in (ROOT / "exactnorm").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, bytes):
                value = value.decode(errors="replace")
            if isinstance(value, str) and re.fullmatch(r"exactnorm\.[\w.-]+", value):
                found.add(value)
    return found


def resolve(dotted: str) -> object:
    """The module or attribute ``dotted`` names; AttributeError/ImportError when it is none."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def documented() -> dict[str, str]:
    names: dict[str, str] = {}
    for path in DOCS:
        text = path.read_text()
        for name in DOTTED.findall(text):
            names.setdefault(name.rstrip("."), path.name)
        for block in re.findall(r"```python\n(.*?)```", text, re.S):
            for node in ast.walk(ast.parse(block)):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        "exactnorm"):
                    for alias in node.names:
                        names.setdefault(f"{node.module}.{alias.name}", path.name)
    return names


FORMATS = format_names()


@pytest.mark.parametrize("name,where", sorted(documented().items()))
def test_every_documented_name_exists(name, where):
    if any(f == name or f.startswith(name + ".") or f.startswith(name + "-") for f in FORMATS):
        return  # a format name such as exactnorm.shake256.v1 or exactnorm.impossibility
    try:
        resolve(name)
    except (AttributeError, ImportError) as exc:
        pytest.fail(f"{where} names {name}, which does not exist ({exc})")


def test_the_user_guide_names_are_attributes_of_the_package():
    """The verbs' table and the "plus …" list of the user guide, which says that all of them are
    attributes of the package."""
    text = (ROOT / "docs" / "user-guide.md").read_text()
    section = text[text.index("## Use the Python API and notebooks"):]
    section = section[:section.index("All of them are also attributes of the package")]
    functions = set(re.findall(r"^\| `[\w-]+` \| `(\w+)\(", section, re.M))
    functions |= set(re.findall(r", `(\w+)\(", section))
    plus = section[section.index("plus "):]
    functions |= set(re.findall(r"`(\w+)`", plus[:plus.index("(")]))
    assert {"certify", "check_file", "write_certificate", "target_of"} <= functions
    for name in functions:
        assert getattr(exactnorm, name) is getattr(exactnorm.api, name), name


def test_the_resolver_can_fail():
    with pytest.raises((AttributeError, ImportError)):
        resolve("exactnorm.api.no_such_function")
    with pytest.raises((AttributeError, ImportError)):
        resolve("exactnorm.no_such_module.x")
    assert resolve("exactnorm.api.write_certificate") is exactnorm.api.write_certificate
