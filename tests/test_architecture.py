"""The folder tree is the map (docs/architecture.md): core's top level is the norm library, each
lab is a folder of labs/, what the labs share is labkit/, and the imports go one way between them.
No file holds two ideas, no import goes round in a circle, no module is imported by a name computed
at run time, and importing the library sets no environment variable.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "labkit", "labs", "ui", "pages", "serve", "benchmarks")
MAX_FILE_LINES = 500
MAX_LIBRARY_LINES = 3500
# Who may import whom (docs/architecture.md, "Who may import whom"): a module's layer is its
# top-level package, and a lab's module is a model, its figures or a section of its page.
MAY_IMPORT = {
    "app": {"ui", "pages"},
    "pages": {"ui", "labs", "labkit", "core"},
    "model": {"labs", "labkit", "core"},
    "figures": {"labs", "labkit", "core"},
    "section": {"ui", "serve", "labs", "labkit", "core"},
    "ui": {"ui", "labkit", "core"},
    "labkit": {"labkit", "core"},
    "serve": {"serve"},
    "core": {"core"},
    "benchmarks": {"benchmarks", "ui", "serve", "labs", "labkit", "core"},
}
# The libraries that draw: only a section (and ui, pages, the app) draws with Streamlit, only
# figures (and labkit.style) build Plotly figures.
MAY_DRAW = {"section": {"streamlit", "plotly"}, "figures": {"plotly"}, "labkit": set()}


def sources() -> list[Path]:
    return sorted(p for d in PACKAGES for p in (ROOT / d).rglob("*.py")) + [ROOT / "app.py"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sources()}


def layer(name: str) -> str:
    """``name``'s row of :data:`MAY_IMPORT`: its top-level package, or for a lab's module its role
    by its name (``figures``, ``*_figures``; ``*_section``; else a model)."""
    top, _, rest = name.partition(".")
    if top != "labs":
        return top
    stem = rest.rpartition(".")[2]  # a lab's __init__ (and labs') is a model
    if stem == "figures" or stem.endswith("_figures"):
        return "figures"
    return "section" if stem.endswith("_section") else "model"


def package(name: str) -> str:
    """The package a module belongs to for the circle check: a lab's folder, else its top level."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "labs" and len(parts) > 2 else parts[0]


def import_calls(tree: ast.AST) -> Iterator[tuple[ast.Call, str]]:
    """Every ``import_module(...)`` or ``__import__(...)`` call in ``tree``, with the function it
    is in (``""`` at module level)."""
    owner: dict[int, str] = {}
    for node in ast.walk(tree):  # outer functions first, so the innermost one is kept
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            owner.update((id(inner), node.name) for inner in ast.walk(node))
    for node in ast.walk(tree):
        name = getattr(node, "func", None)
        if getattr(name, "attr", getattr(name, "id", "")) in ("import_module", "__import__"):
            yield node, owner.get(id(node), "")


