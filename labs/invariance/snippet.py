"""The code behind the invariance page's numbers: the shift or scale sweep through both norms."""

from collections.abc import Mapping

from labkit.snippet_writing import call, program, title


def invariance_code(state: Mapping[str, object]) -> str:
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
    return program(title("invariance"), ["from labs.invariance.model import invariance_lab"], body)
