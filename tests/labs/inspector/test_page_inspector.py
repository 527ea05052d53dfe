"""The checkpoint inspector page in AppTest: both languages, every source, the refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from labs.inspector import Settings, clear_cache, inspect_view
from labs.inspector import sources as sources_module
from labs.inspector.readings import DEFAULT_PROMPT
from tests.apptest_util import assert_claims_shown, figures, open_app, shown_text
from tests.inspector_fixture import offline_hub_cache, tiny_dir
from ui.i18n import t

pytest.importorskip("transformers")

FIGURES = {"gains_a", "readings_share", "readings_rms", "readings_top"}


@pytest.fixture
def tiny(monkeypatch) -> Path:
    """The tiny models listed for the server, the hub off, the default size cap."""
    root = tiny_dir()
    monkeypatch.setenv("NORMLAB_MODEL_DIRS", str(root))
    monkeypatch.delenv("NORMLAB_HUB", raising=False)
    monkeypatch.delenv("NORMLAB_MAX_MODEL_GB", raising=False)
    return root


def expected_view(links: dict[str, str], text: str, root: Path):
    return inspect_view(links, text, Settings(model_dirs=(root,)))


def errors(at) -> list[str]:
    return [e.value for e in at.error]


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_shipped_pair_in_both_languages(lang: str, tiny: Path) -> None:
    at = open_app("inspector", lang=lang)
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == t("inspector.title", lang)
    assert at.selectbox(key="model").value == "rms-seed0"
    assert at.selectbox(key="compare").value == "layer-seed0"
    # One link, one text in both languages: the same readings (a translated default gave 53
    # tokens in English and 60 in Indonesian), and a caption that says why it is English.
    view = expected_view({"a": "rms-seed0", "b": "layer-seed0"}, DEFAULT_PROMPT, tiny)
    assert_claims_shown(at, view.claims, lang)
    assert FIGURES | {"gains_b"} <= set(figures(at))
    assert [c.value for c in at.code][0] == DEFAULT_PROMPT
    assert t("inspector.prompt_default", lang) in [c.value for c in at.caption]
    assert not errors(at)


def test_local_models_from_a_link(tiny: Path) -> None:
    at = open_app("inspector", model="local:tiny-gemma", compare="local:tiny-olmo2", lang="en")
    assert not at.exception
    view = expected_view({"a": "local:tiny-gemma", "b": "local:tiny-olmo2"}, DEFAULT_PROMPT, tiny)
    assert_claims_shown(at, view.claims, "en")
    assert view.claims["a_gain"].key == "inspector.gain_offset"
    page = "\n".join(shown_text(at))
    assert "A · tiny-gemma" in page and "B · tiny-olmo2" in page
    # OLMo 2 normalises queries and keys and the blocks' outputs: its table says so.
    # (One column per place, so that the table fits a phone's width.)
    places = {str(p) for frame in at.table for p in frame.value.columns}
    for place in ("qk", "post_attention", "post_mlp"):
        assert t(f"inspector.place_{place}", "en") in places


def test_own_text_and_model_alone(tiny: Path) -> None:
    text = "Gains near one, offsets near zero."
    at = open_app("inspector", model="local:tiny-llama", compare="none", prompt=text, lang="en")
    assert not at.exception
    view = expected_view({"a": "local:tiny-llama"}, text, tiny)
    assert_claims_shown(at, view.claims, "en")
    assert "gains_b" not in figures(at)
    assert at.code[0].value == text
    spec = figures(at)["readings_share"]
    assert [tr["name"] for tr in spec["data"]] == ["A: tiny-llama"]


def test_a_shared_sentence_is_kept_without_a_notice(tiny: Path) -> None:
    """The link's ``prompt`` is the models' text; ``text`` is the app's text size."""
    text = "Hello class"
    at = open_app("inspector", model="rms-seed0", compare="none", prompt=text, lang="en")
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]
    assert at.text_input(key="prompt").value == text
    assert at.code[0].value == text
    assert at.query_params["prompt"] == text and "text" not in at.query_params
    assert_claims_shown(at, expected_view({"a": "rms-seed0"}, text, tiny).claims, "en")


