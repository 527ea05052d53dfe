"""Checkpoint inspector: a real model's normalisation contract, and what its norms see."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from core import get_preset
from core.stats import IDENTITY_FORMULA
from labkit.style import chart_config
from labs.inspector import (
    Catalog,
    InspectorView,
    Refusal,
    Settings,
    SideView,
    inspect_view,
    is_loaded,
    load,
)
from labs.inspector.figures import Series, gain_histogram, readings_figure
from labs.inspector.readings import DEFAULT_PROMPT, RATIO_FORMULAS, SHARE_FORMULAS
from labs.inspector.report import CHART_READINGS
from labs.inspector.snippet import inspector_code
from labs.inspector.sources import GIB, valid_hub_id
from ui import fmt
from ui.chart import chart
from ui.code import code_section
from ui.frame import begin_page, breakable, metric_row, metric_width, readable, share_box
from ui.i18n import Translator, translator
from ui.params import Param, Problem, TextParam, echo
from ui.widgets import labelled_choice
from ui.widgets import text as text_box

NONE = "none"
# A sentence or two: the models read at most 64 tokens of it.
MAX_TEXT = 300
# The shipped pair: the same model trained with RMSNorm and with LayerNorm.
PREFERRED = ("rms-seed0", "layer-seed0")
# How many model names a notice lists before it stops.
LISTED = 8
HUB_IDS_KEY = "_inspector_hub_ids"


@dataclass(frozen=True)
class ModelParam(Param):
    """A model this server offers: a shipped name, ``local:<folder>``, or ``owner/name`` when the
    host turned the hub on (:class:`labs.inspector.Catalog` decides, at each reading)."""

    allow_none: bool = False

    def parse(self, raw: str) -> tuple[object, Problem | None]:
        value = raw.strip()
        catalog = Catalog.from_env()
        if (self.allow_none and value == NONE) or catalog.resolve(value) is not None:
            return value, None
        names = [*([NONE] if self.allow_none else []), *catalog.choices()]
        allowed = ", ".join(names[:LISTED]) + (", …" if len(names) > LISTED else "")
        allowed += ", owner/name" if catalog.settings.hub else ""
        return self.default, Problem(
            "unknown_choice", {"allowed": allowed, "value": str(self.default) or NONE}
        )


_CHOICES = Catalog.from_env().choices()
_DEFAULT_A = PREFERRED[0] if PREFERRED[0] in _CHOICES else (_CHOICES[0] if _CHOICES else "")
_DEFAULT_B = PREFERRED[1] if PREFERRED[1] in _CHOICES else NONE
# The models' text is ``prompt``: ``text`` is the app's text size (``text=large``), on every page,
# and a mistyped size cannot be told apart from a sentence.
PARAMS = (
    ModelParam("model", _DEFAULT_A),
    ModelParam("compare", _DEFAULT_B, allow_none=True),
    TextParam("prompt", "", max_len=MAX_TEXT),
)
P = {p.key: p for p in PARAMS}


# --- Controls -----------------------------------------------------------------------------------


def _use_hub_id() -> None:
    """Button callback: a valid id becomes model A (and an option for B); a bad one is named."""
    raw = str(st.session_state.get("_hub_id", "")).strip()
    if valid_hub_id(raw):
        ids = st.session_state.setdefault(HUB_IDS_KEY, [])
        if raw not in ids:
            ids.append(raw)
        st.session_state["model"] = raw
    else:
        st.session_state["_hub_bad"] = raw


def _options(catalog: Catalog) -> list[str]:
    """The catalog's models, then the hub ids used in this session or named by the link."""
    options = list(catalog.choices())
    extra = list(st.session_state.get(HUB_IDS_KEY, []))
    for key in ("model", "compare"):
        extra += [str(st.session_state.get(key, "")), str(st.query_params.get(key, "")).strip()]
    for value in extra:
        if value not in options and "/" in value and catalog.resolve(value) is not None:
            options.append(value)
    return options


def _select(
    param: ModelParam, label: str, options: list[str], help_text: str, tr: Translator
) -> str:
    """A model box: the models by their names, and "none" in the page's words."""
    values = [NONE, *options] if param.allow_none else options
    return labelled_choice(
        param, label, lambda v: model_name(tr, v), options=values, help=help_text
    )


# A shipped checkpoint's link name: its norm and its seed (``none-seed0``).
SHIPPED_NAME = re.compile(r"(rms|layer|none)-seed(\d+)")


