"""App code stays readable: no function longer than a screen (who may import whom is
tests/test_architecture.py's).

A function longer than a screen usually hides two concepts; name them. Data tables are
module-level assignments, not functions, so they are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APP_DIRS = ("core", "labkit", "labs", "ui", "pages")
# About a screen of code, docstring included.
MAX_FUNCTION_LINES = 60
FILES = sorted(
    [ROOT / "app.py"] + [p for d in APP_DIRS for p in (ROOT / d).rglob("*.py")],
    key=lambda p: str(p),
)


def long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{node.name} ({length} lines, line {node.lineno})")
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_is_longer_than_a_screen(path: Path) -> None:
    assert not long_functions(path), long_functions(path)
