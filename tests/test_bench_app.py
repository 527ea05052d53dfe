"""benchmarks.app's server-time measurement, run small: it must time real runs of both apps."""

from __future__ import annotations

from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import app_test

from benchmarks import app as bench


def test_server_time_times_every_interaction_of_both_apps_and_restores_apptest() -> None:
    times = bench.server_time(64, 2)
    assert set(times) == {"explorer", "floor", "core"}
    assert all(len(v) == 2 and all(t > 0 for t in v) for v in times.values())
    # The explorer does more than the one-slider floor on every run.
    assert min(times["explorer"]) > max(times["core"])
    assert app_test.ScriptCache is ScriptCache  # AppTest's own cache again for every other test


def test_scripts_are_compiled_once(tmp_path) -> None:
    script = tmp_path / "s.py"
    script.write_text("x = 1\n")
    first = bench.compiled(str(script))
    script.write_text("x = 2\n")
    assert bench.compiled(str(script)) is first
