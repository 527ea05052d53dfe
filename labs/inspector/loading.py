"""Loading a model for inspection: one load at a time, a few models kept, refusals by code.

:func:`load` turns a :class:`~labs.inspector.sources.ModelRef` into a :class:`LoadedModel`: the
torch module in eval mode with its gradients off, its size and dtype, and a tokenizer. Every way
it can fail that a visitor can cause or a host can meet (an unknown id, no network, a model too
large, a model that is not a causal language model, weights only in pickle files, a model that
needs its own code) raises :class:`Refusal` with a code and fields, which the page translates;
nothing a link carries is ever passed to the loader but a hub id that matched the strict pattern.

Loads are serialised by one lock across the host's processes; each keeps its last few models
in an LRU cache bounded by count and bytes."""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import json
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labs.inspector.sources import ModelRef, Settings

try:  # POSIX: the load lock holds across the app's processes
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process's lock only
    fcntl = None

# The two models shown side by side, and one more a visitor switched away from.
MAX_CACHED = 3
# How long a visitor's load waits for another visitor's to finish before giving up.
LOAD_WAIT_S = 300.0
# Files a hub load fetches: the config first (to check it), then weights and tokenizer only.
CONFIG_FILES = ["config.json"]
MODEL_FILES = [
    "config.json",
    "generation_config.json",
    "*.safetensors",
    "*.safetensors.index.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
]
Progress = Callable[[str], None]


class Refusal(Exception):
    """Why a model was not loaded: ``code`` names the text, ``fields`` are what it quotes."""

    def __init__(self, code: str, **fields: Any) -> None:
        super().__init__(code, fields)
        self.code = code
        self.fields = fields


@dataclass(frozen=True)
class ModelFacts:
    """What the inspector says about a model: its class and family, its parameters, ``nbytes``
    (its weights in memory), dtype, width and ``context``, the longest sequence it reads."""

    architecture: str
    family: str
    parameters: int
    nbytes: int
    dtype: str
    width: int
    context: int


@dataclass(frozen=True)
class LoadedModel(ModelFacts):
    """A model ready for inspection. ``encode`` turns text into token ids (None: no tokenizer)."""

    ref: ModelRef
    model: Any
    encode: Callable[[str], list[int]] | None
    config: dict[str, Any] = field(default_factory=dict)
    # What the inspector has read from this model once (its contract), kept with it.
    memo: dict[str, Any] = field(default_factory=dict)
    # Hooks are registered on the shared modules: one pass at a time per model, or one
    # visitor's hooks would read another's forward pass.
    lock: threading.Lock = field(default_factory=threading.Lock)


