"""The code behind a lesson step's numbers."""

from labkit.snippet_writing import call, program, title


def lesson_code(step_id: str) -> str:
    """The step's computation: ``step_id`` as ``labs.lesson.options.STEP_IDS`` names it."""
    body = [
        f"result = {call('lesson_step', step_id)}",
        "for name, value in result.numbers.items():  # the numbers the step quotes",
        "    print(f'{name} =', value)",
    ]
    return program(title("lesson"), ["from labs.lesson.model import lesson_step"], body)
