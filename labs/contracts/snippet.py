"""The code behind the contracts page's numbers: two implementations' contracts compared."""

from collections.abc import Mapping

from labkit.snippet_writing import literal, program, title


def contracts_code(state: Mapping[str, object]) -> str:
    """Settings: ``a``, ``b``, ``eps_a``, ``eps_b``, ``red_a``, ``red_b``, ``checkpoint``,
    ``dtype``, ``d``, ``seed``, ``scale``."""
    keys = ("a", "b", "eps_a", "eps_b", "red_a", "red_b", "checkpoint", "dtype", "d", "seed")
    settings = {k: state[k] for k in (*keys, "scale")}
    body = [
        "# Both presets on the same seeded input and synthetic checkpoint, in the chosen dtype.",
        f"view = contracts_view({literal(settings)})",
        "c = view.comparison",
        "print('y_A =', c.y_a)",
        "print('y_B =', c.y_b)",
        "print('max |y_B - y_A| =', c.max_abs)",
        "print('relative =', c.relative)",
        "for key in ('eps', 'eps_placement', 'reduction_dtype', 'gain_mode', 'cast'):",
        "    print(f'{key}: A =', c.settings_a[key], '| B =', c.settings_b[key])",
    ]
    needs = "torch" if state["dtype"] in ("float16", "bfloat16") else ""
    imports = ["from labs.contracts.model import contracts_view"]
    return program(title("contracts"), imports, body, needs=needs)
