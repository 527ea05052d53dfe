"""The code behind every page's numbers runs, and prints the numbers the page shows.

Each page is opened in English with AppTest for a few link states; the snippet is read from the
page's own "The code behind these numbers" section, and every snippet runs in one subprocess
(``runpy``, as ``__main__``, from the project root: torch is imported once). The printed numbers,
at full precision, are rounded the page's way (``ui.fmt.num``) and compared with its metrics and
tables, and arrays with its charts' data. Two snippets also run as a visitor would, alone.
"""

from __future__ import annotations

import json
import re
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core import torch_available
from labs.invariance.table import TABLE_TOL
from labs.lesson.options import STEP_IDS
from labs.lesson.snippet import lesson_code
from tests.apptest_util import decode, figures, open_app, trace
from ui import fmt
from ui.code import CODE_KEY
from ui.i18n import catalogue, translator

ROOT = Path(__file__).resolve().parent.parent
EN = translator("en")
TORCH = torch_available()
HEADING = "# The code behind"

EXPLORER = {
    "done_when": {"d": "8", "offset": "2", "eps": "0.001", "seed": "3"},
    "typed": {"x": "1, -2.5, 3e-2, 4", "offset": "0.5", "scale": "2"},
    "d2": {"d": "2", "seed": "5", "gain": "1.5", "bias": "0.25"},
    "d8192": {"d": "8192", "dist": "laplace", "offset": "1"},
    "float16": {"backend": "torch", "dtype": "float16", "d": "64", "seed": "1", "offset": "3"},
    "bfloat16": {
        "backend": "torch", "dtype": "bfloat16", "d": "32", "gain_pattern": "ramp",
        "rms_bias": "0.25", "partial": "0.5",
    },
}  # fmt: skip
OTHERS = {
    "contracts": {"a": "gemma", "b": "llama", "d": "16", "seed": "2"},
    "contracts_bf16": {"a": "llama", "b": "t5", "dtype": "bfloat16", "d": "32"},
    "invariance": {},
    "backward": {"d": "6", "offset": "0.5"},
    "attention": {},
    "precision": {"d": "32", "scale": "100"},
    "residual": {"layers": "4", "d": "32"},
    "training": {},
    "inspector": {},
}
NEEDS_TORCH = {"float16", "bfloat16", "contracts_bf16"}
CASES = {**{f"explorer_{k}": ("explorer", q) for k, q in EXPLORER.items()}}
CASES |= {k: (k.split("_")[0], q) for k, q in OTHERS.items()}
CASES = {k: v for k, v in CASES.items() if TORCH or k.split("_", 1)[-1] not in NEEDS_TORCH}

RUNNER = """
import contextlib, io, json, runpy, sys
out = {}
for path in sys.argv[1:]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        runpy.run_path(path, run_name="__main__")
    out[path] = buf.getvalue()
sys.stdout.write(json.dumps(out))
"""


def snippet_of(at) -> str:
    """The page's snippet, read from its code section; the section draws its code only while it
    is open, so it is opened first (as a visitor's click does: the page runs again)."""
    if not (CODE_KEY in at.session_state and at.session_state[CODE_KEY]):
        at.session_state[CODE_KEY] = True
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    codes = [c.value for c in at.get("code") if c.value.startswith(HEADING)]
    assert len(codes) == 1, "the page has no (or more than one) code section"
    return codes[0]


def test_the_code_is_drawn_only_when_its_section_is_opened() -> None:
    at = open_app(None, lang="en", d="8")
    assert EN("common.code_heading") in [e.label for e in at.expander]
    assert not [c for c in at.get("code") if c.value.startswith(HEADING)]
    assert "make_input(8," in snippet_of(at)  # opens the section, as a click does


def printed(output: str) -> dict[str, object]:
    """``label = value`` lines (arrays may span lines): floats, arrays or the text itself."""
    values: dict[str, object] = {}
    pending = ""
    for line in output.splitlines():
        pending = f"{pending} {line}" if pending else line
        if pending.count("[") > pending.count("]"):
            continue
        label, sep, rest = pending.partition(" = ")
        pending = ""
        if not sep:
            continue
        rest = rest.strip()
        if rest.startswith("[") and "..." not in rest:  # numpy elides the middle of a wide x
            rest = re.sub(r"(?<=\d)\.(?!\d)", ".0", rest)  # numpy writes 1.0 as "1."
            values[label] = np.array(json.loads(re.sub(r"(?<=\d)\s+(?=[-\d])", ", ", rest)))
            continue
        try:
            values[label] = float(rest)
        except ValueError:
            values[label] = rest
    return values


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, tuple]:
    """Every case's page (AppTest) and what its snippet printed (one subprocess for all)."""
    folder = tmp_path_factory.mktemp("snippets")
    opened, paths = {}, []
    for name, (page, query) in CASES.items():
        at = open_app(page, lang="en", **query)
        assert not at.exception, (name, [e.value for e in at.exception])
        path = folder / f"{name}.py"
        path.write_text(snippet_of(at))
        opened[name] = at
        paths.append(str(path))
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, *paths], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = json.loads(done.stdout)
    return {n: (opened[n], outputs[str(folder / f"{n}.py")]) for n in CASES}


