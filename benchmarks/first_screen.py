"""What the explorer's first screen costs against Streamlit's floors: ratios measured in one run.

docs/speed.md describes the servers it compares (the explorer at d = 16 and d = 4096, the *floor
page*, the *element floor*, the *replayed explorer* of ``benchmarks.st_private.REPLAY_PAGE``) and
what each visit records. Visits alternate, each a fresh browser context, so that a busy neighbour
slows them alike; each time is a median of ``--repeats`` visits, each verdict a ratio of medians."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.app import FLOOR_PAGE, TARGET_FIRST_RENDER, floor_folder, load_line, serve_floors
from benchmarks.live import CHARTS_DRAWN, READY, ROOT, SCRIPT_DONE, SKELETONS, chromium
from benchmarks.st_private import REPLAY_PAGE, protos, replayable

DEFAULT_REPEATS = 7
VIEWPORT = {"width": 1366, "height": 900}
TIMEOUT_MS = 180_000

# The floor page, then ``n`` short paragraphs (``?n=``).
ELEMENT_FLOOR = (
    FLOOR_PAGE
    + """
for i in range(int(st.query_params.get("n", "0"))):
    st.markdown(f"Paragraph {i + 1}.")
"""
)

# The script has finished, no element's code is still loading and every Plotly chart the script
# sent (at least one) is drawn.
DRAWN = f"""() => !!document.querySelector("{READY}")
  && !document.querySelector('{SKELETONS}') && ({CHARTS_DRAWN})(1)"""
# What the drawn page holds. An element is above the fold when its top is inside the window.
COUNTS = """() => {
  const elements = Array.from(document.querySelectorAll('[data-testid="stElementContainer"]'));
  const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
  return {
    elements: elements.length,
    above_fold: elements.filter(e => {
      const r = e.getBoundingClientRect();
      return r.height > 0 && r.top < window.innerHeight;
    }).length,
    testids: document.querySelectorAll('[data-testid]').length,
    nodes: document.getElementsByTagName('*').length,
    figures: plots.length,
    points: plots.reduce((n, p) => n + p._fullData.reduce(
      (m, t) => m + (t.x ? t.x.length : 0), 0), 0),
  };
}"""


@dataclass
class Visit:
    """One fresh-browser visit: seconds to the script's end and to the drawn page, and counts."""

    done_s: float
    drawn_s: float
    counts: dict[str, int]
    messages: int
    message_bytes: int
    deltas: Counter = field(default_factory=Counter)  # elements sent, by type
    figure_bytes: int = 0
    http_files: int = 0
    http_bytes: int = 0
    frames: list[bytes] = field(default_factory=list, repr=False)  # what the websocket carried


def _frames(page) -> list[bytes]:
    frames: list[bytes] = []
    page.on(
        "websocket",
        lambda ws: ws.on(
            "framereceived", lambda p: frames.append(p if isinstance(p, bytes) else p.encode())
        ),
    )
    return frames


def _decode(frames: list[bytes]) -> tuple[Counter, int]:
    """The elements the messages carried, by type, and the bytes of the Plotly figures."""
    ForwardMsg = protos().ForwardMsg
    kinds: Counter = Counter()
    figure_bytes = 0
    for payload in frames:
        msg = ForwardMsg.FromString(payload)
        if msg.WhichOneof("type") != "delta":
            continue
        delta = msg.delta
        which = delta.WhichOneof("type")
        if which == "new_element":
            kind = delta.new_element.WhichOneof("type")
            kinds[kind] += 1
            if kind == "plotly_chart":
                figure_bytes += len(delta.new_element.plotly_chart.spec)
        elif which == "add_block":
            kinds["block"] += 1
    return kinds, figure_bytes


def visit(browser, url: str) -> Visit:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    frames = _frames(page)
    fetched: list = []
    page.on("requestfinished", lambda request: fetched.append(request))
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_function(SCRIPT_DONE, timeout=TIMEOUT_MS, polling="raf")
    done = time.perf_counter() - start
    page.wait_for_function(DRAWN, timeout=TIMEOUT_MS, polling="raf")
    drawn = time.perf_counter() - start
    counts = page.evaluate(COUNTS)
    kinds, figure_bytes = _decode(frames)
    http_bytes = 0
    for request in fetched:
        try:
            http_bytes += request.sizes()["responseBodySize"]
        except Exception:  # a request the page dropped on closing
            pass
    result = Visit(
        done, drawn, counts, len(frames), sum(map(len, frames)), kinds, figure_bytes,
        len(fetched), http_bytes, frames,
    )  # fmt: skip
    context.close()
    return result


