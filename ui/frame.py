"""The frame every page shares: language, link notices, title and intro, the share box."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from labkit import style
from ui import chrome, fmt
from ui.export import ViewFileError, restore_state
from ui.i18n import DEFAULT_LANGUAGE, LANGUAGES, Translator, t
from ui.params import ChoiceParam, Notice, Param, apply_link_params, read_link_value, share_query
from ui.st_private import keep_in_link, written

# Link options that change how the app is shown, not what it computes. They are not widgets, so
# they stay in the URL as typed and are read on every run.
CONTROLS = ChoiceParam("controls", "shown", ("shown", "hidden"))
TEXT_SIZE = ChoiceParam("text", "normal", ("normal", "large"))
# Every name the app reads from the link on every page, whichever page is open: the language
# (``app.py``'s widget), the view mode above, and Streamlit's own ``embed`` and ``embed_options``
# (the presenter's iframe). A page's own parameters take other names (tests/test_params.py).
LANG_KEY = "lang"
_LAST_LANG_KEY = "_lang_last"
APP_KEYS = (LANG_KEY, CONTROLS.key, TEXT_SIZE.key, "embed", "embed_options")
# Set by app.py just before it runs the chosen page (see ensure_router).
ROUTED_KEY = "_routed"
ROUTE_TRIED_KEY = "_route_tried"
# The view mode of the current run, set by app.py through apply_view_mode.
VIEW_KEY = "_view_mode"

# The presenter's first screen shows the chart: no sidebar, and less room above the title
# (Streamlit leaves 6 rem for the sidebar's button, which the presenter view hides).
_HIDE_CONTROLS_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stExpandSidebarButton"] { display: none !important; }
[data-testid="stMainBlockContainer"] { padding-top: 4rem !important; }
</style>"""
# Streamlit sizes text in rem: the root size scales every label and paragraph. On a phone headings
# grow less (at 2.75 rem of 22 px, a title's word "berdampingan" overflowed the screen and the title
# alone filled the first screen) and a table keeps the phone's size, its longest words setting its
# width (at 22 px the inspector's ran 37 px off the screen, the contracts page's 83 px).
_LARGE_TEXT_CSS = """<style>
html { font-size: 22px; }
@media (max-width: 640px) {
  [data-testid="stMain"] h1 { font-size: 1.75rem !important; }
  [data-testid="stMain"] h2 { font-size: 1.375rem !important; }
  [data-testid="stMain"] h3 { font-size: 1.125rem !important; }
  [data-testid="stTable"] table, [data-testid="stMarkdownContainer"] table { font-size: 13px; }
}
</style>"""


@dataclass(frozen=True)
class ViewMode:
    hide_controls: bool
    large_text: bool


def read_view_mode() -> ViewMode:
    """``?controls=hidden`` (figures only, for projecting) and ``?text=large``.

    A bad or repeated value is corrected in the URL with a notice, like any other link parameter
    (kept for ``begin_page``, which puts it into the page's words)."""
    values = {}
    for param in (CONTROLS, TEXT_SIZE):
        value, problem, raw = read_link_value(param)
        if problem is not None:
            # Not a widget: the corrected value goes back into the URL, so the link stays true.
            st.query_params[param.key] = param.serialise(value)
            st.session_state.setdefault("_notices_app", []).append(Notice(param.key, raw, problem))
        values[param.key] = value
    return ViewMode(values["controls"] == "hidden", values["text"] == "large")


