"""Where a model may come from, and the one way a link names it.

Three kinds of source, and nothing else (no path or URL from a link ever reaches the loader), as
docs/inspector.md describes: ``shipped`` (``assets/train/``, a link names one by its file stem,
``rms-seed0``), ``local`` (``NORMLAB_MODEL_DIRS``, ``local:<folder name>``) and ``hub``
(``NORMLAB_HUB=1``, ``owner/name`` matching :data:`HUB_ID`). ``NORMLAB_MAX_MODEL_GB`` caps the
size of the weights a load may bring into memory."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

HUB_ENV = "NORMLAB_HUB"
DIRS_ENV = "NORMLAB_MODEL_DIRS"
SIZE_ENV = "NORMLAB_MAX_MODEL_GB"
# Sized for a 2-vCPU, 16 GB host running the app as two workers (python -m serve): each keeps at
# most two models of this size (2 x 2 x 2.5 = 10 GiB), and one load at a time on the host. 2.5 GiB
# holds a 1.2B-parameter model in bfloat16 (Llama 3.2 1B, Gemma 3 1B, TinyLlama) or GPT-2 medium.
DEFAULT_MAX_GB = 2.5
GIB = 2**30
SHIPPED_DIR = Path(__file__).resolve().parent.parent.parent / "assets" / "train"
LOCAL_PREFIX = "local:"
# Hugging Face's own rule for a repository id, made strict: owner/name, each 1-96 letters, digits,
# '-', '_' or '.', starting and ending with a letter or digit, with no '--' or '..' anywhere.
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
HUB_ID = re.compile(rf"{_PART}/{_PART}")
# Shipped stems and local folder names a link may carry.
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?")
_TRUE = ("1", "true", "yes", "on")


def valid_hub_id(text: str) -> bool:
    """Whether ``text`` is a Hugging Face model id this page may load (``owner/name``)."""
    return bool(HUB_ID.fullmatch(text)) and "--" not in text and ".." not in text


def _valid_name(text: str) -> bool:
    return bool(_NAME.fullmatch(text)) and ".." not in text


@dataclass(frozen=True)
class Settings:
    """What the host allows: the hub switch, the listed local directories, the size cap."""

    hub: bool = False
    model_dirs: tuple[Path, ...] = ()
    max_bytes: int = int(DEFAULT_MAX_GB * GIB)
    shipped_dir: Path = SHIPPED_DIR

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings in ``env`` (``os.environ`` by default); a bad size cap keeps the default."""
        env = os.environ if env is None else env
        dirs = tuple(Path(p).expanduser() for p in env.get(DIRS_ENV, "").split(os.pathsep) if p)
        try:
            gigabytes = float(env.get(SIZE_ENV, DEFAULT_MAX_GB))
        except ValueError:
            gigabytes = DEFAULT_MAX_GB
        if not 0 < gigabytes < 1e6:
            gigabytes = DEFAULT_MAX_GB
        hub = env.get(HUB_ENV, "").strip().lower() in _TRUE
        # SHIPPED_DIR read now, not when the class was defined: a test may point it elsewhere.
        return cls(
            hub=hub, model_dirs=dirs, max_bytes=int(gigabytes * GIB), shipped_dir=SHIPPED_DIR
        )


@dataclass(frozen=True)
class ModelRef:
    """One model: its ``kind`` (shipped, local, hub), the ``link`` value that names it, and its
    ``location`` (a file, a directory or a hub id), which never comes from a link."""

    kind: str
    link: str
    location: str

    @property
    def label(self) -> str:
        """The short name a reader sees (the link value without its prefix)."""
        return self.link.removeprefix(LOCAL_PREFIX)


def _is_model_dir(path: Path) -> bool:
    return (path / "config.json").is_file()


def _local_models(dirs: tuple[Path, ...]) -> dict[str, Path]:
    """Each listed directory that holds a model, and each model folder inside the others; the
    first of two folders with one name wins."""
    found: dict[str, Path] = {}
    for directory in dirs:
        if not directory.is_dir():
            continue
        candidates = [directory] if _is_model_dir(directory) else sorted(directory.iterdir())
        for path in candidates:
            if path.is_dir() and _is_model_dir(path) and _valid_name(path.name):
                found.setdefault(path.name, path.resolve())
    return found


def _shipped_models(directory: Path) -> dict[str, Path]:
    if not directory.is_dir():
        return {}
    return {
        path.stem: path
        for path in sorted(directory.glob("*.safetensors"))
        if _valid_name(path.stem) and path.with_suffix(".json").is_file()
    }


@dataclass(frozen=True)
class Catalog:
    """The models this server offers, by link value, and the rule for hub ids."""

    settings: Settings = field(default_factory=Settings)

    @property
    def shipped(self) -> dict[str, Path]:
        return _shipped_models(self.settings.shipped_dir)

    @property
    def local(self) -> dict[str, Path]:
        return _local_models(self.settings.model_dirs)

    def choices(self) -> tuple[str, ...]:
        """The link values of the shipped and local models, in that order."""
        return (*self.shipped, *(LOCAL_PREFIX + name for name in self.local))

    def resolve(self, link: str) -> ModelRef | None:
        """The model a link value names, or None when this server offers no such model."""
        if link.startswith(LOCAL_PREFIX):
            path = self.local.get(link.removeprefix(LOCAL_PREFIX))
            return None if path is None else ModelRef("local", link, str(path))
        if "/" in link:
            ok = self.settings.hub and valid_hub_id(link)
            return ModelRef("hub", link, link) if ok else None
        path = self.shipped.get(link)
        return None if path is None else ModelRef("shipped", link, str(path))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Catalog:
        return cls(Settings.from_env(env))