def browser_visits(repeats: int, others: dict[str, Path]) -> dict[str, list[Visit]]:
    """Fresh-browser visits of the pages, interleaved; the element floor is sized from a first,
    untimed visit of the explorer at d = 16. The explorers of ``others`` (name: checkout) are
    visited too, in the same rounds."""
    folder = floor_folder(
        {"floor_page.py": FLOOR_PAGE, "element_floor.py": ELEMENT_FLOOR, "replay.py": REPLAY_PAGE}
    )
    floors = {"floor": "floor_page.py", "elements": "element_floor.py", "replay": "replay.py"}
    out: dict[str, list[Visit]] = {}
    with serve_floors(folder, floors, others) as urls, chromium() as browser:
        # Untimed: each explorer's messages recorded for the replay, and every server warmed.
        first = {d: visit(browser, f"{urls['app']}/?d={d}") for d in (16, 4096)}
        for d, explorer in first.items():
            (folder / f"replay_{d}.txt").write_text(replayable(explorer.frames))
        floor = visit(browser, urls["floor"])
        n = max(0, first[16].counts["elements"] - floor.counts["elements"])
        pages = {"floor": urls["floor"]}
        for d in (16, 4096):
            pages[f"explorer d={d}"] = f"{urls['app']}/?d={d}"
            pages[f"replayed d={d}"] = f"{urls['replay']}/?d={d}"
            for name in others:
                pages[f"{name} d={d}"] = f"{urls[name]}/?d={d}"
        pages["element floor"] = f"{urls['elements']}/?n={n}"
        for url in pages.values():  # untimed
            visit(browser, url)
        for _ in range(repeats):
            for name, url in pages.items():
                out.setdefault(name, []).append(visit(browser, url))
    return out


# The first run of a script in a fresh process, through AppTest: the modules it imports beyond
# those Streamlit and AppTest imported, and how long the run took.
_IMPORTS = """
import json, sys, time
import streamlit
from streamlit.testing.v1 import AppTest
before = set(sys.modules)
at = AppTest.from_{kind}({source!r}, default_timeout=600)
at.query_params["d"] = "16"
start = time.perf_counter()
at.run()
took = time.perf_counter() - start
new = sorted(set(sys.modules) - before)
print(json.dumps({{"seconds": took, "modules": new, "failed": bool(at.exception)}}))
"""
HEAVY = ("torch", "scipy", "pandas", "pyarrow", "numba", "babel", "plotly", "numpy")


