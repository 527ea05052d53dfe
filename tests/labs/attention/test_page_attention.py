"""App tests for the attention sandbox: the page shows the core's sentences in both languages, the
bars are softmax(q·k/√d) of the drawn keys, and every control does what the geometry says."""

from __future__ import annotations

import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from labs.attention.model import attention_sandbox
from tests.apptest_util import assert_claims_shown, decode, figures, open_app, shown_text, trace
from tests.claims import attention as documented
from ui.i18n import t, translator

DEFAULT = {
    "d": 3,
    "n": 7,
    "seed": 7,
    "spread": 1.0,
    "offset": 0.0,
    "angle": 60,
    "turn": 30,
    "length": 3.0,
}


def open_page(**query: str) -> AppTest:
    at = open_app("attention", **query)
    assert not at.exception, [e.value for e in at.exception]
    return at


def state_of(at: AppTest) -> dict:
    """The link state the page is showing, read from its widgets."""
    state = {key: at.session_state[key] for key in DEFAULT}
    state["d"] = int(state["d"])
    return state


def reference_weights(state: dict, case: str) -> np.ndarray:
    """softmax(q·k/√d) of the documented keys (normalised with torch, eps = 0), q rebuilt from the
    link's angles and length (``tests.claims.attention``, independent of
    ``labs.attention.model``)."""
    q = state["length"] * documented.direction(state["d"], state["angle"], state["turn"])
    return documented.weights(documented.keys(state)[case], q)


def bars(at: AppTest, key: str) -> np.ndarray:
    return trace(figures(at)[key], "weights")


def key_positions(at: AppTest, case: str) -> np.ndarray:
    """Every key marker of a 3D keys figure, selectable and not, as rows."""
    spec = figures(at)[f"keys_{case}"]
    rows = []
    for tr in spec["data"]:
        if tr.get("name") in ("selectable", "unselectable"):
            rows.append(np.stack([decode(tr[a]) for a in ("x", "y", "z") if a in tr], axis=1))
    return np.concatenate(rows)


@pytest.mark.parametrize("lang", ["en", "id"])
def test_default_view_shows_the_cores_sentences_in_both_languages(lang: str) -> None:
    at = open_page(lang=lang)
    assert state_of(at) == DEFAULT
    assert_claims_shown(at, attention_sandbox(**DEFAULT).claims, lang)
    page = "\n".join(shown_text(at))
    assert t("attention.explain_projection", lang) in page
    assert t("attention.explain_d2", lang) not in page  # only at d = 2


@pytest.mark.parametrize("lang", ["en", "id"])
def test_d2_link_shows_the_two_points_of_layer_norm(lang: str) -> None:
    at = open_page(lang=lang, d="2", n="12", seed="3", offset="-10", spread="0.1", angle="0")
    state = state_of(at)
    assert state["d"] == 2 and state["n"] == 12 and state["angle"] == 0
    box = attention_sandbox(**state)
    assert box.claims["two_points"].key == "attention.layer_two_points"
    assert_claims_shown(at, box.claims, lang)
    assert t("attention.explain_d2", lang) in "\n".join(shown_text(at))
    assert at.slider(key="turn").disabled


def test_bars_are_softmax_of_scaled_scores_of_the_drawn_keys() -> None:
    at = open_page(lang="en", n="9", seed="4", spread="2", offset="1.5", angle="-40", turn="100")
    state = state_of(at)
    for case in ("raw", "rms", "layer"):
        np.testing.assert_allclose(
            bars(at, f"weights_{case}"), reference_weights(state, case), rtol=1e-9, atol=1e-15
        )
        np.testing.assert_allclose(
            np.sort(np.linalg.norm(key_positions(at, case), axis=1)),
            np.sort(np.linalg.norm(documented.keys(state)[case], axis=1)),
            rtol=1e-12,
        )


def test_offset_moves_rms_norm_keys_and_leaves_layer_norm_keys() -> None:
    at = open_page(lang="en")
    before = {case: key_positions(at, case) for case in ("raw", "rms", "layer")}
    at.select_slider(key="offset").set_value(5.0).run()
    assert not at.exception
    after = {case: key_positions(at, case) for case in ("raw", "rms", "layer")}
    np.testing.assert_allclose(after["layer"], before["layer"], atol=1e-12)
    assert np.max(np.abs(after["rms"] - before["rms"])) > 0.1
    # Every raw key moved by the same 5 · 1.
    np.testing.assert_allclose(after["raw"] - before["raw"], 5.0, atol=1e-12)
    state = state_of(at)
    assert state["offset"] == 5.0
    assert_claims_shown(at, attention_sandbox(**state).claims, "en")


def test_query_along_one_gives_layer_norm_uniform_attention() -> None:
    at = open_page(lang="en")
    at.slider(key="angle").set_value(0).run()
    n = DEFAULT["n"]
    np.testing.assert_allclose(bars(at, "weights_layer"), np.full(n, 1.0 / n), rtol=1e-12)
    assert np.ptp(bars(at, "weights_rms")) > 0.01  # RMSNorm's keys keep their part along 1
    box = attention_sandbox(**state_of(at))
    assert box.claims["top_layer"].key == "attention.top_uniform"
    assert_claims_shown(at, box.claims, "en")


