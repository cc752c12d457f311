"""The house: packages import one way, modules stay small and say what they own (docs/architecture.md)."""

import ast
from pathlib import Path

import pytest

import accelbench

PACKAGE = Path(accelbench.__file__).parent
# What each package may import besides itself and accelbench.errors: the one direction of docs/architecture.md.
ALLOWED = {
    "errors": set(),
    "config": set(),
    "core": {"config"},
    "store": {"config", "core"},
    "measure": {"config", "core", "store"},
    "analysis": {"config", "core", "store"},
    "report": {"config", "core", "store", "analysis"},
    "fleet": {"config", "core", "store", "measure"},
    "cli": {"config", "core", "store", "measure", "analysis", "report", "fleet"},
    "__init__": {"config", "measure"},
}
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_LINES = 450


def _package(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "accelbench" and len(parts) > 1 and (PACKAGE / parts[1]).exists() or \
                    parts[0] == "accelbench" and len(parts) > 1 and (PACKAGE / f"{parts[1]}.py").exists():
                found.add(parts[1])
    return found - {"errors"}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_packages_below_it(path):
    own = _package(path)
    wrong = _imported_packages(path) - ALLOWED[own] - {own}
    assert not wrong, f"{path.relative_to(PACKAGE)} ({own}) imports {sorted(wrong)}; allowed: {sorted(ALLOWED[own])}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_is_small_and_says_what_it_owns(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines (at most {MAX_LINES})"
    assert ast.get_docstring(ast.parse(path.read_text())), f"{path.relative_to(PACKAGE)} has no docstring"


def test_import_rule_catches_an_upward_import(tmp_path):
    bad = tmp_path / "x.py"
    bad.write_text('"""x"""\nfrom accelbench.report import plots\nimport accelbench.measure.study\n')
    assert _imported_packages(bad) == {"report", "measure"}