def model_name(tr: Translator, value: str) -> str:
    """A model as the boxes name it: "none" in the page's words, a shipped checkpoint by its norm
    and seed ("no norm (seed 0)", beside "none" for no model B), any other by its link name."""
    if value == NONE:
        return tr("inspector.option_none")
    shipped = SHIPPED_NAME.fullmatch(value)
    if shipped is None:
        return value
    norm, seed = shipped.groups()
    return tr("inspector.shipped_model", norm=tr(f"training.variant_{norm}"), seed=int(seed))


def hub_box(tr: Translator, settings: Settings) -> None:
    """The hub id box: live when the host turned the hub on, else disabled with the reason."""
    st.subheader(tr("inspector.hub_heading"))
    off = not settings.hub
    st.text_input(tr("inspector.hub_label"), key="_hub_id", disabled=off, placeholder="owner/name")
    st.button(tr("inspector.hub_button"), key="_hub_go", disabled=off, on_click=_use_hub_id)
    limit = settings.max_bytes / GIB
    st.caption(tr("inspector.hub_off") if off else tr("inspector.hub_on", limit=limit))
    bad = st.session_state.pop("_hub_bad", None)
    if bad is not None:
        st.error(tr("inspector.hub_bad_id", id=echo(bad)))


def controls(tr: Translator, catalog: Catalog) -> dict:
    """The sidebar: the two models, the text, the hub box. Returns the chosen values."""
    with st.sidebar:
        st.header(tr("common.controls"))
        options = _options(catalog)
        state = {"model": "", "compare": NONE}
        if options:
            for key in ("model", "compare"):
                label, help_text = tr(f"inspector.{key}_label"), tr("inspector.model_help")
                state[key] = _select(P[key], label, options, help_text, tr)
        state["prompt"] = text_box(
            P["prompt"], tr("inspector.text_label"), help=tr("inspector.text_help", limit=MAX_TEXT)
        )
        hub_box(tr, catalog.settings)
    return state


# --- Loading, with progress -------------------------------------------------------------------


def _load_with_progress(tr: Translator, side: str, link: str, catalog: Catalog) -> bool:
    """Load one model (a progress box while it loads); show why when it cannot be. True: ready."""
    ref = catalog.resolve(link)
    name = link
    try:
        if ref is None:
            raise Refusal("unknown_model", link=link)
        name = ref.label
        if is_loaded(ref):
            return True
        with st.status(tr("inspector.step_config", name=name), expanded=False) as box:

            def progress(step: str) -> None:
                box.update(label=tr(f"inspector.step_{step}", name=name))

            try:
                load(ref, catalog.settings, progress)
            except Refusal:
                box.update(label=tr("inspector.step_failed", name=name), state="error")
                raise
            box.update(label=tr("inspector.step_done", name=name), state="complete")
        return True
    except Refusal as refusal:
        fields = {"name": echo(name), "reason": str(refusal.fields.get("reason", ""))}
        fields |= {k: refusal.fields.get(k, 0) / GIB for k in ("size", "limit")}
        side_name = tr(f"inspector.side_{side}")
        st.error(f"**{side_name}** · " + tr(f"inspector.refusal_{refusal.code}", **fields))
        return False


@st.cache_data(max_entries=16, show_spinner=False)
def compute(links: tuple[tuple[str, str], ...], text: str, settings: Settings) -> InspectorView:
    """Both models' contracts and readings for ``text`` (cached per choice and text)."""
    return inspect_view(dict(links), text, settings)


# --- The contract -------------------------------------------------------------------------------


def _delta_text(delta: float) -> str:
    return "—" if delta == float("inf") else fmt.num(delta)


def _preset_name(tr: Translator, name: str, kind: str) -> str:
    """A preset as the lesson and the contracts page name it (a LayerNorm preset by its title,
    a name), without the class in brackets: ``Llama``, ``Kode PyTorch dari makalah RMSNorm``,
    ``OLMo 1``, short enough for a column."""
    title = tr(f"lesson.preset_{name}") if kind == "rms" else get_preset(name, kind).title
    return title.split(" (")[0]


def group_table(tr: Translator, view: SideView) -> pd.DataFrame:
    """One column per kind of norm module, named by its place; one row each for the count,
    class, formula, eps, gain, dtype, preset and max |Δ|. (A row per kind was nine columns
    wide: on a phone max |Δ| sat out of view at the far end of a scrolling grid.)"""
    rows = [
        {
            tr("inspector.col_place"): tr(f"inspector.place_{g.place}"),
            tr("inspector.col_count"): g.count,
            tr("inspector.col_class"): g.cls,
            tr("inspector.col_formula"): tr(f"inspector.kind_{g.kind}"),
            "eps": "None" if g.eps is None else fmt.num(g.eps),
            tr("inspector.col_gain"): tr(f"inspector.conv_{g.gain}"),
            tr("inspector.col_dtype"): g.dtype,
            tr("inspector.col_preset"): (
                breakable(_preset_name(tr, g.preset, g.kind)) if g.preset else "—"
            ),
            "max |Δ|": _delta_text(g.delta),
        }
        for g in view.contract.groups
    ]
    table = pd.DataFrame(rows).set_index(tr("inspector.col_place")).T.astype(str)
    table.index.name = tr("inspector.col_place")
    return table


