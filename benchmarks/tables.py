"""Regenerate the speed tables of ``docs/speed.md`` from one run of each benchmark.

The kernel benchmark, then the explorer's server and browser timings (``--only`` runs one). Each
table sits between a pair of markers, ``<!-- speed:NAME -->`` and ``<!-- /speed:NAME -->``, and
only what lies between them is rewritten: the prose around the tables is written by hand and
should be read again when the verdicts change."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.live import ROOT

DOC = ROOT / "docs" / "speed.md"
BLOCKS = ("bench", "app")


class MarkerError(ValueError):
    """The document lacks a block's markers, or has them more than once or out of order."""


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with everything between ``name``'s two markers replaced by ``body``."""
    start, end = f"<!-- speed:{name} -->", f"<!-- /speed:{name} -->"
    # Each marker alone on its line, so that rewrapping the prose cannot swallow one.
    pattern = re.compile(
        "^" + re.escape(start) + r"\n.*?\n" + re.escape(end) + "$", re.DOTALL | re.MULTILINE
    )
    found = pattern.findall(text)
    if len(found) != 1 or text.count(start) != 1 or text.count(end) != 1:
        raise MarkerError(
            f"the document needs exactly one '{start}' ... '{end}' pair, in order, "
            "each marker on a line of its own"
        )
    return pattern.sub(lambda _: f"{start}\n{body.strip()}\n{end}", text)


def _stamp() -> str:
    """Where the tables were measured."""
    one = os.getloadavg()[0]
    return f"Measured on {os.cpu_count()} cores; load average {one:.2f} at the end."


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.tables", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--doc", type=Path, default=DOC, help="the file to rewrite")
    parser.add_argument("--only", choices=BLOCKS, help="one benchmark and its table alone")
    args = parser.parse_args(argv)

    from benchmarks import app, bench

    names = (args.only,) if args.only else BLOCKS
    text = args.doc.read_text(encoding="utf-8")
    for name in names:  # fail before minutes of measuring, not after
        replace_block(text, name, "")
    if "bench" in names:
        kernels = bench.run_benchmark()
        print(bench.format_table(kernels), flush=True)
        text = replace_block(text, "bench", f"{bench.markdown(kernels)}\n\n{_stamp()}")
    if "app" in names:
        explorer = app.measure(
            app.DEFAULT_D, app.DEFAULT_INTERACTIONS, app.DEFAULT_REPEATS, app.DEFAULT_PRESSES
        )
        print(app.report(explorer), flush=True)
        text = replace_block(text, "app", f"{app.markdown(explorer)}\n\n{_stamp()}")
    args.doc.write_text(text, encoding="utf-8")
    print(f"Rewrote the speed tables in {args.doc}: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
