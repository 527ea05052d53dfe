"""The snippet of the training lab's S-curve view: the shipped models of one seed, every norm
layer's fitted tanh and straight line, as the view's table shows them."""

from __future__ import annotations

from labkit.snippet_writing import call, program


def scurve_code(seed: int) -> str:
    """``seed``: the training seed of the shipped models the view reads."""
    body = [
        f"view = {call('scurve_view', seed=int(seed))}  # assets/train, read on view.text",
        "for norm, curves in view.curves.items():",
        "    for c in curves:  # every norm layer, in forward order",
        "        f = c.fit  # A·tanh(alpha·x) and k·x, fitted to all of the layer's points",
        "        print(f'{norm} {c.name} alpha =', f.alpha)",
        "        print(f'{norm} {c.name} A =', f.amplitude)",
        "        print(f'{norm} {c.name} R2 =', f.r2)",
        "        print(f'{norm} {c.name} R2 of the line =', f.line_r2)",
        "        print(f'{norm} {c.name} largest |alpha x| =', f.reach)",
        "        print(f'{norm} {c.name} denominators max/min =', c.ratio)",
    ]
    imports = ["from labs.training.scurve_view import scurve_view"]
    return program("The code behind the S-curve's numbers.", imports, body, needs="torch")