# What Streamlit's theme cannot say (the gap above the title is the theme's paddingTop):
# - KaTeX's display math scrolls sideways when wider than its box (overflow-x: auto), and every
#   stacked formula's table cells (.vlist-s) stuck out of it by 2 px: a scrollable region that the
#   keyboard cannot reach (axe-core's scrollable-region-focusable). 2 px of padding hold them.
# - Metric labels and deltas wrap instead of ending in an ellipsis: with two metrics to a phone's
#   line, "Residual, RMSNorm (worst case)" was cut to "Residual, RMSNorm (w…".
# - Words break at spaces and hyphens only: Streamlit's word-break: break-word made a table column
#   as narrow as a letter ("Implementasi" split into "Implem" and "entasi"). A word longer than a
#   line (a long link) still breaks rather than stick out of the page (overflow-wrap: break-word).
# On a phone (max-width: 640px):
# - Display math a little smaller than the text around it, not KaTeX's 1.21 em, so formulas (one
#   clause a line, ``ui.fmt.stacked``) fit. No Plotly toolbar: its nine buttons (shown after a tap)
#   cover the legend; fingers zoom and pan without it, and a laptop keeps the PNG button.
# - Code blocks wrap like table cells instead of scrolling sideways (a name longer than the line,
#   such as a call with its first argument, breaks where it must).
# - Titles are 1.5 rem, not Streamlit's 2.75 (the training lab's took six lines, most of the
#   first screen); the headings below, smaller still.
# - Table cells wrap so the table fits: st.table's scrolling box cannot take the keyboard's focus
#   (scrollable-region-focusable), and the contracts settings table was 788 px wide in Indonesian.
#   Each column is at least its longest word wide (automatic layout), in smaller type and padding,
#   so that table's four columns (two class names among them) fit the 356 px a phone leaves.
# - Images fit the page: the class board's 400 px QR code ran 27 px off a 390 px screen.
_BASE_CSS = """<style>
.katex-display { padding: 0 2px; }
[data-testid="stElementContainer"]:has(script[data-document-lang]) { display: none; }
[role="dialog"] [data-testid="stErrorCodeBlock"] { display: none; }
[data-testid="stMain"] * { word-break: normal !important; overflow-wrap: break-word !important; }
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"],
[data-testid="stMetricLabel"] p,
[data-testid="stMetricDelta"] [data-testid="stMarkdownContainer"],
[data-testid="stMetricDelta"] p { white-space: normal; }
@media (max-width: 640px) {
  [data-testid="stMain"] h1 { font-size: 1.5rem !important; }
  [data-testid="stMain"] h2 { font-size: 1.25rem !important; }
  [data-testid="stMain"] h3 { font-size: 1.0625rem !important; }
  .katex-display > .katex { font-size: 0.9em; }
  [data-testid="stTable"] table, [data-testid="stMarkdownContainer"] table {
    table-layout: auto; width: 100%; font-size: 0.8125rem; }
  [data-testid="stTable"] th, [data-testid="stTable"] td,
  [data-testid="stMarkdownContainer"] th, [data-testid="stMarkdownContainer"] td {
    white-space: normal; padding: 0.25rem; }
  [data-testid="stCode"] pre, [data-testid="stCode"] pre code {
    white-space: pre-wrap !important; max-width: 100%; }
  .js-plotly-plot .modebar-container { display: none; }
  [data-testid="stImage"], [data-testid="stImage"] * { max-width: 100%; height: auto; }
}
</style>"""


# Where a path or a dotted name may break: after a slash, after an underscore between letters, after
# a dot between names (not before a file's extension). On a phone a table's column is narrower than
# "modeling_gemma.py:" or "torch.nn.RMSNorm", and the table's CSS breaks no word in the middle.
_NAME_BREAKS = re.compile(r"(/|(?<=[a-z])_(?=[a-z])|\.(?!py\b)(?=\w))")


def breakable(name: str) -> str:
    """``name`` with an invisible break opportunity (U+200B) wherever it may wrap in a table."""
    return _NAME_BREAKS.sub("\\1\u200b", name)


def apply_view_mode(mode: ViewMode) -> None:
    """Hide the sidebar and enlarge the type as the link asks (our own CSS, no visitor text)."""
    st.session_state[VIEW_KEY] = mode
    st.html(_BASE_CSS)
    if mode.hide_controls:
        st.html(_HIDE_CONTROLS_CSS)
    if mode.large_text:
        st.html(_LARGE_TEXT_CSS)


def keep_a_language(previous: str) -> None:
    """The language control's change: a click on the chosen language keeps it (``previous`` is
    the browser's, the fallback) instead of leaving the page without one."""
    if st.session_state.get(LANG_KEY) not in LANGUAGES:
        st.session_state[LANG_KEY] = st.session_state.get(_LAST_LANG_KEY, previous)
    st.session_state[_LAST_LANG_KEY] = st.session_state[LANG_KEY]


def set_document_language(lang: str) -> None:
    """``<html lang>`` as the page's language, for screen readers and the browser's own words
    (Streamlit writes ``en`` on every page), and Streamlit's and Plotly's words in it
    (``ui.chrome``); run again on every switch and every page."""
    st.session_state[_LAST_LANG_KEY] = lang
    script = f'document.documentElement.lang = "{lang}";'  # lang is one of LANGUAGES
    body = f"<script data-document-lang>{script}{chrome.script(lang)}</script>"
    st.html(body, unsafe_allow_javascript=True)


def view_mode() -> ViewMode:
    """The view mode ``app.py`` read from the link for this run (plain view when unrouted)."""
    return st.session_state.get(VIEW_KEY, ViewMode(hide_controls=False, large_text=False))


