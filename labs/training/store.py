"""Checkpoints of ``labs.training.model.GPT``: weights in safetensors, a self-describing config
beside them.

A checkpoint is ``name.safetensors`` (every tensor, float32, no pickles) and ``name.json``
(the same config that the safetensors header carries under ``CONFIG_KEY``): the architecture
with the norm's class, eps and the place of every norm layer (``labs.training.model.describe``), the
dtype, and whatever the trainer adds (seed, steps, data split). ``load_checkpoint`` needs only
the safetensors file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORMAT = "normlab-checkpoint/1"
# safetensors metadata is a str -> str map; the whole config goes in as one JSON string.
CONFIG_KEY = "normlab_config"


def save_checkpoint(model: Any, path: str | Path, *, extra: dict[str, Any] | None = None) -> dict:
    """Write ``model``'s weights to ``path`` (.safetensors) and its config to ``path`` .json.

    ``extra`` is merged into the config (training settings, data). Returns the config."""
    from safetensors.torch import save_file

    from labs.training.model import describe

    path = Path(path)
    if path.suffix != ".safetensors":
        raise ValueError(f"path must end in .safetensors (got {path.name!r})")
    tensors = {name: t.detach().contiguous() for name, t in model.state_dict().items()}
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in tensors.values()})
    config = {
        "format": FORMAT,
        "model": describe(model.config),
        "dtype": dtypes[0] if len(dtypes) == 1 else dtypes,
        "parameters": int(sum(t.numel() for t in tensors.values())),
        "tensors": {name: list(t.shape) for name, t in tensors.items()},
        **(extra or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={CONFIG_KEY: json.dumps(config), "format": "pt"})
    path.with_suffix(".json").write_text(json.dumps(config, indent=1) + "\n")
    return config


def read_config(path: str | Path) -> dict[str, Any]:
    """The config stored in a checkpoint's safetensors header, without loading any tensor."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata() or {}
    if CONFIG_KEY not in metadata:
        raise ValueError(f"{Path(path).name} holds no {CONFIG_KEY!r} metadata: not a checkpoint")
    config = json.loads(metadata[CONFIG_KEY])
    if config.get("format") != FORMAT:
        raise ValueError(f"{Path(path).name}: unknown format {config.get('format')!r}")
    return config


def load_checkpoint(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """The model (in eval mode, on the CPU) and its config, from one ``.safetensors`` file."""
    from safetensors.torch import load_file

    from labs.training.model import GPT, ModelConfig

    config = read_config(path)
    fields = ModelConfig.__dataclass_fields__
    model = GPT(ModelConfig(**{k: v for k, v in config["model"].items() if k in fields}))
    model.load_state_dict(load_file(str(path)), strict=True)
    return model.eval(), config
