"""Streamlit's and Plotly's own English (tooltips, the upload box, the dialog of a lost
connection, which tells a student to restart a server in a terminal) in the page's words:
:func:`script` watches the page and replaces each string of ``assets/text/chrome.toml`` where a
text or an attribute is that string in full, outside figures and code. It also gives a formula
that scrolls sideways the keyboard's focus."""

from __future__ import annotations

import json
from functools import cache

from ui.i18n import LANGUAGES, catalogue, metadata

# The attributes that carry a tooltip or an accessible name.
ATTRIBUTES = ("title", "aria-label", "data-title")
# Text inside these is the page's own (figures, code, icons' names), never Streamlit's chrome.
# The page's other text is in its own language, where no text is one of these strings alone.
OWN = 'svg, pre, textarea, [data-testid="stCode"], [data-testid="stIconMaterial"]'

_SCRIPT = """(() => {
  window.__normlabWords = WORDS;
  window.__normlabPrefixes = PREFIX_LIST;
  if (window.__normlabChrome) { window.__normlabChrome(document.body); return; }
  const attrs = ATTRS, own = OWN;
  const swap = (root) => {
    if (!root || root.nodeType !== 1) return;
    const words = window.__normlabWords, PREFIXES = window.__normlabPrefixes;
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const text = n.nodeValue.trim(), word = words[text];
      if (word && word !== text && !n.parentElement.closest(own)) {
        n.nodeValue = n.nodeValue.replace(text, word);
      }
    }
    for (const el of [root, ...root.querySelectorAll(attrs.map((a) => `[${a}]`).join(","))]) {
      for (const a of attrs) {
        const value = el.getAttribute(a), word = value && words[value];
        if (word && word !== value) el.setAttribute(a, word);
        const [from, to] = PREFIXES.find(([from]) => value?.startsWith(from)) || [];
        if (from && from !== to) el.setAttribute(a, to + value.slice(from.length));
      }
    }
  };
  window.__normlabChrome = swap;
  // A phone held sideways is wide enough for Streamlit to open the sidebar over a third of a
  // short screen: the first page opens with it closed there, as on a phone held upright.
  if (innerHeight < 500 && innerWidth < 1000) {
    const open = '[data-testid="stSidebar"][data-collapsed="false"]';
    document.querySelector(`${open} [data-testid="stSidebarCollapseButton"] button`)?.click();
  }
  // A formula wider than its box scrolls sideways: the keyboard can reach it then (axe-core:
  // scrollable-region-focusable), and only then (no tab stop on a formula that fits).
  const reach = () => document.querySelectorAll(".katex-display").forEach((e) => {
    if (e.scrollWidth > e.clientWidth) e.tabIndex = 0; else e.removeAttribute("tabindex");
  });
  let pending = 0;
  const later = () => { cancelAnimationFrame(pending); pending = requestAnimationFrame(reach); };
  addEventListener("resize", later);
  document.fonts.addEventListener("loadingdone", later);
  const element = (n) => (n.nodeType === 3 ? n.parentElement : n);
  new MutationObserver((changes) => { later(); changes.forEach((c) => {
    if (c.type === "childList") c.addedNodes.forEach((n) => swap(element(n)));
    else swap(element(c.target));
  }); }).observe(document.body, {subtree: true, childList: true, characterData: true,
                                 attributes: true, attributeFilter: attrs});
  swap(document.body);
})();"""


@cache
def words(lang: str) -> dict[str, str]:
    """Each string to replace on a ``lang`` page and its replacement: Streamlit's or Plotly's own
    string, and the other languages' words (a page switched from another language). A string
    with ``{}`` is a prefix (``Help for {}``): the words before it, and theirs."""
    out: dict[str, str] = {}
    for key, texts in catalogue().items():
        if key.startswith("chrome."):
            sources = [metadata(key).get("source", texts["en"])]
            sources += [texts[other] for other in LANGUAGES if other != lang]
            out |= dict.fromkeys(sources, texts[lang])
    return out


@cache
def script(lang: str) -> str:
    """The script that writes the browser's own words in ``lang`` (installed once a page)."""
    prefixes = [
        [k.removesuffix("{}"), v.removesuffix("{}")] for k, v in words(lang).items() if "{}" in k
    ]
    exact = {k: v for k, v in words(lang).items() if "{}" not in k}
    values = {"WORDS": exact, "PREFIX_LIST": prefixes, "ATTRS": list(ATTRIBUTES), "OWN": OWN}
    text = _SCRIPT
    for name, value in values.items():
        text = text.replace(name, json.dumps(value, ensure_ascii=False), 1)
    return text
