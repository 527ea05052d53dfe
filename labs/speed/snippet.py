"""The code behind the speed lab's numbers: its plan, then a measurement of its own."""

from collections.abc import Mapping

from labkit.snippet_writing import call, literal, program


def speed_code(state: Mapping[str, object]) -> str:
    """Settings: ``sweep``, ``d``, ``batch``, ``impl``, ``device``, ``dtype``, ``repeats``."""
    sweep, device, dtype = state["sweep"], state["device"], state["dtype"]
    d, batch = int(state["d"]), int(state["batch"])
    body = [
        f"widths, batches = {call('sweep_sizes', sweep, d, batch)}",
        f"the_plan = {call('plan', sweep, d, batch, state['impl'], device, dtype)}",
        "print('shapes (batch, d) =', list(the_plan.shapes))",
        "print('kernels =', list(the_plan.kernels))",
        "# The measurement: every timing is this machine's, now, and differs from run to run.",
        f"run = measure(widths, batches, implementation={literal(state['impl'])}, "
        f"device={literal(device)}, dtype={literal(dtype)}, repeats={literal(state['repeats'])})",
        "for m in run.measurements:  # the numbers table: median ms and GB/s",
        "    print(f'{m.batch} x {m.width} {m.kernel}: median ms =', m.median_s * 1e3,",
        "          '| GB/s =', m.gb_per_s)",
    ]
    imports = [
        "from labs.speed.model import plan, sweep_sizes",
        "from labs.speed.timing import measure",
    ]
    needs = "torch" if state["impl"] != "numpy" else ""
    return program("The code behind the speed lab's numbers.", imports, body, needs=needs)
