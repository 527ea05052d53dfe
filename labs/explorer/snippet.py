"""The explorer's snippet: x drawn (or typed) as the page has it, both norms with the page's
gain, biases, eps, pRMSNorm's p, backend and dtype, and the numbers the page shows."""

from collections.abc import Mapping

import numpy as np

from core.inputs import MAX_ABS_VALUE, VectorParseError, parse_vector
from labkit.snippet_writing import call, literal, program
from labs.explorer.state import DRAW

TITLE = "The code behind the explorer's numbers: x, both norms and their statistics."


def typed_text(state: Mapping[str, object]) -> str | None:
    """The typed x as the page reads it, or None where the page falls back to its draw (no
    text, text that does not read, or values that leave the limit once scaled)."""
    text = str(state.get("x", "")).strip()
    if not text:
        return None
    try:
        typed = parse_vector(text)
    except VectorParseError:
        return None
    x = float(state["scale"]) * typed + float(state["offset"])
    return text if np.max(np.abs(x)) <= MAX_ABS_VALUE else None


def _input_lines(state: Mapping[str, object]) -> list[str]:
    text = typed_text(state)
    if text is not None:
        # The page's own order of operations: scale first, then the offset.
        return [f"x = {literal(state['scale'])} * parse_vector({literal(text)}) + "
                f"{literal(state['offset'])}  # the typed x"]  # fmt: skip
    draw = call("make_input", state["d"], **{k: state[k] for k in DRAW})
    return [f"x = {draw}  # the page's seeded draw, shape (d,)"]


def _norm_lines(state: Mapping[str, object], torch: bool) -> list[str]:
    rms_args = "x, g, b_rms" if state["rms_bias"] else "x, g"
    options = f"eps={literal(state['eps'])}"
    if state["partial"] != 1.0:
        options += f", partial={literal(state['partial'])}"  # pRMSNorm: the first ceil(p d)
    lines = [
        f"y_rms = rms_norm({rms_args}, {options})",
        f"y_layer = layer_norm(x, g, beta, eps={literal(state['eps'])})",
    ]
    if torch:
        lines.append("# Back to float64 numpy to print (every value is exact in float64).")
        lines.append("x, y_rms, y_layer = (t.double().cpu().numpy() for t in (x, y_rms, y_layer))")
    return lines


def explorer_code(state: Mapping[str, object]) -> str:
    """The snippet for the explorer's ``state``: its link parameters (``x``, ``d``, ``dist``,
    ``seed``, ``offset``, ``scale``, ``eps``, ``gain``, ``gain_pattern``, ``bias``, ``rms_bias``,
    ``partial``, ``backend``, ``device``, ``dtype``), with ``dtype`` the one the page computed
    in (float64 where the asked dtype cannot hold x)."""
    torch = state["backend"] == "torch"
    typed = typed_text(state) is not None
    imports = ["import numpy as np"] + (["import torch"] if torch else [])
    imports += [
        "from core import layer_norm, rms_norm, vector_stats",
        "from core.inputs import gain_vector, " + ("parse_vector" if typed else "make_input"),
    ]
    body = _input_lines(state)
    body += [
        "d = x.shape[-1]",
        "g = " + call("gain_vector", "D", pattern=state["gain_pattern"], value=state["gain"],
                      seed=state["seed"]).replace("'D'", "d") + "  # the gain",
        f"beta = np.full(d, {literal(state['bias'])})  # LayerNorm's bias",
        f"b_rms = np.full(d, {literal(state['rms_bias'])})  # the bias after RMSNorm's gain",
    ]  # fmt: skip
    if torch:
        body.append(
            f"x, g, beta, b_rms = (torch.tensor(a, dtype=torch.{state['dtype']}, "
            f"device={literal(state['device'])}) for a in (x, g, beta, b_rms))"
        )
    body += _norm_lines(state, torch)
    body += [
        "",
        "print('x =', x)",
        "print('RMSNorm(x) =', y_rms)",
        "print('LayerNorm(x) =', y_layer)",
        "s = vector_stats(x)  # float64 statistics, no eps in them",
        "print('RMS(x) =', s.rms)",
        "print('std(x) =', np.sqrt(s.variance))",
        "print('mean =', s.mean)",
        "print('variance =', s.variance)",
        "print('|RMSNorm(x)| =', np.linalg.norm(y_rms))",
        "print('|LayerNorm(x)| =', np.linalg.norm(y_layer))",
        "# The statistics table: x and both outputs.",
        "for name, v in (('x', x), ('RMSNorm', y_rms), ('LayerNorm', y_layer)):",
        "    print(name, vector_stats(v, finite=False))",
    ]
    return program(TITLE, imports, body, needs="torch" if torch else "")