@pytest.mark.parametrize("prompt", [None, "Hello class"])
def test_the_presenter_text_size_is_not_the_models_text(prompt: str | None, tiny: Path) -> None:
    """``text=large`` enlarges the page; the models still read the page's sentence or the
    link's ``prompt``, never the word "large"."""
    query = {"prompt": prompt} if prompt else {}
    at = open_app(
        "inspector", model="rms-seed0", compare="none", controls="hidden", text="large",
        lang="id", **query,
    )  # fmt: skip
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]
    read = prompt or DEFAULT_PROMPT
    assert at.code[0].value == read
    assert_claims_shown(at, expected_view({"a": "rms-seed0"}, read, tiny).claims, "id")
    assert at.query_params["text"] == "large"


def test_an_old_text_link_is_the_text_size_with_its_notice(tiny: Path) -> None:
    """Before ``prompt``, the page's text shared ``text`` with the text size; the frame replaced
    any value but normal or large, so no such link ever kept its sentence. It still cannot be
    told from a mistyped size: the size's notice names it, and the models read the page's
    sentence."""
    at = open_app("inspector", model="rms-seed0", compare="none", text="Hello class", lang="en")
    assert not at.exception
    notices = "\n".join(w.value for w in at.warning)
    assert "`text`" in notices and "`Hello class`" in notices
    assert at.code[0].value == DEFAULT_PROMPT
    assert at.text_input(key="prompt").value == ""


def test_a_model_without_tokenizer_shows_its_contract(tiny: Path) -> None:
    at = open_app("inspector", model="local:tiny-bare", compare="none", lang="id")
    assert not at.exception
    view = expected_view({"a": "local:tiny-bare"}, DEFAULT_PROMPT, tiny)
    assert_claims_shown(at, view.claims, "id")
    assert "readings_share" not in figures(at)


def test_the_hub_box_is_disabled_and_says_why(tiny: Path) -> None:
    at = open_app("inspector", lang="en")
    box = at.text_input(key="_hub_id")
    assert box.disabled and at.button(key="_hub_go").disabled
    assert t("inspector.hub_off", "en") in [c.value for c in at.caption]


@pytest.fixture
def hub(tiny: Path, tmp_path: Path, monkeypatch) -> Path:
    """The hub turned on, offline, with normlab/tiny-llama in its cache."""
    cache = offline_hub_cache(tmp_path, monkeypatch)
    monkeypatch.setenv("NORMLAB_HUB", "1")
    clear_cache()
    return cache


