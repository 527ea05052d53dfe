"""The code behind the backward page's numbers: both norms' Jacobians and gradients."""

from collections.abc import Mapping

from labkit.snippet_writing import call, program, title


def backward_code(state: Mapping[str, object]) -> str:
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
    return program(title("backward pass"), ["from labs.backward.model import backward_view"], body)
