"""benchmarks.tables: the tables go between their markers and nowhere else, and a run of the
script (on small sizes, without the browser) rewrites a copy of docs/speed.md."""

from __future__ import annotations

import pytest

from benchmarks import app, bench, tables
from benchmarks.tables import MarkerError, replace_block

TEXT = "intro\n<!-- speed:bench -->\nold table\n<!-- /speed:bench -->\nprose\n"


def test_only_what_lies_between_the_markers_is_replaced() -> None:
    new = replace_block(TEXT, "bench", "| new |\n")
    assert new == "intro\n<!-- speed:bench -->\n| new |\n<!-- /speed:bench -->\nprose\n"
    assert replace_block(new, "bench", "| new |") == new  # a second run changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "no markers",
        TEXT + TEXT,  # twice
        "<!-- /speed:bench -->\nx\n<!-- speed:bench -->\n",  # out of order
        "<!-- speed:bench -->\nx\n",  # no end
        "<!-- speed:bench -->\nx. <!-- /speed:bench -->\n",  # the end marker inside a line
        "see <!-- speed:bench -->\nx\n<!-- /speed:bench -->\n",  # the start marker inside one
    ],
)
def test_missing_repeated_or_misordered_markers_are_refused(text: str) -> None:
    with pytest.raises(MarkerError, match="speed:bench"):
        replace_block(text, "bench", "table")


def test_the_speed_doc_has_one_place_for_each_table() -> None:
    text = tables.DOC.read_text(encoding="utf-8")
    for name in tables.BLOCKS:
        replace_block(text, name, "")


def test_a_run_rewrites_both_tables_and_keeps_the_prose(tmp_path, monkeypatch, capsys) -> None:
    small_bench = bench.run_benchmark
    small_app = app.measure
    monkeypatch.setattr(bench, "run_benchmark", lambda: small_bench(64, 256, repeats=2))
    monkeypatch.setattr(app, "measure", lambda *a: small_app(64, 1, 1, 1, browser=False))
    copy = tmp_path / "speed.md"
    copy.write_text(
        "# Speed\n" + TEXT + "between\n<!-- speed:app -->\nold\n<!-- /speed:app -->\nend\n",
        encoding="utf-8",
    )
    assert tables.main(["--doc", str(copy)]) == 0
    text = copy.read_text(encoding="utf-8")
    assert "old" not in text
    assert text.startswith("# Speed\nintro\n<!-- speed:bench -->\n`python -m benchmarks.bench`")
    assert "| `fused rms` |" in text and "fused RMSNorm ≤ 1.1× a copy into fresh memory" in text
    assert "| explorer script per interaction, d = 64 |" in text
    assert text.count("Measured ") == 2 and text.endswith("<!-- /speed:app -->\nend\n")
    assert "prose\nbetween\n" in text
    assert "Rewrote the speed tables" in capsys.readouterr().out


def test_only_bench_rewrites_the_kernel_table_alone(tmp_path, monkeypatch) -> None:
    def measured(*args, **kwargs):
        raise AssertionError("the explorer was measured")

    small_bench = bench.run_benchmark
    monkeypatch.setattr(bench, "run_benchmark", lambda: small_bench(64, 256, repeats=2))
    monkeypatch.setattr(app, "measure", measured)
    copy = tmp_path / "speed.md"
    app_block = "<!-- speed:app -->\nold\n<!-- /speed:app -->\n"
    copy.write_text(TEXT + app_block, encoding="utf-8")
    assert tables.main(["--doc", str(copy), "--only", "bench"]) == 0
    text = copy.read_text(encoding="utf-8")
    assert "old table" not in text and "| `fused rms, buffer` |" in text
    assert text.endswith("prose\n" + app_block)


def test_a_doc_without_markers_is_refused_before_any_measuring(tmp_path, monkeypatch) -> None:
    def measured(*args, **kwargs):
        raise AssertionError("measured before the markers were checked")

    monkeypatch.setattr(bench, "run_benchmark", measured)
    copy = tmp_path / "speed.md"
    copy.write_text("no tables here\n", encoding="utf-8")
    with pytest.raises(MarkerError):
        tables.main(["--doc", str(copy)])
    assert copy.read_text(encoding="utf-8") == "no tables here\n"
