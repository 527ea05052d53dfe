"""The code behind the training lab's shipped numbers."""

from labkit.snippet_writing import program


def training_code() -> str:
    """The shipped runs: the same for every link (the live runs start from the button)."""
    body = [
        "view = reference_view()  # the shipped runs, assets/train/curves.json",
        "print('equal step =', view.equal_step)",
        "for norm, summary in view.norms.items():",
        "    print(f'{norm} validation loss at the equal step =', summary.mean_at_step)",
        "    print(f'{norm} median ms per step =', summary.median_step_ms)",
    ]
    imports = ["from labs.training.lab_view import reference_view"]
    return program("The code behind the training lab's shipped numbers.", imports, body)
