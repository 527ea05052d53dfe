"""The training text: Python's own documentation, as shipped with CPython, read as bytes.

``pydoc_data.topics`` holds the text that ``help("with")`` prints, about 465 kB in 79 topics,
present in every CPython, so nothing is downloaded. The topics are joined in the order of their
names, encoded as UTF-8, and split once: the first 90 % of the bytes train, the last 10 %
validate. A model reads bytes (a vocabulary of 256), so any text can be fed to it.

The text changes between Python releases, so ``Corpus.sha256`` identifies the exact bytes a run
saw; a checkpoint records it with the Python version."""

from __future__ import annotations

import hashlib
import platform
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

SOURCE = "pydoc_data.topics"
# nanoGPT's shakespeare_char split: the first 90 % trains, the rest validates.
VAL_FRACTION = 0.1
_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Corpus:
    """The two halves of the split as uint8 arrays of byte ids, and where they came from."""

    train: np.ndarray
    val: np.ndarray
    sha256: str
    val_fraction: float
    python: str

    def describe(self) -> dict[str, Any]:
        """Plain data for a config file: enough to tell whether another machine has the same."""
        return {
            "source": SOURCE,
            "encoding": "utf-8 bytes, vocabulary 256",
            "order": "topics sorted by name, joined by a blank line",
            "bytes": int(self.train.size + self.val.size),
            "train_bytes": int(self.train.size),
            "val_bytes": int(self.val.size),
            "split": f"first {1 - self.val_fraction:.0%} train, last {self.val_fraction:.0%} val",
            "val_fraction": self.val_fraction,
            "sha256": self.sha256,
            "python": self.python,
        }


def corpus_text() -> str:
    """Every topic of ``pydoc_data.topics``, in name order, separated by a blank line."""
    from pydoc_data.topics import topics

    return _SEPARATOR.join(topics[name] for name in sorted(topics))


def encode(text: str) -> np.ndarray:
    """Text to byte ids: str -> (n,) uint8, UTF-8."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


def decode(ids: Any) -> str:
    """Byte ids back to text; a sequence cut inside a UTF-8 character shows U+FFFD there."""
    return bytes(np.asarray(ids, dtype=np.uint8).tolist()).decode("utf-8", errors="replace")


@lru_cache(maxsize=4)
def load_corpus(val_fraction: float = VAL_FRACTION) -> Corpus:
    """The split corpus; ``val_fraction`` of the bytes, taken from the end, validate."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1) (got {val_fraction!r})")
    data = encode(corpus_text())
    cut = int(round(data.size * (1.0 - val_fraction)))
    train, val = data[:cut], data[cut:]
    train.flags.writeable = False
    val.flags.writeable = False
    digest = hashlib.sha256(data.tobytes()).hexdigest()
    return Corpus(train, val, digest, val_fraction, platform.python_version())