def imports(repeats: int, others: dict[str, Path]) -> dict[str, list[dict]]:
    """Each app's first script run in a fresh process, ``repeats`` times, interleaved."""
    scripts = {
        "floor": (ROOT, _IMPORTS.format(kind="string", source=FLOOR_PAGE)),
        "explorer": (ROOT, _IMPORTS.format(kind="file", source=str(ROOT / "app.py"))),
    }
    for name, root in others.items():
        scripts[name] = (root, _IMPORTS.format(kind="file", source=str(root / "app.py")))
    out: dict[str, list[dict]] = {name: [] for name in scripts}
    for _ in range(repeats):
        for name, (root, script) in scripts.items():
            run = subprocess.run(
                [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True
            )
            out[name].append(json.loads(run.stdout.strip().splitlines()[-1]))
    return out


def _median(visits: list[Visit], field: str) -> float:
    return statistics.median(getattr(v, field) for v in visits)


def _verdict(ratio: float) -> str:
    return "met" if ratio <= TARGET_FIRST_RENDER else "not met"


def _targeted(name: str) -> bool:
    """An explorer's visit (this checkout's or another's), which the target applies to."""
    return name.endswith((" d=16", " d=4096")) and not name.startswith("replayed ")


def _replay_ratio(visits: dict[str, list[Visit]], name: str) -> float | None:
    """An explorer's drawn page over its replay's (the same messages, none of the app's work)."""
    replay = visits.get("replayed " + name.rpartition(" ")[2]) if _targeted(name) else None
    return _median(visits[name], "drawn_s") / _median(replay, "drawn_s") if replay else None


def ratios(visits: dict[str, list[Visit]]) -> dict[str, tuple[float, float]]:
    """Each page's medians (script done, drawn) over the floor page's."""
    floor = (_median(visits["floor"], "done_s"), _median(visits["floor"], "drawn_s"))
    return {
        name: (_median(v, "done_s") / floor[0], _median(v, "drawn_s") / floor[1])
        for name, v in visits.items()
    }


def report(visits: dict[str, list[Visit]], imported: dict[str, list[dict]] | None) -> str:
    """The run as plain text: times and ratios with verdicts, then what each first screen holds."""
    n = len(visits["floor"])
    lines = [
        f"First render in a fresh browser context, {VIEWPORT['width']} x {VIEWPORT['height']}: "
        f"medians of {n} interleaved visits, ratios to the floor page's",
        f"  {'page':18s} {'script done':>11s} {'ratio':>6s} {'drawn':>9s} {'ratio':>6s}",
    ]
    for name, (done, drawn) in ratios(visits).items():
        row = (
            f"  {name:18s} {1e3 * _median(visits[name], 'done_s'):8.0f} ms {done:6.2f} "
            f"{1e3 * _median(visits[name], 'drawn_s'):6.0f} ms {drawn:6.2f}"
        )
        if _targeted(name):
            verdicts = f"done {_verdict(done)}, drawn {_verdict(drawn)}"
            row += f"  target <= {TARGET_FIRST_RENDER}x: {verdicts}"
            replay = _replay_ratio(visits, name)
            row += "" if replay is None else f"; drawn {replay:.2f}x its replay's"
        elif name.startswith("replayed "):
            row += "  (the explorer's own messages sent again: Streamlit's floor for its page)"
        elif name == "element floor":
            row += "  (Streamlit's own floor for the explorer's element count)"
        lines.append(row)
    lines.append("What each page holds when drawn (its last visit)")
    heads = ("elements", "above fold", "testids", "DOM nodes", "figures", "points", "ws msgs",
             "ws KB", "figures KB", "http files", "http KB")  # fmt: skip
    lines.append(f"  {'page':18s}" + "".join(f"{h:>11s}" for h in heads))
    for name, v in visits.items():
        last = v[-1]
        cells = [last.counts[k] for k in ("elements", "above_fold", "testids", "nodes")]
        cells += [last.counts["figures"], last.counts["points"], last.messages]
        cells += [f"{last.message_bytes / 1e3:.1f}", f"{last.figure_bytes / 1e3:.1f}"]
        cells += [last.http_files, f"{last.http_bytes / 1e3:.0f}"]
        lines.append(f"  {name:18s}" + "".join(f"{c!s:>11s}" for c in cells))
    lines.append(
        "Elements sent over the websocket, by type (blocks: containers, columns, expanders)"
    )
    for name, v in visits.items():
        kinds = v[-1].deltas.most_common()
        lines.append(f"  {name:18s} " + ", ".join(f"{k} {count}" for k, count in kinds))
    if imported:
        lines += _imports_report(imported)
    return "\n".join(lines)


def _imports_report(imported: dict[str, list[dict]]) -> list[str]:
    lines = ["First script run in a fresh process (AppTest, d = 16): the modules it imports"]
    floor_s = statistics.median(r["seconds"] for r in imported["floor"])
    for name, runs in imported.items():
        modules = runs[-1]["modules"]
        heavy = [h for h in HEAVY if h in modules]
        seconds = statistics.median(r["seconds"] for r in runs)
        lines.append(
            f"  {name:10s} {len(modules):5d} modules, the run {seconds:5.2f} s "
            f"({seconds / floor_s:.1f}x the floor's; median of {len(runs)}); "
            f"of {', '.join(HEAVY)}: {', '.join(heavy) or 'none'}"
        )
    return lines


def markdown(visits: dict[str, list[Visit]]) -> str:
    """The run as docs/speed.md's table: each page's medians, ratios and verdicts, and counts."""
    lines = [
        f"`python -m benchmarks.first_screen`: medians of {len(visits['floor'])} interleaved "
        "fresh-browser visits; ratios to the floor page's medians.",
        "",
        "| page | script done | ratio | drawn | ratio | target ≤ "
        f"{TARGET_FIRST_RENDER}× | × replayed | elements (above the fold) | DOM nodes | figures | "
        "websocket | files fetched |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, (done, drawn) in ratios(visits).items():
        last = visits[name][-1]
        verdict = f"{_verdict(drawn)} (done: {_verdict(done)})" if _targeted(name) else ""
        replay = _replay_ratio(visits, name)
        lines.append(
            f"| {name} | {1e3 * _median(visits[name], 'done_s'):.0f} ms | {done:.2f} | "
            f"{1e3 * _median(visits[name], 'drawn_s'):.0f} ms | {drawn:.2f} | {verdict} | "
            f"{'' if replay is None else f'{replay:.2f}'} | "
            f"{last.counts['elements']} ({last.counts['above_fold']}) | {last.counts['nodes']} | "
            f"{last.counts['figures']} | {last.messages} messages, "
            f"{last.message_bytes / 1e3:.0f} KB | {last.http_files}, "
            f"{last.http_bytes / 1e6:.1f} MB |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--no-imports", action="store_true")
    parser.add_argument(
        "--other",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="another checkout whose explorer is visited in the same rounds (repeatable)",
    )
    parser.add_argument("--markdown", action="store_true", help="also the run as Markdown")
    args = parser.parse_args(argv)
    others = {name: Path(root) for name, _, root in (o.partition("=") for o in args.other)}
    print(f"Start: {load_line()}", flush=True)
    imported = None if args.no_imports else imports(max(1, args.repeats // 3), others)
    visits = browser_visits(args.repeats, others)
    print(report(visits, imported))
    if args.markdown:
        print(markdown(visits))
    print(f"End: {load_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