def test_point_the_query_buttons_turn_the_query_to_the_best_direction() -> None:
    at = open_page(lang="en")
    at.button(key="use_layer").click().run()
    assert (at.session_state["angle"], at.session_state["turn"]) == (0, 0)
    n = DEFAULT["n"]
    np.testing.assert_allclose(bars(at, "weights_layer"), np.full(n, 1.0 / n), rtol=1e-12)

    best = attention_sandbox(**DEFAULT).cases["raw"].keyset.best
    at.button(key="use_raw").click().run()
    # The nearest whole degrees, the steps of the controls.
    assert abs(at.session_state["angle"] - best.angle) <= 0.5
    assert abs(at.session_state["turn"] - best.turn) <= 0.5
    np.testing.assert_allclose(bars(at, "weights_raw"), best.weights, atol=0.02)


def most_weight(claim) -> tuple[str, float]:
    """Who a sentence says gets the most weight (a key, tied keys, or every key), and how much."""
    f = claim.fields
    return f.get("key") or f.get("keys") or "every key", f.get("w_max_pct", f.get("w_pct"))


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_direction_a_button_sets_gives_what_the_page_said_it_would(lang: str) -> None:
    """At ?d=3&n=3&seed=7 the raw keys' most uniform direction is 84.63°, turned 50.86°, but the
    controls take whole degrees: the button sets 85° and 51°, where k2 gets the most weight. A
    sentence shown before the click must name the direction it sets, at the precision shown,
    and say what the top-weight line then says."""
    at = open_page(lang=lang, d="3", n="3", seed="7")
    tr = translator(lang)
    for case in ("raw", "rms", "layer"):
        before = attention_sandbox(**state_of(at)).claims
        page = "\n".join(shown_text(at))
        at.button(key=f"use_{case}").click().run()
        assert not at.exception
        state = state_of(at)
        box = attention_sandbox(**state)
        assert_claims_shown(at, box.claims, lang)
        top = box.claims[f"top_{case}"]
        off_one = state["angle"] not in (0, 180)
        named = [
            claim
            for slot, claim in before.items()
            if slot.endswith(f"_{case}")
            and claim.fields.get("angle") == state["angle"]
            and (not off_one or claim.fields.get("turn") == state["turn"])
            and tr.claim(claim) in page
        ]
        assert named, f"{case}: no sentence named {state['angle']}°, {state['turn']}°"
        for claim in named:
            said, weight = most_weight(claim)
            now, top_weight = most_weight(top)
            assert said == now, (case, claim.key, said, now)
            assert math.isclose(weight, top_weight, rel_tol=1e-9), (case, weight, top_weight)


def test_more_keys_mean_more_bars_and_the_first_keys_stay() -> None:
    at = open_page(lang="en")
    first = key_positions(at, "raw")
    at.slider(key="n").set_value(12).run()
    assert len(bars(at, "weights_raw")) == 12
    grown = key_positions(at, "raw")
    assert len(grown) == 12
    for row in first:
        assert np.min(np.linalg.norm(grown - row, axis=1)) < 1e-12


def test_switching_to_d2_draws_the_plane_view() -> None:
    at = open_page(lang="en")
    at.segmented_control(key="d").set_value("2").run()
    assert not at.exception
    spec = figures(at)["keys_layer"]
    assert all(tr["type"] == "scatter" for tr in spec["data"])
    assert at.slider(key="turn").disabled
    assert_claims_shown(at, attention_sandbox(**state_of(at)).claims, "en")


def test_presenter_view_keeps_figures_and_sentences_and_drops_controls() -> None:
    at = open_page(lang="en", controls="hidden")
    assert len(figures(at)) == 9
    assert not [b for b in at.button if b.key and b.key.startswith("use_")]
    page = "\n".join(shown_text(at))
    assert t("attention.first_move", "en") not in page
    assert t("common.share_heading", "en") not in page
    assert_claims_shown(at, attention_sandbox(**DEFAULT).claims, "en")


def test_bad_link_values_are_named_and_replaced() -> None:
    at = open_page(lang="en", n="99", d="4", spread="-3", length="4")
    warning = "\n".join(w.value for w in at.warning)
    for key in ("n", "d", "spread", "length"):
        assert f"`{key}`" in warning
    state = state_of(at)
    assert (state["n"], state["d"], state["spread"]) == (12, 3, 0.1)
    assert state["length"] in (3.0, 5.0)
    assert_claims_shown(at, attention_sandbox(**state).claims, "en")


@pytest.mark.parametrize(
    "query",
    [{"n": "12"}, {"n": "12", "offset": "4"}, {"d": "2", "n": "12", "offset": "-3"}],
    ids=["12 keys", "12 keys offset", "d=2 offset"],
)
def test_keys_figures_label_only_the_keys_the_sentences_single_out(query: dict) -> None:
    """Twelve labels piled up into a cluster: a figure labels the keys that get the most weight
    in its case's sentences (under the query, and at the whole-degree best direction), and names
    every key on hover."""
    at = open_page(lang="en", **query)
    box = attention_sandbox(**state_of(at))
    tr = translator("en")
    page = "\n".join(shown_text(at))
    unlabelled = 0
    for case in ("raw", "rms", "layer"):
        said = set()
        for slot in ("top", "dial"):
            sentence = tr.claim(box.claims[f"{slot}_{case}"])
            assert sentence in page
            said |= documented.names(sentence)
        labels, hover = set(), set()
        for data in figures(at)[f"keys_{case}"]["data"]:
            if data.get("name") in ("selectable", "unselectable"):
                labels |= set().union(*map(documented.names, data["text"]))
                hover |= set().union(*map(documented.names, data["customdata"]))
        assert labels == said, case
        assert hover == set(range(12)), case
        unlabelled += 12 - len(labels)
    assert unlabelled > 0
