"""The folder tree is the map: core's top level is the norm library, each lab has its own package,
no file holds two ideas, no two modules are named alike, and no import goes round in a circle.

"core/'s top level is the norm library a reader came for; each lab (a page's numbers, training,
the inspector) is a subpackage named for what it holds. Two modules never share a stem. A file
past ~500 lines holds two ideas" (STYLE.md).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "ui", "viz", "pages", "serve", "benchmarks")
MAX_FILE_LINES = 500
MAX_LIBRARY_LINES = 3500
LABS = {"lab", "training", "inspector"}


def sources() -> list[Path]:
    return sorted(p for d in PACKAGES for p in (ROOT / d).rglob("*.py")) + [ROOT / "app.py"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sources()}


def imports(path: Path) -> set[str]:
    """Every project module ``path`` imports, at module level or inside a function."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            named = {f"{base}.{alias.name}" for alias in node.names}
            # ``from core import fast`` imports the module core.fast; the package itself only
            # where a name is not a module of it.
            found |= named if named <= MODULES.keys() else named | {base}
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant | ast.JoinedStr)
        ):
            # import_module(f"pages.{name}") may import any module under "pages".
            prefix = ast.unparse(node.args[0]).strip("'\"f").split("{")[0].rstrip(".")
            found |= {m for m in MODULES if m == prefix or m.startswith(prefix + ".")}
    return {name for name in found if name in MODULES and name != here}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles_lazy_imports_included() -> None:
    graph = {name: imports(path) for name, path in MODULES.items()}
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_ui_does_not_reach_into_pages() -> None:
    reach = {
        name: sorted(m for m in imports(p) if m.startswith("pages")) for name, p in MODULES.items()
    }
    assert {name: found for name, found in reach.items() if name.startswith("ui") and found} == {}


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_source_file_holds_two_ideas(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_FILE_LINES, f"{path.relative_to(ROOT)}: {lines} lines"


def test_cores_top_level_is_the_norm_library() -> None:
    top = [p for p in (ROOT / "core").glob("*.py")]
    lines = sum(len(p.read_text().splitlines()) for p in top)
    assert lines <= MAX_LIBRARY_LINES, lines
    packages = {p.name for p in (ROOT / "core").iterdir() if (p / "__init__.py").exists()}
    assert packages == LABS


def test_no_two_core_modules_are_named_alike() -> None:
    stems = defaultdict(list)
    for path in (ROOT / "core").rglob("*.py"):
        if path.name != "__init__.py":
            stems[path.stem.lstrip("_").removesuffix("s")].append(str(path.relative_to(ROOT)))
    assert {stem: paths for stem, paths in stems.items() if len(paths) > 1} == {}


def test_tests_import_their_helpers_one_way() -> None:
    """A test helper is imported as ``tests.<helper>``, never bare or through ``conftest``."""
    helpers = {p.stem for p in (ROOT / "tests").glob("*.py")}
    bare = [
        f"{path.name}:{node.lineno}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module in helpers
    ]
    assert bare == []