# A metric's width in a metric row: two side by side, with the gap of 1 rem between them, fit
# the 356 px a phone (390 px wide) leaves for the page.
METRIC_WIDTH = 160


def metric_row() -> DeltaGenerator:
    """A row for metrics, side by side where they fit and at least two to a row on a phone
    (``st.columns`` puts each column on a row of its own below 640 px). Give each metric
    ``width=metric_width()``: ``with metric_row(): st.metric(label, value, width=...)``."""
    return st.container(horizontal=True, gap="small")


def metric_width() -> int:
    """A metric's width in pixels: ``METRIC_WIDTH``, wider with ``?text=large`` (the value's
    digits grow with the page's text and would otherwise end in an ellipsis)."""
    return round(METRIC_WIDTH * (style.LARGE_TEXT_SCALE if view_mode().large_text else 1.0))


def norm_formulas(tr: Translator, rms: str, layer: str, *, side_by_side: bool = True) -> None:
    """An RMSNorm and a LayerNorm formula, each named, RMSNorm first as on every page; clauses one
    per line (``fmt.stacked``), and wide ones one under the other."""
    pairs = (("common.rms_norm", rms), ("common.layer_norm", layer))
    places = st.columns(2) if side_by_side else [st.container() for _ in pairs]
    for place, (name, formula) in zip(places, pairs, strict=True):
        place.markdown(f"**{tr(name)}**")
        place.latex(fmt.stacked(formula))


def readable(fig: go.Figure) -> go.Figure:
    """``fig`` with every text at least 14 px, enlarged like the page's text with ``?text=large``
    (``labkit.style.readable``), its numbers in the page's language (decimal comma in Indonesian).
    Pages pass every figure through it before ``st.plotly_chart``."""
    lang = fmt.current_language()
    return style.readable(
        fig,
        large=view_mode().large_text,
        separators="".join(fmt.marks(lang)),
        localise=lambda text: fmt.localise(text, lang),
    )


# Figures a class draws alike, made once per worker: their specs by key, language and text size.
_SPECS: dict[tuple, dict] = {}
SPECS_KEPT = 256
_MAKING = threading.Lock()  # one run makes a missing spec, the others wait for it: no 100 makers


def readable_spec(key: tuple, build: Callable[[], go.Figure]) -> dict:
    """``readable(build())`` as a spec (plain dicts, which ``ui.st_private.plotly_spec`` hands
    Streamlit without a figure built), made once per ``key`` (which must name all the figure
    shows), language and text size.
    After a teacher's reveal every student's page draws the same figures at once: building and
    styling a Plotly figure was about half of each of those runs."""
    full = (key, fmt.current_language(), view_mode().large_text)
    with _MAKING:
        spec = _SPECS.get(full)
        if spec is None:
            if len(_SPECS) >= SPECS_KEPT:
                _SPECS.pop(next(iter(_SPECS)), None)
            spec = readable(build()).to_plotly_json()
            spec["layout"].pop("template", None)  # ``written`` adds Plotly's, shared, not copied
            _SPECS[full] = spec = written(spec)
    return spec


def presenting() -> bool:
    """Presenter view (``?controls=hidden``): figures and their explanations only, so a page
    shows no save, upload or share box and no sentence that points to a hidden control."""
    return view_mode().hide_controls


def current_lang() -> str:
    """The language chosen in the sidebar by ``app.py`` (a bound widget keyed ``lang``)."""
    lang = st.session_state.get("lang", DEFAULT_LANGUAGE)
    return lang if lang in LANGUAGES else DEFAULT_LANGUAGE


def ensure_router() -> None:
    """Make sure the page runs inside ``app.py``'s navigation, not on its own.

    Streamlit decides once per server process whether the app is a "pages/ directory" app: if
    the very first visitor after a start opens a deep link (``/invariance``), it runs that page
    file alone, without ``app.py``, and keeps doing so until some script calls
    ``st.navigation`` (AppTest even starts every run that way). A page that finds itself outside
    the router (``app.py`` marks each run it routes) builds the same ``st.navigation``, which turns
    that legacy mode off for the process, and reruns, so ``app.py`` runs and opens the same page.
    (The rerun drops a plain ``st.button`` click made in the same run, which only AppTest meets:
    in a server it happens once per process, on a first page load.)"""
    if st.session_state.pop(ROUTED_KEY, False):
        st.session_state.pop(ROUTE_TRIED_KEY, None)
        return
    if st.session_state.get(ROUTE_TRIED_KEY):
        # Still unrouted after one try: the page is the main script itself (a test running the
        # file alone), so it draws as a page of its own.
        return
    from ui.nav import navigation

    st.session_state[ROUTE_TRIED_KEY] = True
    navigation(current_lang(), position="hidden", icons=False)
    st.rerun()


