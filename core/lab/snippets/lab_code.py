"""The labs' snippets: each calls the page's entry point in ``core.lab`` with the page's settings
and prints the numbers its metrics and tables show, at full precision."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.lab.snippets.writing import call, literal, program

State = Mapping[str, object]


def _title(page: str) -> str:
    return f"The code behind the {page} page's numbers."


def invariance_code(state: State) -> str:
    """Settings: ``transform``, ``size``, ``seed``, ``c_max``."""
    settings = {k: state[k] for k in ("transform", "size", "seed", "c_max")}
    body = [
        f"lab = {call('invariance_lab', **settings)}",
        "for norm in ('rms', 'layer'):  # the change up close: how far each output moved",
        "    print(f'residual {norm} =', lab.residual[norm])",
        "for row in lab.rows:  # the table: each change, each norm's residual",
        "    print(f'{row.id} rms =', row.rms_residual)",
        "    print(f'{row.id} layer =', row.layer_residual)",
        "# What a shift by c = c_max leaves: the spread of a case, two cases' distance.",
        "print('spread =', lab.shift.spread[-1])",
        "print('distance rms =', lab.shift.dist_rms[-1])",
        "print('distance layer =', lab.shift.dist_layer[-1])",
    ]
    return program(_title("invariance"), ["from core.lab.invariance import invariance_lab"], body)


def backward_code(state: State) -> str:
    """Settings: ``d``, ``offset``, ``eps``, ``seed``, ``grad``."""
    settings = {k: state[k] for k in ("d", "offset", "eps", "seed", "grad")}
    body = [
        f"view = {call('backward_view', **settings)}",
        "lesson = view.lesson  # None where a norm's Jacobian is undefined (x = 0, x constant)",
        "print('x =', lesson.x)",
        "print('eigenvalues rms =', lesson.eig_rms)",
        "print('eigenvalues layer =', lesson.eig_layer)",
        "# The gradient table: each vector along 1, along x, and its length.",
        "for name in ('upstream', 'rms', 'layer'):",
        "    part = lesson.parts[name]",
        "    print(f'{name} along 1 =', part.ones)",
        "    print(f'{name} along x =', part.radial)",
        "    print(f'{name} length =', part.norm)",
    ]
    return program(_title("backward pass"), ["from core.lab.backward import backward_view"], body)


def attention_code(state: State) -> str:
    """Settings: ``d``, ``n``, ``seed``, ``spread``, ``offset``, ``angle``, ``turn``,
    ``length`` (``d`` as the link holds it, "2" or "3")."""
    keys = ("n", "seed", "spread", "offset", "angle", "turn", "length")
    settings = {"d": int(state["d"]), **{k: state[k] for k in keys}}
    body = [
        f"box = {call('attention_sandbox', **settings)}",
        "for case in ('raw', 'rms', 'layer'):  # the keys as drawn, after RMSNorm, after LayerNorm",
        "    print(f'{case} keys =', box.cases[case].keyset.keys.tolist())",
        "    print(f'{case} weights =', box.cases[case].weights.tolist())",
    ]
    return program(_title("attention"), ["from core.lab.attention import attention_sandbox"], body)


def precision_code(state: State, dtypes: Sequence[str]) -> str:
    """Settings: ``d``, ``seed``, ``placement``, ``scale``, ``eps``; ``dtypes``: the table's
    rows (float16 and bfloat16 where torch is there)."""
    settings = {k: state[k] for k in ("d", "seed", "placement", "scale", "eps")}
    body = [
        f"view = {call('precision_view', **settings, dtypes=tuple(dtypes))}",
        "for row in view.rows:  # the table at the chosen scale",
        "    print(f'{row.dtype} mean square =', row.mean_square)",
        "    print(f'{row.dtype} mean square error =', row.mean_square_error)",
        "    print(f'{row.dtype} output error =', row.output_error)",
        "    print(f'{row.dtype} overflow =', row.overflow)",
    ]
    needs = "torch" if set(dtypes) & {"float16", "bfloat16"} else ""
    return program(_title("precision"), ["from core.lab.precision import precision_view"], body,
                   needs=needs)  # fmt: skip


def residual_code(state: State) -> str:
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
        return program(_title("residual"), ["from core.lab.residual import residual_view"], body)
    settings = {"seed": state["trained_seed"], "text": state["prompt"]}
    body = [
        f"view = {call('trained_view', **settings)}",
        "for norm in ('rms', 'layer', 'none'):  # each model's stream after the last block",
        "    for quantity, value in view.last[norm].items():",
        "        print(f'{norm} {quantity} =', value)",
        "    print(f'{norm} loss =', view.loss[norm])",
    ]
    imports = ["from core.lab.trained_residual import trained_view"]
    return program(_title("residual"), imports, body, needs="torch")


def contracts_code(state: State) -> str:
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
    imports = ["from core.lab.contracts import contracts_view"]
    return program(_title("contracts"), imports, body, needs=needs)


def lesson_code(step_id: str) -> str:
    """The step's computation: ``step_id`` as ``core.lab.lesson_options.STEP_IDS`` names it."""
    body = [
        f"result = {call('lesson_step', step_id)}",
        "for name, value in result.numbers.items():  # the numbers the step quotes",
        "    print(f'{name} =', value)",
    ]
    return program(_title("lesson"), ["from core.lab.lesson import lesson_step"], body)
