"""The code behind the precision page's numbers: each dtype against float64."""

from collections.abc import Mapping, Sequence

from labkit.snippet_writing import call, program, title


def precision_code(state: Mapping[str, object], dtypes: Sequence[str]) -> str:
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
    return program(title("precision"), ["from labs.precision.model import precision_view"], body,
                   needs=needs)  # fmt: skip
