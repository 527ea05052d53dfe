"""The claims checks are independent oracles: they import nothing from the core but the input
drawing, constants and types, and the one function under test.

A check that calls or copies the core code behind a sentence passes that code's mistakes. So each
``tests/claims/<page>.py`` may take from the app code (``core``, ``labkit``, ``labs``):

- anything from the modules that draw the link's inputs and hold its defaults and claim types
  (``core.inputs``, ``core.defaults``, ``labkit.claims``);
- from any other module, UPPER_CASE constants (the link's ladders and bounds) and CapWords
  names (types, and the settings the subject is called with);
- the page's entry functions, each used only inside ``view`` (the subject of the checks).

No such import may hide inside a function, and no check may repeat an app computation: the
``duplicates`` tool finds runs of lines a claims module shares with ``core/``, ``labkit/`` or
``labs/``.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ROOT / "tests" / "claims"
MODULES = sorted(p for p in CLAIMS.glob("*.py") if p.name != "__init__.py")
FREE = {"core.inputs", "core.defaults", "labkit.claims"}
APP = {"core", "labkit", "labs", "ui"}
CONSTANT = re.compile(r"^_?[A-Z][A-Z0-9_]*$")
TYPE = re.compile(r"^[A-Z][a-zA-Z0-9]*[a-z][a-zA-Z0-9]*$")
# ui.i18n renders texts (a check may compare a sentence as shown); nothing else from ui.
UI_ALLOWED = {"ui.i18n"}


def _core_imports(tree: ast.Module) -> list[tuple[ast.ImportFrom | ast.Import, bool]]:
    """Every import of app code (``core``, ``labkit``, ``labs``, ``ui``) in the module, and whether
    it sits at module level."""
    top = set(map(id, tree.body))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        if any(n.split(".")[0] in APP for n in names):
            found.append((node, id(node) in top))
    return found


def _users(tree: ast.Module, name: str) -> set[str]:
    """Names of the module-level functions and classes that mention ``name``."""
    users = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node)):
                users.add(node.name)
        elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node)):
            users.add("<module>")
    return users


def violations(source: str) -> list[str]:
    """What in a claims module breaks the import rule (empty when it keeps it)."""
    tree = ast.parse(source)
    problems = []
    for node, at_top in _core_imports(tree):
        where = f"line {node.lineno}"
        if not at_top:
            problems.append(f"{where}: import inside a function")
            continue
        if isinstance(node, ast.Import):
            problems.append(f"{where}: import the names, not the module")
            continue
        module = node.module or ""
        if module.startswith("ui"):
            if module not in UI_ALLOWED:
                problems.append(f"{where}: {module} is page code")
            continue
        if module in FREE:
            continue
        for alias in node.names:
            name = alias.asname or alias.name
            if CONSTANT.match(alias.name) or TYPE.match(alias.name):
                continue
            users = _users(tree, name)
            if users != {"view"}:
                problems.append(
                    f"{where}: {module}.{alias.name} is core code used by {sorted(users)}; "
                    "only `view` may call the subject"
                )
    return problems


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_claims_module_imports_only_inputs_types_and_its_subject(path: Path) -> None:
    assert violations(path.read_text()) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from core.inputs import make_input\ndef check(s, c): make_input(3)\n", 0),
        ("from labs.explorer import CHART_BUCKETS, Units\n", 0),
        ("from labs.explorer import explore\ndef view(s): return explore(s)\n", 0),
        ("from labs.explorer import explore\ndef check(s, c): explore(s)\n", 1),
        ("from core.norms import rms_norm\ndef view(s): return rms_norm(s)\n"
         "def check(s, c): rms_norm(s)\n", 1),
        ("def check(s, c):\n    from core.norms import rms_norm\n", 1),
        ("import core.norms\n", 1),
        ("from ui.fmt import num\n", 1),
        ("from ui.i18n import t\n", 0),
    ],
)  # fmt: skip
def test_the_rule_tells_a_copy_from_a_subject(source: str, expected: int) -> None:
    assert len(violations(source)) == expected


DUPLICATES = shutil.which("duplicates")
PAIR = re.compile(r"^D\d+\s+(\S+):\d+-\d+\s+~\s+(\S+):\d+-\d+(.*)$")


@pytest.mark.skipif(DUPLICATES is None, reason="the duplicates tool is not on this machine")
def test_no_claims_check_repeats_core_code() -> None:
    out = subprocess.run(
        [DUPLICATES, "--repo", str(ROOT), "--min-lines", "4", "--most", "200", "--seconds", "60"],
        capture_output=True, text=True, check=False, timeout=120,
    ).stdout  # fmt: skip
    copies = []
    for line in out.splitlines():
        match = PAIR.match(line.strip())
        if not match:
            continue
        a, b, tail = match.groups()
        claims = any(s.startswith("tests/claims/") for s in (a, b))
        core = any(s.startswith(("core/", "labkit/", "labs/")) for s in (a, b))
        if claims and core and "boilerplate" not in tail:
            copies.append(line.strip())
    assert copies == [], "claims checks that repeat core code:\n" + "\n".join(copies)
