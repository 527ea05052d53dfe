"""The code behind the inspector's numbers."""

from collections.abc import Mapping

from labkit.snippet_writing import literal, program


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
    imports = ["from labs.inspector import Catalog, inspect_view"]
    return program("The code behind the inspector's numbers.", imports, body, needs="transformers")