def literal_name(call: ast.Call) -> str | None:
    """The module a call imports, where its first argument is a string literal."""
    first = call.args[0] if call.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def imports_in(source: str, here: str, *, package: bool = False) -> set[str]:
    """Every project module the module ``here`` (``source``) imports: at module level or inside a
    function, by an import statement or by ``import_module``/``__import__`` with a literal name."""
    parent = here if package else here.rpartition(".")[0]
    found = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = parent.split(".")[: len(parent.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            named = {f"{base}.{alias.name}" for alias in node.names}
            # ``from core import fast`` imports the module core.fast; the package itself only
            # where a name is not a module of it.
            found |= named if named <= MODULES.keys() else named | {base}
    found |= {name for call, _ in import_calls(tree) if (name := literal_name(call))}
    return {name for name in found if name in MODULES and name != here}


def imports(path: Path) -> set[str]:
    return imports_in(path.read_text(), module_name(path), package=path.name == "__init__.py")


def computed_imports(source: str, here: str) -> list[str]:
    """``module.function:line`` of every import in ``source`` by a name that is not a literal."""
    return [
        f"{here}.{function}:{call.lineno}" if function else f"{here}:{call.lineno}"
        for call, function in import_calls(ast.parse(source))
        if literal_name(call) is None
    ]


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


def test_no_circles_between_packages_or_labs() -> None:
    """Between the top-level packages and between the labs (``labs.residual`` reads the training
    lab's checkpoints, so nothing in ``labs.training`` imports ``labs.residual``)."""
    graph = defaultdict(set)
    for name, path in MODULES.items():
        graph[package(name)] |= {package(m) for m in imports(path)} - {package(name)}
    assert cycles(graph) == []


def test_every_import_goes_the_way_the_map_allows() -> None:
    found = {
        name: sorted(m for m in imports(path) if m.split(".")[0] not in MAY_IMPORT[layer(name)])
        for name, path in MODULES.items()
    }
    assert {name: bad for name, bad in found.items() if bad} == {}
    # A lab reads another lab's model, never its figures or sections.
    reach = {
        name: sorted(m for m in imports(path) if m.startswith("labs.") and layer(m) != "model")
        for name, path in MODULES.items()
        if name.startswith("labs.") and layer(name) == "model"
    }
    assert {name: bad for name, bad in reach.items() if bad} == {}


def third_party(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}
    return {name.split(".")[0] for name in names if name}


@pytest.mark.parametrize("role", sorted({"model", "figures", "section", "labkit", "core", "serve"}))
def test_only_views_draw(role: str) -> None:
    allowed = MAY_DRAW.get(role, set())
    found = {
        name: sorted(third_party(path) & {"streamlit", "plotly"} - allowed)
        for name, path in MODULES.items()
        if layer(name) == role and name != "labkit.style"
    }
    assert {name: bad for name, bad in found.items() if bad} == {}


def test_the_rules_catch_a_model_that_draws_or_reaches_into_ui() -> None:
    assert layer("labs.speed.model") == "model" and layer("labs.speed.figures") == "figures"
    assert layer("labs.lesson.board_section") == "section" and layer("ui.nav") == "ui"
    assert "ui" not in MAY_IMPORT["model"] and "labs" not in MAY_IMPORT["ui"]
    assert "streamlit" not in MAY_DRAW.get("model", set())


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_reader_follows_lazy_and_literal_imports() -> None:
    source = """
import labs.training.fair
def make():
    from labs.training import sets
    from . import store
    importlib.import_module("labs.training.curves")
    __import__("labs.training.model")
"""
    assert imports_in(source, "labs.training.runs") == {
        "labs.training.fair",
        "labs.training.sets",
        "labs.training.store",
        "labs.training.curves",
        "labs.training.model",
    }
    # The sets' modules need the reference, and the runs script needs them: one way.
    assert {"labs.training.fair", "labs.training.sets"} <= imports(MODULES["labs.training.runs"])


def test_app_code_imports_no_module_by_a_computed_name() -> None:
    found = [
        hit for name, path in MODULES.items() for hit in computed_imports(path.read_text(), name)
    ]
    assert found == []
    source = "import_module(f'pages.{name}')\ndef f():\n    importlib.import_module(NAME)"
    assert computed_imports(source, "m") == ["m:1", "m.f:3"]


def test_importing_the_library_changes_no_environment_variable() -> None:
    """``import core`` sets nothing for the process: the entry points set what they need."""
    code = (
        "import os; before = dict(os.environ)\n"
        "import core, labkit, labs.explorer, labs.training, labs.inspector\n"
        "print(sorted(k for k in {*before, *os.environ} if before.get(k) != os.environ.get(k)))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_app_imports_torch_after_its_start_sets_the_thread_policy() -> None:
    """``app.py`` imports, then calls ``preload``, which sets torch's OpenMP wait policy before the
    pages import torch (libgomp reads it once, as torch loads it): its imports leave torch out."""
    tree = ast.parse((ROOT / "app.py").read_text())
    head = ast.Module([n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)], [])
    code = f"import sys\n{ast.unparse(head)}\nprint('torch' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "False", done.stderr[-2000:]


def test_the_app_imports_every_page_of_the_registry_by_name() -> None:
    """``app.py``'s ``import_pages`` names exactly the pages of ``ui.nav.PAGES``."""
    from ui.nav import PAGES

    named = imports_in((ROOT / "app.py").read_text(), "app")
    assert {m for m in named if m.startswith("pages.")} == {f"pages.{s.name}" for s in PAGES}


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_source_file_holds_two_ideas(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_FILE_LINES, f"{path.relative_to(ROOT)}: {lines} lines"


def test_cores_top_level_is_the_norm_library() -> None:
    top = [p for p in (ROOT / "core").glob("*.py")]
    lines = sum(len(p.read_text().splitlines()) for p in top)
    assert lines <= MAX_LIBRARY_LINES, lines
    assert [p.name for p in (ROOT / "core").iterdir() if (p / "__init__.py").exists()] == []


def test_no_two_core_modules_are_named_alike() -> None:
    stems = defaultdict(list)
    for path in (ROOT / "core").glob("*.py"):
        if path.name != "__init__.py":
            stems[path.stem.lstrip("_").removesuffix("s")].append(path.name)
    assert {stem: paths for stem, paths in stems.items() if len(paths) > 1} == {}


@pytest.mark.parametrize("lab", sorted(p.name for p in (ROOT / "labs").iterdir() if p.is_dir()))
def test_the_map_names_every_module_of_each_lab(lab: str) -> None:
    """``docs/architecture.md`` lists each lab's modules (a section by its stem before
    ``_section`` or ``_figures``)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    entry = re.search(rf"^  {lab}/ .*?(?=^ {{0,2}}\S)", text, re.M | re.S).group()
    stems = [p.stem for p in (ROOT / "labs" / lab).glob("*.py") if p.stem != "__init__"]
    stems = [s.removesuffix("_section").removesuffix("_figures") for s in stems]
    stems = [s for s in stems if s not in ("figures", "snippet")]
    assert [stem for stem in sorted(stems) if not re.search(rf"\b{stem}\b", entry)] == []


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


# Streamlit's and Plotly's public modules (a Plotly figure's own classes too: ``go.layout``).
# Anything else of theirs, or a name with a leading underscore (``_plotly_utils``, Plotly's
# ``_validate=False``), is private: only the adapters use it, each use with what it buys.
PUBLIC_MODULES = ("streamlit", "streamlit.column_config", "streamlit.components.v1",
                  "streamlit.delta_generator", "streamlit.testing.v1", "plotly", "plotly.express",
                  "plotly.graph_objects", "plotly.io", "plotly.subplots")  # fmt: skip
LIBRARIES = ("streamlit", "plotly", "_plotly_utils")
ADAPTERS = ("ui.st_private", "benchmarks.st_private")


def is_private(name: str) -> bool:
    """Whether ``name`` (``streamlit.runtime.exists``) reaches below Streamlit's or Plotly's public
    API: a part with a leading underscore, or a module on its way that is not public."""
    import importlib
    import inspect

    parts = name.split(".")
    if any(part.startswith("_") and not part.endswith("__") for part in parts):
        return True
    here, depth = importlib.import_module(parts[0]), 1
    for part in parts[1:]:
        there = getattr(here, part, None)
        if there is None:
            try:
                there = importlib.import_module(f"{here.__name__}.{part}")
            except ImportError:
                break
        if not inspect.ismodule(there):
            break
        here, depth = there, depth + 1
    module = ".".join(parts[:depth])
    public = any(m == module or m.startswith(f"{module}.") for m in PUBLIC_MODULES)
    return not (public or module.startswith("plotly.graph_objects."))


def private_names(source: str) -> list[str]:
    """``line: name`` of every private Streamlit or Plotly name ``source`` uses: imported (by a
    statement or ``import_module``), read off one of their modules (``st._config``,
    ``st.runtime.exists``), or a keyword argument with a leading underscore."""
    tree = ast.parse(source)
    named, bound = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
            for alias in node.names:
                full = alias.name
                if isinstance(node, ast.ImportFrom):
                    full = f"{node.module}.{alias.name}"
                named.append((node.lineno, full))
                if isinstance(node, ast.Import) and alias.asname is None:  # import a.b binds a
                    full = full.partition(".")[0]
                bound[alias.asname or full.rpartition(".")[2]] = full
    named += [(call.lineno, literal_name(call) or "") for call, _ in import_calls(tree)]
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or id(node) in inner:
            continue
        chain = []
        while isinstance(node, ast.Attribute):
            chain.insert(0, node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in bound:
            named.append((node.lineno, ".".join([bound[node.id], *chain])))
    found = {f"{n}: {name}" for n, name in named
             if name.partition(".")[0] in LIBRARIES and is_private(name)}  # fmt: skip
    found |= {f"{k.value.lineno}: {k.arg}=" for k in ast.walk(tree)
              if isinstance(k, ast.keyword) and (k.arg or "").startswith("_")}  # fmt: skip
    return sorted(found, key=lambda hit: (int(hit.partition(":")[0]), hit))


def test_no_private_streamlit_or_plotly_name_outside_the_adapters() -> None:
    found = {name: private_names(path.read_text()) for name, path in MODULES.items()}
    assert {name: hits for name, hits in found.items() if hits and name not in ADAPTERS} == {}
    assert found["ui.st_private"] and found["benchmarks.st_private"]  # the rule sees theirs


def test_the_private_name_rule_catches_each_way_in() -> None:
    source = """import streamlit as st
import plotly.graph_objects as go
from streamlit.delta_generator import DeltaGenerator
import streamlit.components.v1 as components
from streamlit.runtime.scriptrunner import get_script_run_ctx
from _plotly_utils.utils import convert_to_base64
from plotly.io import _json
from streamlit import runtime
importlib.import_module("streamlit.elements.lib")
st.plotly_chart(go.Figure(go.Scatter(), layout=go.layout.Template()), key="k")
st.session_state.get("lang"), st.session_state._state, st.runtime.exists()
go.Figure(data=[], _validate=False)
"""
    assert private_names(source) == [
        "5: streamlit.runtime.scriptrunner.get_script_run_ctx",
        "6: _plotly_utils.utils.convert_to_base64",
        "7: plotly.io._json",
        "8: streamlit.runtime",
        "9: streamlit.elements.lib",
        "11: streamlit.runtime.exists",
        "11: streamlit.session_state._state",
        "12: _validate=",
    ]


def test_each_labs_tests_sit_together() -> None:
    """A lab's page test is in ``tests/labs/<lab>/`` (its model's and browser tests beside it),
    and every lab has that folder."""
    labs = {p.name for p in (ROOT / "labs").iterdir() if (p / "__init__.py").exists()}
    pages = {p.stem for p in (ROOT / "pages").glob("*.py")}
    assert pages <= labs
    placed = {p.parent.name: p for p in (ROOT / "tests" / "labs").glob("*/test_page_*.py")}
    assert set(placed) == labs
    assert sorted((ROOT / "tests").glob("test_page_*.py")) == []