class HostLock:
    """One load at a time on the whole host: a thread lock for this process, and an exclusive
    ``flock`` on a file that every process of the app opens (``python -m serve`` runs several
    workers), where the platform has ``fcntl``."""

    POLL_S = 0.1

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread = threading.Lock()
        self._file: Any = None

    def locked(self) -> bool:
        if self._thread.locked():
            return True
        if fcntl is None:
            return False
        with self.path.open("a") as probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(probe, fcntl.LOCK_UN)
        return False

    def acquire(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        if not self._thread.acquire(timeout=max(timeout, 0.0)):
            return False
        if fcntl is None:
            return True
        handle = self.path.open("a")
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                if time.monotonic() >= deadline:
                    handle.close()
                    self._thread.release()
                    return False
                time.sleep(self.POLL_S)
                continue
            self._file = handle
            return True

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None
        self._thread.release()

    def __enter__(self) -> HostLock:
        if not self.acquire(LOAD_WAIT_S):
            raise Refusal("busy")
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


_CACHE: OrderedDict[tuple[str, str], LoadedModel] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_LOAD_LOCK = HostLock(Path(tempfile.gettempdir()) / "normlab-inspector-load.lock")


def _key(ref: ModelRef) -> tuple[str, str]:
    return (ref.kind, ref.location)


def _cached(ref: ModelRef, settings: Settings) -> LoadedModel | None:
    with _CACHE_LOCK:
        hit = _CACHE.get(_key(ref))
        if hit is not None:
            _CACHE.move_to_end(_key(ref))
    if hit is not None and hit.nbytes > settings.max_bytes:
        raise Refusal("too_large", size=hit.nbytes, limit=settings.max_bytes)
    return hit


def _make_room(nbytes: int, settings: Settings) -> None:
    """Before a model of ``nbytes`` is read, drop the least recently used models until it fits
    beside the rest: at most MAX_CACHED models within twice the size cap (two models side by
    side), so memory never holds more than that, even while loading."""
    budget = 2 * settings.max_bytes
    with _CACHE_LOCK:
        while _CACHE and (
            len(_CACHE) >= MAX_CACHED or sum(m.nbytes for m in _CACHE.values()) + nbytes > budget
        ):
            _CACHE.popitem(last=False)
    gc.collect()


def is_loaded(ref: ModelRef) -> bool:
    """Whether ``ref`` is in the cache (the page shows a progress box only when it is not)."""
    with _CACHE_LOCK:
        return _key(ref) in _CACHE


def clear_cache(*, collect: bool = True) -> None:
    """Forget every loaded model; ``collect`` also runs the garbage collector at once, so that
    their memory goes back now (a full collection takes a noticeable part of a second in a
    process that has imported torch)."""
    with _CACHE_LOCK:
        _CACHE.clear()
    if collect:
        gc.collect()


def load(
    ref: ModelRef,
    settings: Settings,
    progress: Progress | None = None,
    *,
    wait_s: float = LOAD_WAIT_S,
) -> LoadedModel:
    """The model ``ref`` names, from the cache or loaded now (one load at a time).

    ``progress`` is called with a step code as the load advances: ``wait`` (another load is
    running), ``config``, ``download``, ``weights``. Raises :class:`Refusal`."""
    step = progress or (lambda _: None)
    hit = _cached(ref, settings)
    if hit is not None:
        return hit
    if _LOAD_LOCK.locked():
        step("wait")
    if not _LOAD_LOCK.acquire(timeout=wait_s):
        raise Refusal("busy")
    try:
        hit = _cached(ref, settings)  # loaded by another visitor while this one waited
        if hit is not None:
            return hit
        loaded = _LOADERS[ref.kind](ref, settings, step)
        with _CACHE_LOCK:
            _CACHE[_key(ref)] = loaded
            _CACHE.move_to_end(_key(ref))
        return loaded
    except Refusal:
        raise
    except Exception as err:  # a broken file, an unsupported layout: the page must go on
        raise Refusal("broken", reason=type(err).__name__) from err
    finally:
        _LOAD_LOCK.release()


# --- NormLab's own checkpoints ------------------------------------------------------------------


def _load_shipped(ref: ModelRef, settings: Settings, step: Progress) -> LoadedModel:
    """A ``labs.training.model.GPT`` checkpoint: byte tokens, the config in the JSON beside it."""
    from labs.training.store import load_checkpoint

    step("config")
    path = Path(ref.location)
    config = json.loads(path.with_suffix(".json").read_text())
    nbytes = int(config["parameters"]) * 4  # float32, as the trainer saves them
    if nbytes > settings.max_bytes:
        raise Refusal("too_large", size=nbytes, limit=settings.max_bytes)
    step("weights")
    _make_room(nbytes, settings)
    model, config = load_checkpoint(path)
    model.requires_grad_(False)
    arch = config["model"]
    return LoadedModel(
        ref=ref,
        model=model.eval(),
        architecture=type(model).__name__,
        family="normlab",
        parameters=int(config["parameters"]),
        nbytes=nbytes,
        dtype=str(config["dtype"]),
        width=int(arch["n_embd"]),
        context=int(arch["block_size"]),
        encode=lambda text: list(text.encode("utf-8")),
        config=config,
    )


# --- Hugging Face models: a listed directory, or a hub id fetched into the local cache ----------


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The network errors of the HTTP client huggingface_hub uses (httpx2 or httpx): no
    connection, a timeout, a download cut off. Neither derives from OSError."""
    found: list[type[BaseException]] = [ConnectionError, TimeoutError]
    with contextlib.suppress(ImportError, AttributeError):
        found.append(importlib.import_module("httpx2").TransportError)
    with contextlib.suppress(ImportError, AttributeError):
        found.append(importlib.import_module("httpx").TransportError)
    return tuple(found)


def _hub_snapshot(repo_id: str, patterns: list[str]) -> Path:
    """The local folder of ``repo_id``'s files matching ``patterns``, fetched if need be."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        return Path(snapshot_download(repo_id, allow_patterns=patterns))
    except GatedRepoError as err:
        raise Refusal("gated", id=repo_id) from err
    except (RepositoryNotFoundError, RevisionNotFoundError) as err:
        raise Refusal("unknown_id", id=repo_id) from err
    except (LocalEntryNotFoundError, OfflineModeIsEnabled, *_transport_errors()) as err:
        raise Refusal("offline", id=repo_id) from err
    except HfHubHTTPError as err:
        raise Refusal("hub_error", id=repo_id) from err


@dataclass(frozen=True)
class _Preflight:
    config: Any
    parameters: int
    nbytes: int
    dtype: str


def _preflight(directory: Path, settings: Settings) -> _Preflight:
    """Read the config and size the model on the meta device, before any weight is read."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    try:
        config = AutoConfig.from_pretrained(directory, trust_remote_code=False)
    except ValueError as err:  # a model_type transformers does not know: it needs its own code
        raise Refusal("needs_code") from err
    if type(config) not in MODEL_FOR_CAUSAL_LM_MAPPING:
        raise Refusal("not_causal_lm", model_type=str(getattr(config, "model_type", "?")))
    with torch.device("meta"):
        shell = AutoModelForCausalLM.from_config(config)
    parameters = sum(p.numel() for p in shell.parameters())
    dtype = getattr(config, "dtype", None) or torch.float32
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    nbytes = parameters * dtype.itemsize
    del shell
    if nbytes > settings.max_bytes:
        raise Refusal("too_large", size=nbytes, limit=settings.max_bytes)
    return _Preflight(config, parameters, nbytes, str(dtype).removeprefix("torch."))


def _tokenizer(directory: Path) -> Callable[[str], list[int]] | None:
    """The model's own tokenizer, or None when the folder has none that loads."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(directory, trust_remote_code=False)
    except Exception:  # a missing or broken tokenizer leaves the contract readable
        return None
    return lambda text: list(tokenizer(text)["input_ids"])


def _load_pretrained(
    ref: ModelRef, directory: Path, pre: _Preflight, settings: Settings
) -> LoadedModel:
    from transformers import AutoModelForCausalLM

    if not any(directory.glob("*.safetensors")):
        # Only safetensors: a pickle file from an arbitrary repository could run code.
        raise Refusal("no_safetensors")
    _make_room(pre.nbytes, settings)
    model = AutoModelForCausalLM.from_pretrained(
        directory, dtype="auto", use_safetensors=True, trust_remote_code=False
    )
    model.requires_grad_(False)
    config = pre.config
    context = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", 0)
    width = getattr(config, "hidden_size", None) or getattr(config, "n_embd", 0)
    return LoadedModel(
        ref=ref,
        model=model.eval(),
        architecture=type(model).__name__,
        family=str(config.model_type),
        parameters=pre.parameters,
        nbytes=pre.nbytes,
        dtype=str(next(model.parameters()).dtype).removeprefix("torch."),
        width=int(width),
        context=int(context),
        encode=_tokenizer(directory),
        config=config.to_diff_dict(),
    )


def _need_transformers() -> None:
    """Hugging Face models need ``transformers``, which the shipped checkpoints do not. Absent,
    or present without a package it imports, it is a refusal naming the missing module
    (``reason``), not an ImportError on the page."""
    if importlib.util.find_spec("transformers") is None:
        raise Refusal("no_transformers", reason="transformers")
    try:
        importlib.import_module("transformers")
    except ImportError as err:
        raise Refusal("no_transformers", reason=err.name or "transformers") from err


def _load_local(ref: ModelRef, settings: Settings, step: Progress) -> LoadedModel:
    _need_transformers()
    step("config")
    directory = Path(ref.location)
    pre = _preflight(directory, settings)
    step("weights")
    return _load_pretrained(ref, directory, pre, settings)


def _load_hub(ref: ModelRef, settings: Settings, step: Progress) -> LoadedModel:
    _need_transformers()
    step("config")
    pre = _preflight(_hub_snapshot(ref.location, CONFIG_FILES), settings)
    step("download")
    directory = _hub_snapshot(ref.location, MODEL_FILES)
    step("weights")
    return _load_pretrained(ref, directory, pre, settings)


_LOADERS: dict[str, Callable[[ModelRef, Settings, Progress], LoadedModel]] = {
    "shipped": _load_shipped,
    "local": _load_local,
    "hub": _load_hub,
}
