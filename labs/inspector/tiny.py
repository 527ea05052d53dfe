"""Tiny random Hugging Face causal language models, built offline from their configs.

For the tests, and for a host who wants to try the local-directory source without downloading
anything (``python -m labs.inspector.tiny /srv/models``, docs/inspector.md). Each model has two
layers of width 32; its norm weights are drawn around the family's initial value (1 for a direct
gain, 0 for Gemma's offset), so that the stored weights say which convention the model uses, and
it is saved in the dtype its family ships in (bfloat16 for the RMSNorm families, float32 for GPT-2).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

FAMILIES = ("llama", "gemma", "olmo2", "gpt2")
VOCAB = 320
WIDTH = 32
# The spread of the drawn norm weights around their initial value.
GAIN_SPREAD = 0.1
DTYPE = {"llama": "bfloat16", "gemma": "bfloat16", "olmo2": "bfloat16", "gpt2": "float32"}
_CORPUS = (
    "A normalisation layer divides each token vector by its root mean square.",
    "Lapisan normalisasi membagi setiap vektor token dengan akar rata-rata kuadratnya.",
    "LayerNorm subtracts the mean first; RMSNorm keeps it.",
)


def tiny_config(family: str) -> Any:
    """The transformers config of a tiny ``family`` model (two layers, width 32)."""
    import transformers

    shared = {"vocab_size": VOCAB, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": None}
    decoder = {**shared, "hidden_size": WIDTH, "intermediate_size": 2 * WIDTH}
    decoder |= {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}
    decoder["max_position_embeddings"] = 128
    if family == "llama":
        return transformers.LlamaConfig(**decoder, rms_norm_eps=1e-5)
    if family == "gemma":
        return transformers.GemmaConfig(**decoder, head_dim=WIDTH // 4, rms_norm_eps=1e-6)
    if family == "olmo2":
        return transformers.Olmo2Config(**decoder, rms_norm_eps=1e-6)
    if family == "gpt2":
        return transformers.GPT2Config(
            **shared, n_embd=WIDTH, n_layer=2, n_head=4, n_positions=128, layer_norm_epsilon=1e-5
        )
    raise ValueError(f"family must be one of {list(FAMILIES)} (got {family!r})")


def _tokenizer() -> Any:
    """A byte-level BPE tokenizer with ``VOCAB`` entries or fewer, trained on ``_CORPUS``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>")


def _draw_norm_weights(model: Any, seed: int) -> None:
    """Every norm weight becomes its initial value (1 or 0) plus N(0, GAIN_SPREAD²) noise."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if "norm" in name or ".ln_" in name:
                base = 0.0 if name.endswith(".bias") else float(param.mean())
                noise = torch.randn(param.shape, generator=generator) * GAIN_SPREAD
                param.copy_(base + noise)


def build_tiny(family: str, directory: str | Path, *, seed: int = 0) -> Path:
    """Build, seed and save a tiny ``family`` model with its tokenizer into ``directory``."""
    import torch
    from transformers import AutoModelForCausalLM

    config = tiny_config(family)
    torch.manual_seed(seed)  # transformers' own initialisation draws from the global generator
    model = AutoModelForCausalLM.from_config(config)
    _draw_norm_weights(model, seed)
    model = model.to(getattr(torch, DTYPE[family]))
    path = Path(directory)
    model.save_pretrained(path)
    _tokenizer().save_pretrained(path)
    return path


def build_all(directory: str | Path, *, seed: int = 0) -> dict[str, Path]:
    """One tiny model per family in ``directory/tiny-<family>``; the folder names are the
    ``local:`` names a link uses once ``directory`` is listed in ``NORMLAB_MODEL_DIRS``."""
    from transformers.utils import logging

    logging.disable_progress_bar()
    return {f: build_tiny(f, Path(directory) / f"tiny-{f}", seed=seed) for f in FAMILIES}


if __name__ == "__main__":
    for path in build_all(sys.argv[1] if len(sys.argv) > 1 else "tiny-models").values():
        print(path)