def module_table(tr: Translator, view: SideView) -> pd.DataFrame:
    """Every module with every compatible preset's max |Δ| on the probe input."""
    rows = []
    for m in view.contract.modules:
        row = {tr("inspector.col_module"): m.name}
        row |= {tr("inspector.col_place"): tr(f"inspector.place_{m.place}"), "d": m.width}
        row |= {_preset_name(tr, name, m.kind): _delta_text(delta) for name, delta in m.deltas}
        rows.append(row)
    return pd.DataFrame(rows).set_index(tr("inspector.col_module")).fillna("—")


def contract_section(tr: Translator, view: InspectorView) -> None:
    """Each model's card (its source and size) and its normalisation contract."""
    st.header(tr("inspector.contract_heading"))
    st.markdown(tr("inspector.contract_intro"))
    for side, sv in view.sides.items():
        s = sv.summary
        st.subheader(f"{tr(f'inspector.side_{side}')} · {s.label}")
        st.caption(tr(f"inspector.source_{s.source}", architecture=s.architecture))
        metrics = {"params": fmt.num(s.parameters), "dtype": s.dtype, "width": fmt.num(s.width)}
        metrics["norms"] = fmt.num(len(sv.contract.modules))
        with metric_row():
            for name, value in metrics.items():
                st.metric(tr(f"inspector.metric_{name}"), value, width=metric_width())
        st.markdown(tr.claim(sv.claims["contract"]))
        st.table(group_table(tr, sv))
        with st.expander(tr("inspector.every_module", name=sv.summary.label)):
            st.dataframe(module_table(tr, sv))
    st.caption(tr("inspector.presets_caption"))


def gains_section(tr: Translator, view: InspectorView) -> None:
    st.header(tr("inspector.gains_heading"))
    st.markdown(tr("inspector.gains_intro"))
    for side, sv in view.sides.items():
        label = f"{tr(f'inspector.side_{side}')} · {sv.summary.label}"
        hist = sv.contract.histogram
        if hist is None:
            st.markdown(f"**{label}**: " + tr.claim(sv.claims["gain"]))
            continue
        conventions = {m.gain for m in sv.contract.normalising}
        marker = 0.0 if conventions == {"offset"} else 1.0
        counts = {tr(f"inspector.place_{place}"): c for place, c in hist.counts.items()}
        st.markdown(f"**{label}**")
        titles = {"x_title": tr("inspector.hist_x"), "y_title": tr("inspector.hist_y")}
        fig = gain_histogram(hist.edges, counts, **titles, marker=marker)
        edges = {"lower": hist.edges[:-1], "upper": hist.edges[1:]}
        chart(
            readable(fig),
            key=f"gains_{side}",
            title=tr("inspector.hist_title", name=sv.summary.label),
            words=tr.claim(view.claims[f"{side}_hist"]),
            table=edges | counts,
            headers={k: tr(f"inspector.hist_{k}") for k in edges},
            file_name=f"normlab-inspector-gains-{side}.csv",
            config=chart_config(f"gains-{side}"),
        )
        st.markdown(tr.claim(sv.claims["gain"]))


# --- What the norms see -------------------------------------------------------------------------


def _kind(view: SideView) -> str:
    kinds = {m.kind for m in view.contract.normalising}
    return kinds.pop() if len(kinds) == 1 else "other"


def _series(view: InspectorView, field: str, tr: Translator) -> list[Series]:
    return [
        Series(
            label=f"{side.upper()}: {sv.summary.label}",
            side=side,
            kind=_kind(sv),
            y=[getattr(r, field) for r in sv.readings],
            names=[f"{r.name} ({tr(f'inspector.place_{r.place}')})" for r in sv.readings],
        )
        for side, sv in view.sides.items()
        if sv.readings
    ]


# Per chart (its stem, as labs.inspector.report.CHART_READINGS names it): log scale, percentages.
FIGURES = {"share": (False, True), "rms": (True, False), "top": (False, False)}


