"""The code behind every page's numbers: for each page, a function from the settings the page
computed with (its link state) to a short Python program that calls the public core API with
them and prints the numbers the page shows. The pages show it in a collapsed section
(``ui.code``); ``tests/test_snippets.py`` runs it and compares what it prints with the page.
"""

from core.lab.snippets.explorer_code import explorer_code
from core.lab.snippets.lab_code import (
    attention_code,
    backward_code,
    contracts_code,
    invariance_code,
    lesson_code,
    precision_code,
    residual_code,
)
from core.lab.snippets.run_code import inspector_code, speed_code, training_code
