"""The code behind the attention page's numbers: the keys both norms hand to attention."""

from collections.abc import Mapping

from labkit.snippet_writing import call, program, title


def attention_code(state: Mapping[str, object]) -> str:
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
    return program(title("attention"), ["from labs.attention.model import attention_sandbox"], body)
