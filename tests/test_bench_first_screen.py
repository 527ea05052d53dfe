"""benchmarks.first_screen: its ratios, verdicts and tables from given visits (no browser), and
the messages it decodes."""

from __future__ import annotations

from collections import Counter

from benchmarks import first_screen as fs
from benchmarks.st_private import protos

COUNTS = {"elements": 54, "above_fold": 17, "testids": 371, "nodes": 2363, "figures": 2,
          "points": 234}  # fmt: skip


def _visits(**seconds: tuple[float, float]) -> dict[str, list[fs.Visit]]:
    """Three visits per page, (script done, drawn) seconds each the same."""
    return {
        name.replace("_", " "): [
            fs.Visit(done, drawn, COUNTS, 72, 33_600, Counter(markdown=18), 16_800, 123, 8_204_000)
            for _ in range(3)
        ]
        for name, (done, drawn) in seconds.items()
    }


def test_each_explorer_visit_gets_its_ratio_and_verdict() -> None:
    visits = _visits(**{"floor": (1.0, 2.0), "explorer d=16": (1.2, 2.5),
                        "replayed d=16": (1.1, 2.0), "before d=4096": (1.5, 2.7),
                        "element floor": (1.1, 1.9)})  # fmt: skip
    assert fs.ratios(visits)["explorer d=16"] == (1.2, 1.25)
    text = fs.report(visits, None)
    assert "target <= 1.3x: done met, drawn met" in text
    assert "target <= 1.3x: done not met, drawn not met" in text  # the other checkout's
    assert "Streamlit's own floor" in text
    assert "drawn 1.25x its replay's" in text  # the explorer against its own messages replayed
    assert "its replay" not in text.split("before d=4096")[1].splitlines()[0]  # none replayed
    rows = {r.split(" | ")[0]: r for r in fs.markdown(visits).splitlines() if r.startswith("| ")}
    assert rows["| explorer d=16"].startswith("| explorer d=16 | 1200 ms | 1.20 | 2500 ms | 1.25 ")
    assert (
        "| met (done: met) | 1.25 | 54 (17) | 2363 | 2 | 72 messages, 34 KB | 123, 8.2 MB |"
        in (rows["| explorer d=16"])
    )
    assert "| not met (done: not met) |  |" in rows["| before d=4096"]
    replayed = (
        "| replayed d=16 | 1100 ms | 1.10 | 2000 ms | 1.00 |  |  |"  # neither target nor ratio
    )
    assert rows["| replayed d=16"].startswith(replayed)
    assert "| 0.95 |  |" in rows["| element floor"]  # no target for a floor


def test_the_elements_and_figure_bytes_are_read_from_the_websocket_messages() -> None:
    ForwardMsg = protos().ForwardMsg
    frames = []
    for kind in ("markdown", "markdown", "plotly_chart"):
        msg = ForwardMsg()
        element = msg.delta.new_element
        if kind == "markdown":
            element.markdown.body = "x"
        else:
            element.plotly_chart.spec = '{"data": []}'
        frames.append(msg.SerializeToString())
    block = ForwardMsg()
    block.delta.add_block.vertical.SetInParent()
    frames.append(block.SerializeToString())
    kinds, figure_bytes = fs._decode(frames)
    assert kinds == Counter(markdown=2, plotly_chart=1, block=1)
    assert figure_bytes == len('{"data": []}')


def test_the_replay_keeps_what_draws_the_page_and_sends_it_again() -> None:
    """The replayed page's file holds the elements, blocks, page links and settings, in order;
    the session's own messages stay out."""
    import base64

    from benchmarks.st_private import REPLAY_PAGE, replayable

    ForwardMsg = protos().ForwardMsg
    messages = [ForwardMsg() for _ in range(4)]
    messages[0].new_session.SetInParent()
    messages[1].delta.new_element.markdown.body = "first"
    messages[2].navigation.SetInParent()
    messages[3].script_finished = 1
    lines = replayable([m.SerializeToString() for m in messages]).splitlines()
    kept = [ForwardMsg.FromString(base64.b64decode(line)) for line in lines]
    assert [m.WhichOneof("type") for m in kept] == ["delta", "navigation"]
    assert kept[0].delta.new_element.markdown.body == "first"
    compile(REPLAY_PAGE, "replay.py", "exec")
