"""The inspector's test models: tiny random Hugging Face models built offline, and an offline
Hugging Face cache holding one of them.

Fixture setup, not a check: the page tests, the core tests and the claims sweep open the same
folder, built once per process by :mod:`labs.inspector.tiny`.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path

from labs.inspector.tiny import build_all

# The snapshot a Hugging Face cache made by ``offline_hub_cache`` names.
HUB_SHA = "0123456789abcdef0123456789abcdef01234567"


@cache
def tiny_dir() -> Path:
    """A folder with one tiny model per family (``tiny-<family>``), built once per process,
    and ``tiny-bare``: the same Llama without its tokenizer (the page shows its contract only)."""
    root = Path(tempfile.mkdtemp(prefix="normlab-tiny-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    build_all(root)
    bare = root / "tiny-bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(root / "tiny-llama" / name, bare / name)
    return root


def offline_hub_cache(folder: Path, monkeypatch) -> Path:
    """A Hugging Face cache in ``folder / "hub"`` holding ``normlab/tiny-llama`` (``tiny_dir()``'s
    Llama), with the hub offline: HF_HUB_OFFLINE and HF_HUB_CACHE set through ``monkeypatch``
    on ``huggingface_hub.constants``, which reads them from the environment at import."""
    import huggingface_hub.constants as constants

    hub = folder / "hub"
    repo = hub / "models--normlab--tiny-llama"
    shutil.copytree(tiny_dir() / "tiny-llama", repo / "snapshots" / HUB_SHA)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(HUB_SHA)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    return hub
