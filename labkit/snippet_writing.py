"""The pieces every generated snippet shares: its header, its literals and its calls.

A snippet is a short Python program that runs as it stands from NormLab's folder
(``python snippet.py``): a header that says so (and which optional package it needs), the
imports, the calls into the public core API with the page's settings written in as literals,
and prints of the numbers the page shows, at full precision."""

from __future__ import annotations

from collections.abc import Iterable

RUN_LINE = "# Save it in NormLab's folder and run it there: python snippet.py"
NEEDS = {
    "torch": "# Needs torch (pip install torch).",
    "transformers": "# Needs torch and transformers (pip install torch transformers).",
}


def literal(value: object) -> str:
    """``value`` as Python source that reads back equal: ``1e-05``, ``'normal'``, ``(1, 2)``."""
    if isinstance(value, bool | str) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        items = [literal(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no literal for {type(value).__name__}")


def call(function: str, *args: object, **kwargs: object) -> str:
    """``function(arg, key=value, ...)`` with every argument written as a literal."""
    parts = [literal(a) for a in args] + [f"{k}={literal(v)}" for k, v in kwargs.items()]
    return f"{function}({', '.join(parts)})"


def program(title: str, imports: Iterable[str], body: Iterable[str], *, needs: str = "") -> str:
    """The whole snippet: header, imports (in the order given, once each), a blank line, body."""
    head = [f"# {title}", RUN_LINE]
    if needs:
        head.append(NEEDS[needs])
    lines = [*head, *dict.fromkeys(imports), "", *body]
    return "\n".join(lines).rstrip() + "\n"


def title(page: str) -> str:
    """A lab's snippet's title: ``page`` as the page names itself."""
    return f"The code behind the {page} page's numbers."
