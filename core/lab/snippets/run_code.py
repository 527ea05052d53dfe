"""The snippets of the pages that measure, train or load: the speed lab (its plan, then a
measurement of its own), the training lab (the shipped runs) and the checkpoint inspector."""

from __future__ import annotations

from collections.abc import Mapping

from core.lab.snippets.writing import call, literal, program

State = Mapping[str, object]


def speed_code(state: State) -> str:
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
        "from core.lab.speed import plan, sweep_sizes",
        "from core.lab.timing import measure",
    ]
    needs = "torch" if state["impl"] != "numpy" else ""
    return program("The code behind the speed lab's numbers.", imports, body, needs=needs)


def training_code() -> str:
    """The shipped runs: the same for every link (the live runs start from the button)."""
    body = [
        "view = reference_view()  # the shipped runs, assets/train/curves.json",
        "print('equal step =', view.equal_step)",
        "for norm, summary in view.norms.items():",
        "    print(f'{norm} validation loss at the equal step =', summary.mean_at_step)",
        "    print(f'{norm} median ms per step =', summary.median_step_ms)",
    ]
    imports = ["from core.training.lab_view import reference_view"]
    return program("The code behind the training lab's shipped numbers.", imports, body)


def inspector_code(links: Mapping[str, str], text: str) -> str:
    """``links``: side ("a", "b") to the model's link value; ``text``: the prompt read."""
    body = [
        "catalog = Catalog.from_env()  # the models this machine offers (NORMLAB_* settings)",
        f"view = inspect_view({literal(dict(links))}, {literal(text)}, catalog.settings)",
        "for side, sv in view.sides.items():",
        "    s = sv.summary",
        "    print(f'{side} parameters =', s.parameters)",
        "    print(f'{side} dtype =', s.dtype)",
        "    print(f'{side} width =', s.width)",
        "    print(f'{side} norm modules =', len(sv.contract.modules))",
        "    for m in sv.contract.modules:",
        "        print(f'{side} {m.name}: place =', m.place, '| d =', m.width)",
    ]
    imports = ["from core.inspector import Catalog, inspect_view"]
    return program("The code behind the inspector's numbers.", imports, body, needs="transformers")