def test_a_hub_id_typed_in_the_box(hub: Path) -> None:
    at = open_app("inspector", lang="en", compare="none")
    at.text_input(key="_hub_id").input("normlab/tiny-llama")
    at.button(key="_hub_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="model").value == "normlab/tiny-llama"
    assert "A · normlab/tiny-llama" in "\n".join(shown_text(at))
    assert not errors(at)
    view = inspect_view({"a": "normlab/tiny-llama"}, DEFAULT_PROMPT, Settings(hub=True))
    assert_claims_shown(at, view.claims, "en")


def test_a_bad_hub_id_is_named_and_kept(hub: Path) -> None:
    at = open_app("inspector", lang="en")
    at.text_input(key="_hub_id").input("../../etc/passwd")
    at.button(key="_hub_go").click().run()
    assert not at.exception
    assert any("`../../etc/passwd`" in e for e in errors(at))
    assert at.text_input(key="_hub_id").value == "../../etc/passwd"
    assert at.selectbox(key="model").value == "rms-seed0"


def test_no_network_for_a_hub_id_in_a_link(hub: Path) -> None:
    at = open_app("inspector", model="normlab/absent", compare="layer-seed0", lang="id")
    assert not at.exception
    assert any(t("inspector.side_a", "id") in e and "normlab/absent" in e for e in errors(at))
    # The other model is still shown.
    assert "B · layer-seed0" in "\n".join(shown_text(at))


def test_a_hub_id_in_a_link_with_the_hub_off(tiny: Path) -> None:
    at = open_app("inspector", model="openai-community/gpt2", lang="en")
    assert not at.exception
    assert any("`model`" in w.value for w in at.warning)
    assert at.selectbox(key="model").value == "rms-seed0"


def test_models_too_large_for_the_host(tiny: Path, monkeypatch) -> None:
    monkeypatch.setenv("NORMLAB_MAX_MODEL_GB", "0.0001")  # about 107 kB: smaller than both
    clear_cache()
    at = open_app("inspector", lang="en")
    assert not at.exception
    assert len([e for e in errors(at) if "GiB" in e]) == 2
    assert t("common.share_heading", "en") in [s.value for s in at.subheader]


@pytest.mark.parametrize("lang", ["en", "id"])
def test_a_host_without_transformers_says_what_is_missing(tiny: Path, monkeypatch, lang) -> None:
    """``import transformers`` fails (None in sys.modules makes any import of it fail): the
    local models get a notice naming the module and the command that installs it, in the
    page's language; NormLab's own checkpoint beside them still loads."""
    import sys

    clear_cache()
    monkeypatch.setitem(sys.modules, "transformers", None)
    at = open_app("inspector", model="local:tiny-llama", compare="rms-seed0", lang=lang)
    assert not at.exception, [e.value for e in at.exception]
    name = t("inspector.side_a", lang)
    expected = t(
        "inspector.refusal_no_transformers", lang, name="`tiny-llama`", reason="transformers"
    )
    assert errors(at) == [f"**{name}** · {expected}"]
    assert "`transformers`" in expected and "pip install -r requirements-dev.txt" in expected
    assert "gains_b" in figures(at) and "gains_a" not in figures(at)


def test_no_model_at_all(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NORMLAB_MODEL_DIRS", raising=False)
    monkeypatch.delenv("NORMLAB_HUB", raising=False)
    monkeypatch.setattr(sources_module, "SHIPPED_DIR", tmp_path)
    at = open_app("inspector", lang="id")
    assert not at.exception
    assert [i.value for i in at.info] == [t("inspector.no_models", "id")]


def test_hostile_links_fall_back_with_notices(tiny: Path) -> None:
    at = open_app(
        "inspector", model="local:../../etc", compare="<script>alert(1)</script>", lang="en"
    )
    assert not at.exception
    notices = "\n".join(w.value for w in at.warning)
    assert "`model`" in notices and "`compare`" in notices
    assert at.selectbox(key="model").value == "rms-seed0"
    assert at.selectbox(key="compare").value == "layer-seed0"


def test_presenter_view_shows_figures_without_boxes(tiny: Path) -> None:
    at = open_app("inspector", controls="hidden", lang="en")
    assert not at.exception
    assert FIGURES <= set(figures(at))
    assert t("common.share_heading", "en") not in [s.value for s in at.subheader]


@pytest.mark.parametrize(("lang", "no_norm"), [("en", "no norm"), ("id", "tanpa normalisasi")])
def test_shipped_models_are_named_by_norm_and_seed_beside_no_model_b(lang: str, no_norm: str):
    at = open_app("inspector", lang=lang, compare="none-seed0")
    compare = at.selectbox(key="compare")
    assert compare.value == "none-seed0"  # the link's value
    assert compare.options[0] == t("inspector.option_none", lang)
    assert f"{no_norm} (seed 0)" in compare.options
    assert "RMSNorm (seed 2)" in at.selectbox(key="model").options
    assert not any("seed0" in o for o in compare.options)
