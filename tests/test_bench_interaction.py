"""benchmarks.interaction: its ratios, verdict and table from given times (no workers)."""

from __future__ import annotations

from benchmarks import interaction


def _times(explorer: float, baseline: float) -> dict[str, dict[str, list]]:
    """Three runs per app, (wall, CPU) seconds, CPU a tenth below the wall time."""
    apps = {"explorer": explorer, "baseline": baseline, "floor": 0.004}
    return {
        kind: {name: [(s * scale, 0.9 * s * scale)] * 3 for name, s in apps.items()}
        for kind, scale in (("moved", 1.0), ("same", 0.5))
    }


def test_the_verdict_is_on_the_explorers_median_wall_time_of_a_moved_slider() -> None:
    text = interaction.report(4096, _times(0.012, 0.016))
    assert "explorer / floor 3.00, baseline / floor 4.00, explorer / baseline 0.75" in text
    assert text.endswith("<= 15 ms: 12.0 ms, met")
    assert interaction.report(4096, _times(0.0151, 0.016)).endswith("15.1 ms, not met")


def test_markdown_gives_each_run_and_app_its_times_ratios_and_verdict() -> None:
    rows = [r for r in interaction.markdown(4096, _times(0.012, 0.02)).splitlines() if "| " in r]
    body = {tuple(r.split(" | ")[:2]): r for r in rows[2:]}
    assert body["| offset moved", "explorer"] == (
        "| offset moved | explorer | 12.0 ms (12.0–12.0) | 3.00 | 10.8 ms (10.8–10.8) | 3.00 "
        "| met |"
    )
    assert body["| offset moved", "baseline"].endswith("| 5.00 | not met |")
    assert body["| rerun, no change", "explorer"].endswith("| 3.00 |  |")  # the target: moves
    assert body["| offset moved", "floor"].endswith("| 1.00 |  |")