def readings_table(series: list[Series], tr: Translator) -> tuple[dict, dict[str, str]]:
    """A chart of readings as a table: the module's place in the forward pass (i), then per
    model its modules and its readings (a model with fewer modules leaves its cells empty)."""
    rows = max(len(s.y) for s in series)
    table: dict = {"i": list(range(1, rows + 1))}
    headers = {"i": "i"}
    for s in series:
        pad = ["—"] * (rows - len(s.y))
        table[f"module_{s.side}"] = [*s.names, *pad]
        table[s.side] = [*s.y, *pad]
        headers |= {f"module_{s.side}": f"{tr('inspector.col_module')} {s.side.upper()}"}
        headers[s.side] = s.label  # the trace's name
    return table, headers


def reading_table(tr: Translator, view: SideView) -> pd.DataFrame:
    rows = [
        {
            tr("inspector.col_module"): r.name,
            tr("inspector.col_place"): tr(f"inspector.place_{r.place}"),
            "μ²/RMS²": fmt.pct(r.share),
            "cos(x, 1)": fmt.num(r.cos),
            "RMS": fmt.num(r.rms),
            tr("inspector.col_top"): tr("inspector.top_at", dim=r.top_dim, token=r.top_token),
            tr("inspector.col_dims"): ", ".join(str(d) for d in r.dims),
            "|xᵢ|/RMS": fmt.num(r.top_ratio),
            tr("inspector.col_top_gain"): fmt.num(r.top_gain),
            "|yᵢ|/RMS(y)": fmt.num(r.out_ratio),
        }
        for r in view.readings
    ]
    return pd.DataFrame(rows).set_index(tr("inspector.col_module"))


def readings_section(tr: Translator, view: InspectorView, prompt: str) -> None:
    st.header(tr("inspector.readings_heading"))
    st.markdown(tr("inspector.readings_intro"))
    # The visitor's own text: shown as plain text, never as Markdown.
    st.code(prompt, language=None, wrap_lines=True)
    if prompt == DEFAULT_PROMPT:
        st.caption(tr("inspector.prompt_default"))
    for side, sv in view.sides.items():
        st.markdown(
            f"**{tr(f'inspector.side_{side}')} · {sv.summary.label}**: "
            + tr.claim(sv.claims["prompt"])
        )
    for formula in (IDENTITY_FORMULA, *SHARE_FORMULAS):
        st.latex(formula)
    for key, field in CHART_READINGS:
        log_y, percent = FIGURES[key]
        series = _series(view, field, tr)
        if not series:
            return
        # Titles as page text: they wrap on a phone, where a Plotly title is cut off.
        st.markdown(f"**{tr(f'inspector.{key}_title')}**")
        titles = {"x_title": tr("inspector.x_modules"), "y_title": tr(f"inspector.{key}_y")}
        fig = readings_figure(series, **titles, log_y=log_y, percent=percent)
        table, headers = readings_table(series, tr)
        chart(
            readable(fig),
            key=f"readings_{key}",
            title=tr(f"inspector.{key}_title"),
            words=tr.chart_words(view.claims, key, f"a_{key}", f"b_{key}"),
            table=table,
            headers=headers,
            file_name=f"normlab-inspector-{key}.csv",
            config=chart_config(f"norm-{key}"),
        )
        if key == "top":
            for formula in RATIO_FORMULAS:
                st.latex(formula)
    for side, sv in view.sides.items():
        if not sv.readings:
            continue
        st.subheader(f"{tr(f'inspector.side_{side}')} · {sv.summary.label}")
        for slot in ("identity", "share", "outlier", "treat"):
            st.markdown(tr.claim(sv.claims[slot]))
        with st.expander(tr("inspector.every_reading", name=sv.summary.label)):
            st.dataframe(reading_table(tr, sv))


# --- The page -----------------------------------------------------------------------------------


def main() -> None:
    lang = begin_page("inspector", PARAMS)
    tr = translator(lang)
    catalog = Catalog.from_env()
    state = controls(tr, catalog)
    if not state["model"]:
        st.info(tr("inspector.no_models"))
        share_box(PARAMS, lang)
        return
    wanted = {"a": state["model"]}
    if state["compare"] != NONE:
        wanted["b"] = state["compare"]
    ready = {
        side: link for side, link in wanted.items() if _load_with_progress(tr, side, link, catalog)
    }
    prompt = state["prompt"].strip()[:MAX_TEXT] or DEFAULT_PROMPT
    if ready:
        try:
            view = compute(tuple(ready.items()), prompt, catalog.settings)
        except Refusal as refusal:
            st.error(tr(f"inspector.refusal_{refusal.code}", name="", size=0, limit=0, reason=""))
        else:
            contract_section(tr, view)
            gains_section(tr, view)
            readings_section(tr, view, prompt)
            code_section(tr, inspector_code(dict(ready), prompt), "inspector.code_caption")
    share_box(PARAMS, lang)


if __name__ == "__main__":
    main()