def begin_page(topic: str, params: Sequence[Param], *, intro: str | None = None) -> str:
    """Check the link's parameters, then draw the page's title and intro. Returns the language.

    ``topic`` names the page's text file in ``assets/text``; it must define ``title`` and
    ``intro`` (``intro`` names another text key where the page's situation differs; "" draws
    none, for a page that draws its own once it knows which)."""
    ensure_router()
    st.session_state[CHART_FILES_KEY] = []
    if st.session_state.get(_LAST_TOPIC_KEY, topic) != topic:
        # Another page's values of keys this page shares (offset, eps, scale…) would set this
        # page's controls, snapped to their first stop where its values are not theirs: a page
        # opened from another starts from its link and its defaults.
        for param in params:
            st.session_state.pop(param.key, None)
    st.session_state[_LAST_TOPIC_KEY] = topic
    lang = current_lang()
    keep_in_link(p.key for p in params)  # a view's settings stay in the link while another shows
    notices = apply_link_params(params)
    if notices:
        # Kept for the session on this page: the visitor may need to reread which value changed.
        st.session_state[f"_notices_{topic}"] = notices
    # No anchor link: its hidden icon is one more stop for the keyboard and a screen reader.
    st.title(t(f"{topic}.title", lang), anchor=False)
    if intro != "":
        st.markdown(t(intro or f"{topic}.intro", lang))
    kept = st.session_state.get("_notices_app", []) + st.session_state.get(f"_notices_{topic}", [])
    if kept:
        # In the page's language, whatever the browser's: the notices are words only here.
        items = "\n".join(f"- {notice.text(lang)}" for notice in kept)
        st.warning(f"**{t('common.notices_heading', lang)}**\n\n{items}")
    return lang


@dataclass(frozen=True)
class Saving:
    """What a page offers to save and restore: its name (a saved view names the page it belongs
    to) and its files, each (text key, data or a callable, file name, MIME type). Pass callables
    for anything costly: Streamlit calls them only when the button is clicked."""

    page: str
    files: Sequence[tuple[str, object, str, str]]


SHARE_OPEN_KEY = "_share_open"
# The page the session's last run drew (``begin_page``).
_LAST_TOPIC_KEY = "_last_topic"
# The full data of the charts this run drew (``ui.chart.chart`` adds one ChartFile per chart,
# ``begin_page`` empties the list), offered as CSV in the share dialog.
CHART_FILES_KEY = "_chart_files"


@dataclass(frozen=True)
class ChartFile:
    """One chart's full data: its title (the button's label), a callable that writes the CSV,
    and the file's name."""

    title: str
    write: Callable[[], str]
    file_name: str


def share_box(
    params: Sequence[Param],
    lang: str,
    extra: dict[str, str] | None = None,
    *,
    saving: Saving | None = None,
) -> str:
    """A button that opens the share dialog: a copyable link that reproduces the current view,
    a presenter-link builder and, given ``saving``, downloads and a restore upload.

    The dialog draws nothing until it is opened, so its code block, checkboxes, download buttons
    and uploader (and the browser code behind them) cost a page nothing on load or on a slider
    move. Returns the plain link. In the presenter view nothing is drawn."""
    query = share_query(params, lang, extra)
    base = st.context.url or ""
    link = f"{base}?{query}"
    if presenting():
        return link
    st.subheader(t("common.share_heading", lang))
    st.caption(t("common.share_save_intro" if saving else "common.share_intro", lang))
    if saving is not None:  # a view restored in the dialog reran the whole page; say so here
        _restore_message(saving.page, lang)
    charts = tuple(st.session_state.get(CHART_FILES_KEY, ()))
    label = t("common.share_save_open" if saving else "common.share_open", lang)
    if not saving and charts:
        label = t("charts.share_open", lang)
    if st.button(label, key=SHARE_OPEN_KEY, icon=":material/share:"):
        title = t("common.share_save_heading" if saving else "common.share_heading", lang)
        st.dialog(title, width="large")(_share_dialog)(params, lang, link, saving, charts)
    return link


