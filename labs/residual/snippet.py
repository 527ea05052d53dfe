"""The code behind the residual page's numbers: a residual stream through both norms."""

from collections.abc import Mapping

from labkit.snippet_writing import call, program, title


def residual_code(state: Mapping[str, object]) -> str:
    """Settings: ``mode`` and either the synthetic trunk's ``layers``, ``d``, ``drift``,
    ``seed``, ``eps`` or the shipped models' ``trained_seed`` and ``prompt``."""
    if state["mode"] == "synthetic":
        keys = ("layers", "d", "drift", "seed", "eps")
        settings = {k: state[k] for k in keys}
        body = [
            f"view = {call('residual_view', **settings)}",
            "for norm in ('rms', 'layer'):  # each trunk's readings after the last layer",
            "    for quantity, value in view.last[norm].items():",
            "        print(f'{norm} {quantity} =', value)",
        ]
        return program(title("residual"), ["from labs.residual.model import residual_view"], body)
    settings = {"seed": state["trained_seed"], "text": state["prompt"]}
    body = [
        f"view = {call('trained_view', **settings)}",
        "for norm in ('rms', 'layer', 'none'):  # each model's stream after the last block",
        "    for quantity, value in view.last[norm].items():",
        "        print(f'{norm} {quantity} =', value)",
        "    print(f'{norm} loss =', view.loss[norm])",
    ]
    imports = ["from labs.residual.trained import trained_view"]
    return program(title("residual"), imports, body, needs="torch")
