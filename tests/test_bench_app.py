"""benchmarks.app: its server-time measurement run small (it must time real runs of both apps), its
reports and verdicts, and its slider timing in a real browser."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import app_test

from benchmarks import app as bench
from benchmarks.live import stop_server


def test_server_time_times_every_interaction_of_both_apps_and_restores_apptest() -> None:
    own_cache = app_test.ScriptCache
    times = bench.server_time(64, 2)
    assert set(times) == {"explorer", "floor", "core"}
    assert all(len(v) == 2 and all(t > 0 for t in v) for v in times.values())
    # The explorer's page does more than the core's computation alone (about 20 times as much:
    # compared at their fastest, as a first, cold run of either can be slow on a busy machine).
    assert min(times["explorer"]) > min(times["core"])
    assert app_test.ScriptCache is own_cache  # AppTest's own cache again for every other test


def test_scripts_are_compiled_once(tmp_path) -> None:
    script = tmp_path / "s.py"
    script.write_text("x = 1\n")
    first = bench.compiled(str(script))
    script.write_text("x = 2\n")
    assert bench.compiled(str(script)) is first


def _result(browser: bool, **ms: list[float]) -> bench.AppResult:
    server = {"explorer": [0.012, 0.011, 0.013], "floor": [0.004] * 3, "core": [0.0015] * 3}
    out = {
        "floor": [1.0, 1.1, 0.9],
        "explorer d=16": [1.25] * 3,
        "explorer d=4096": [1.4] * 3,
        "explorer d=16 hidden": [1.1] * 3,
        "slider floor data": [0.06] * 3,
        "slider explorer data": [0.15] * 3,
        "slider floor": [0.2] * 3,
        "slider explorer": [0.18] * 3,
    }
    for name, values in ms.items():
        (server if name in server else out)[name.replace("_", " ")] = [v / 1e3 for v in values]
    return bench.AppResult(4096, server, out if browser else {})


def test_markdown_states_each_target_with_the_verdict_its_ratio_gives() -> None:
    text = bench.markdown(_result(True))
    rows = {row.split(" | ")[0]: row for row in text.splitlines() if row.startswith("| ")}
    server = rows["| explorer script per interaction, d = 4096"]
    # The server's ratio is the scripts' (12 ms against 4), not against the browser's floor page.
    assert "12.0 ms (11.0–13.0)" in server and server.endswith("| 3.00 | ≤ 15 ms: met |")
    assert rows["| first render, explorer, d = 16"].endswith("| 1.25 | ≤ 1.3×: met |")
    assert rows["| first render, explorer, d = 4096"].endswith("| 1.40 | ≤ 1.3×: not met |")
    hidden = rows["| first render, explorer, d = 16, controls hidden"]
    assert hidden.endswith("| 1.10 | none (for comparison) |")
    assert "1000 ms (900–1100) (floor page)" in hidden
    data = rows["| slider press to the chart's new data (Plotly's model), d = 4096"]
    assert data.endswith("| 2.50 | none (for comparison) |")
    assert rows["| slider press to the drawn frame, d = 4096"].endswith("| 0.90 | ≤ 1.0×: met |")
    slow = bench.markdown(_result(True, explorer=[16.0] * 3, slider_explorer=[210.0] * 3))
    assert "≤ 15 ms: not met" in slow and "| 1.05 | ≤ 1.0×: not met |" in slow


def test_without_the_browser_only_the_server_row_and_a_notice_remain() -> None:
    result = _result(False)
    assert [r for r in bench.markdown(result).splitlines() if r.startswith("| ")][2:] == [
        "| explorer script per interaction, d = 4096 | 12.0 ms (11.0–13.0) | 4.0 ms (4.0–4.0) "
        "(slider floor's script; `labs.explorer` alone 1.5 ms (1.5–1.5)) | 3.00 "
        "| ≤ 15 ms: met |"
    ]
    text = bench.report(result)
    assert "0.80x the 15 ms target; 3.00x the slider floor's script" in text
    assert "Browser timings skipped" in text and "first render" not in text
    shown = bench.report(_result(True))
    assert "3.00x the slider floor's script" in shown
    assert "1.25x the floor (target <= 1.3x)" in shown
    assert "2.50x the floor\n" in shown and "0.90x the floor (target <= 1.0x)" in shown


def test_cli_without_the_browser_prints_the_server_times(capsys) -> None:
    assert bench.main(["--no-browser", "--d", "64", "--interactions", "1"]) == 0
    out = capsys.readouterr().out
    assert "Server (script) time per interaction, d = 64" in out
    assert "the slider floor's script" in out and "Browser timings skipped" in out
    assert out.startswith("Start: load average") and "End: load average" in out


@pytest.mark.browser
def test_slider_presses_time_the_new_data_and_then_the_drawn_frame(browser, tmp_path) -> None:
    script = tmp_path / "floor_slider.py"
    script.write_text(bench.SLIDER_FLOOR)
    server, url = bench._serve(script)
    try:
        data, drawn = bench._slider_presses(browser, url, 2, think_s=0.2)
    finally:
        stop_server(server)
    assert len(data) == len(drawn) == 2
    # The frame is drawn after the data reached Plotly's model, never before.
    assert all(0 < d < f for d, f in zip(data, drawn, strict=True))