def _download_row(heading: str, files: Iterable[tuple[str, object, str, str]], key: str) -> None:
    """``heading`` in bold, then a download button per (label, data, file name, MIME type) in one
    row that wraps, each as wide as its label: in equal columns a long label ("Figure (HTML, works
    offline)") was cut off with an ellipsis."""
    st.markdown(f"**{heading}**")
    with st.container(horizontal=True, gap="small"):
        for label, data, file_name, mime in files:
            st.download_button(
                label,
                data,
                file_name=file_name,
                mime=mime,
                on_click="ignore",
                key=f"{key}{file_name}",
                icon=":material/download:",
            )


# The links' copy buttons, always shown: Streamlit shows a code block's copy button only while
# the pointer is over the block, which a phone cannot do, and the dialog's first sentence points
# to that button. The link's text wraps before the button's column instead of running under it.
_COPY_BUTTON_CSS = """<style>
[role="dialog"] [data-testid="stCode"] div:has([data-testid="stElementToolbarButton"]),
[role="dialog"] [data-testid="stCode"] [data-testid="stElementToolbarButton"],
[role="dialog"] [data-testid="stCode"] [data-testid="stElementToolbarButton"] button {
  visibility: visible !important; opacity: 1 !important; }
[role="dialog"] [data-testid="stCode"] pre { padding-right: 3.5rem; }
</style>"""


def _share_dialog(
    params: Sequence[Param],
    lang: str,
    link: str,
    saving: Saving | None,
    charts: Sequence[ChartFile] = (),
) -> None:
    st.html(_COPY_BUTTON_CSS)
    st.caption(t("common.share_help", lang))
    st.code(link, language=None, wrap_lines=True)
    st.markdown(f"**{t('common.present_heading', lang)}**")
    st.caption(t("common.present_help", lang))
    cols = st.columns(3)
    hide = cols[0].checkbox(t("common.present_hide", lang), value=True, key="_present_hide")
    large = cols[1].checkbox(t("common.present_large", lang), value=True, key="_present_large")
    embed = cols[2].checkbox(t("common.present_embed", lang), key="_present_embed")
    options = [("controls", "hidden")] * hide + [("text", "large")] * large
    options += [("embed", "true")] * embed
    present = link + "".join(f"&{k}={v}" for k, v in options)
    st.code(present, language=None, wrap_lines=True)
    if embed:
        st.caption(t("common.present_iframe", lang))
        st.code(
            f'<iframe src="{present}" width="100%" height="900" style="border:0"></iframe>',
            language="html",
            wrap_lines=True,
        )
    if charts:
        files = [
            (t("charts.download_label", lang, title=c.title), c.write, c.file_name, "text/csv")
            for c in charts
        ]
        _download_row(t("charts.downloads_heading", lang), files, "_chart_")
    if saving is not None:
        save_box(saving, params, lang)


def _restore_view(page: str, params: Sequence[Param]) -> None:
    """``on_change`` of the uploader: runs before the rerun, so widget values may be set."""
    upload = st.session_state.get(f"_restore_{page}")
    if upload is None:
        return
    try:
        values, problems = restore_state(upload.getvalue(), page, params)
    except ViewFileError as err:
        st.session_state[f"_restore_msg_{page}"] = ("error", f"common.restore_{err.code}")
        return
    for key, value in values.items():
        st.session_state[key] = value
    st.session_state[f"_notices_{page}"] = [Notice(k, raw, p) for k, raw, p in problems]
    st.session_state[f"_restore_msg_{page}"] = ("success", "common.restore_done")


def save_box(saving: Saving, params: Sequence[Param], lang: str) -> None:
    """Download buttons for the page's files and an uploader that restores a view saved as JSON
    by this page; drawn inside the share dialog."""
    page = saving.page
    files = [(t(label_key, lang), *rest) for label_key, *rest in saving.files]
    _download_row(t("common.save_heading", lang), files, "_save_")
    st.caption(t("common.save_png_hint", lang) + " " + t("common.save_machine", lang))
    st.file_uploader(
        t("common.restore_label", lang),
        type=["json"],
        key=f"_restore_{page}",
        on_change=_restore_view,
        args=(page, params),
    )
    message = st.session_state.get(f"_restore_msg_{page}")
    if message is not None and message[0] == "success":
        # The dialog reruns alone; the restored values must reach every widget on the page,
        # so the whole page runs again (which closes the dialog) and says so there.
        st.rerun()
    _restore_message(page, lang)


def _restore_message(page: str, lang: str) -> None:
    """The outcome of the last restore, shown once."""
    message = st.session_state.pop(f"_restore_msg_{page}", None)
    if message is not None:
        kind, key = message
        getattr(st, kind)(t(key, lang))