def metrics(at) -> dict[str, str]:
    """Each metric's value by its label; the first where sides repeat a label (model A's)."""
    shown: dict[str, str] = {}
    for m in at.metric:
        shown.setdefault(m.label, m.value)
    return shown


def stats_table(at) -> dict[tuple[str, str], str]:
    """The explorer's statistics table (Markdown): (row label, column) -> cell."""
    head = EN("explorer.stat_column")
    body = next(m.value for m in at.markdown if m.value.startswith(f"| {head} |"))
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in body.splitlines()]
    columns = rows[0][1:]
    return {(r[0], col): cell for r in rows[2:] for col, cell in zip(columns, r[1:], strict=True)}


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("explorer_")])
def test_the_explorer_snippet_prints_the_pages_numbers(pages, case: str) -> None:
    at, output = pages[case]
    values = printed(output)
    shown = metrics(at)
    for key, label in (
        ("metric_rms", "RMS(x)"),
        ("metric_std", "std(x)"),
        ("metric_norm_rms", "|RMSNorm(x)|"),
        ("metric_norm_layer", "|LayerNorm(x)|"),
    ):
        assert fmt.num(values[label]) == shown[EN(f"explorer.{key}")], (case, key)
    mean = shown[EN("explorer.metric_mean")]
    if mean != "≈ 0":
        assert fmt.num(values["mean"]) == mean
    # The statistics table: each of x's, RMSNorm's and LayerNorm's statistics, cell by cell.
    table = stats_table(at)
    stats = {
        name: dict(re.findall(r"(\w+)=([^,)]+)", line))
        for name, line in (
            (line.split(" ", 1)[0], line) for line in output.splitlines() if "VectorStats(" in line
        )
    }
    columns = {"x": "x", "RMSNorm": EN("common.rms_norm"), "LayerNorm": EN("common.layer_norm")}
    checked = 0
    for name, column in columns.items():
        for stat, value in stats[name].items():
            if stat == "d":
                continue
            cell = table[EN(f"explorer.stat_{stat}"), column.removesuffix("(x)")]
            if cell == "≈ 0":  # the table writes float64 rounding as ≈ 0: the program prints it
                scale = float(stats[name]["rms"])
                assert abs(float(value)) <= 1e-9 * max(scale, scale**2), (case, name, stat)
            else:
                assert fmt.num(float(value)) == cell, (case, name, stat)
            checked += 1
    assert checked == 18
    # Up to the chart's buckets the chart draws every coordinate: the printed arrays are those.
    spec = figures(at)["coords"]
    if isinstance(values["x"], np.ndarray) and len(values["x"]) <= 600:
        for label, name in (("x", "x"), ("RMSNorm(x)", "rms"), ("LayerNorm(x)", "layer")):
            drawn = trace(spec, EN(f"common.{name}_norm") if name != "x" else "x")
            top = np.abs(drawn).max()
            np.testing.assert_allclose(values[label], drawn, rtol=1e-7, atol=1e-8 * top)


def test_the_done_when_link_prints_the_pages_rms(pages) -> None:
    at, output = pages["explorer_done_when"]
    assert fmt.num(printed(output)["RMS(x)"]) == metrics(at)[EN("explorer.metric_rms")] == "2.038"


def test_the_snippet_is_generated_from_the_link(pages) -> None:
    """Another link, another program: the settings are written in, not a fixed text."""
    text = snippet_of(pages["explorer_typed"][0])
    assert "parse_vector('1, -2.5, 3e-2, 4')" in text and "2.0 *" in text
    assert "make_input(8, dist='normal', seed=3, offset=2.0" in snippet_of(
        pages["explorer_done_when"][0]
    )
    if TORCH:
        assert "# Needs torch" in snippet_of(pages["explorer_float16"][0])
        assert "torch.float16" in snippet_of(pages["explorer_float16"][0])
    assert "# Needs torch" not in text


def table_cells(at) -> list[str]:
    return [str(v) for t in at.table for v in t.value.to_numpy().ravel()]


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("contracts")])
def test_contracts(pages, case: str) -> None:
    at, output = pages[case]
    values, shown = printed(output), metrics(at)
    assert fmt.num(values["max |y_B - y_A|"]) == shown[EN("contracts.metric_max")]
    assert fmt.num(values["relative"]) == shown[EN("contracts.metric_rel")]
    spec = figures(at)["contract"]
    # Side A's trace, named "A: " and the preset's shown name.
    (name,) = [t["name"] for t in spec["data"] if str(t.get("name", "")).startswith("A: ")]
    drawn = trace(spec, name)
    np.testing.assert_allclose(values["y_A"], drawn, rtol=1e-7, atol=1e-8 * np.abs(drawn).max())


def test_invariance(pages) -> None:
    at, output = pages["invariance"]
    values, shown = printed(output), metrics(at)
    for norm in ("rms", "layer"):
        want = fmt.num(values[f"residual {norm}"], noise=TABLE_TOL)
        assert want == shown[EN(f"invariance.metric_res_{norm}")]
    cells = table_cells(at)
    rows = [k for k in values if re.fullmatch(r"\w+_\w+ (rms|layer)", k)]
    assert len(rows) >= 10
    for key in rows:
        assert any(f"({fmt.num(values[key], noise=TABLE_TOL)})" in c for c in cells), key


def numbers_in_tables(at, values: dict, keys: list[str]) -> None:
    cells = set(table_cells(at))
    assert keys
    for key in keys:
        assert fmt.num(values[key]) in cells or abs(values[key]) < 1e-9, key


def test_backward_precision_residual_tables(pages) -> None:
    at, out = pages["backward"]
    values = printed(out)
    numbers_in_tables(at, values, [k for k in values if k.endswith(("along 1", "length"))])
    at, out = pages["precision"]
    values = printed(out)
    numbers_in_tables(at, values, [k for k in values if k.endswith("mean square")])
    at, out = pages["residual"]
    values = printed(out)
    numbers_in_tables(at, values, [k for k in values if k.endswith("stream_mean")])


def test_attention_weights_are_the_charts(pages) -> None:
    at, out = pages["attention"]
    values, spec = printed(out), figures(at)
    for case in ("raw", "rms", "layer"):
        bars = spec[f"weights_{case}"]["data"][0]
        np.testing.assert_allclose(values[f"{case} weights"], decode(bars["y"]), rtol=1e-12)


def test_training_and_inspector_metrics(pages) -> None:
    at, out = pages["training"]
    values, shown = printed(out), [m.value for m in at.metric]  # finals, then timings
    losses = [k for k in values if k.endswith("at the equal step")]
    assert losses and all(fmt.num(values[k]) in shown for k in losses)
    at, out = pages["inspector"]
    values, shown = printed(out), metrics(at)
    for side in ("a", "b"):
        for key, label in (("metric_params", "parameters"), ("metric_norms", "norm modules")):
            want = fmt.num(int(values[f"{side} {label}"]))
            assert want in [m.value for m in at.metric if m.label == EN(f"inspector.{key}")]
    assert fmt.num(int(values["a parameters"])) == shown[EN("inspector.metric_params")]


def test_a_lesson_step_prints_what_its_question_quotes() -> None:
    """The lesson shows its code after the reveal; the question before it quotes the same
    numbers (step 2: RMS² = variance + mean²)."""
    step = 2
    done = subprocess.run(
        [sys.executable, "-"], input=lesson_code(STEP_IDS[step - 1]), cwd=ROOT,
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    values = printed(done.stdout)
    at = open_app("lesson", lang="en", step=str(step))
    question = catalogue()[f"lesson.{STEP_IDS[step - 1]}_question"]["en"]
    names = [f for _, f, _, _ in string.Formatter().parse(question) if f]
    page = "\n".join(m.value for m in at.markdown)
    for name in names:
        value = values[name]
        assert (fmt.pct(value) if name.endswith("_pct") else fmt.num(value)) in page, name


def test_a_snippet_runs_alone_from_the_project_root(pages) -> None:
    """As a visitor runs it: the file in the project's folder, ``python snippet.py``."""
    at, output = pages["explorer_done_when"]
    path = ROOT / "snippet_test_run.py"
    path.write_text(snippet_of(at))
    try:
        done = subprocess.run([sys.executable, path.name], cwd=ROOT, capture_output=True, text=True)
    finally:
        path.unlink()
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == output


@pytest.mark.parametrize("lang", ["en", "id"])
@pytest.mark.parametrize("page", ["training", "inspector"])
def test_a_snippet_that_prints_part_of_the_page_says_which_part(page: str, lang: str) -> None:
    """The training and inspector snippets print some of their page's numbers: the caption
    lists what they print (it promised "the numbers above")."""
    at = open_app(page, lang=lang)
    code = snippet_of(at)
    captions = [c.value for c in at.caption]
    assert translator(lang)(f"{page}.code_caption") in captions
    assert translator(lang)("common.code_caption") not in captions
    said = {"training": ("validation loss at the equal step", "median ms per step")}
    said["inspector"] = ("parameters", "dtype", "width", "norm modules", "place")
    assert all(f"{word} =" in code for word in said[page])
