"""labs.inspector: sources, loading and refusals, the contract per family, the readings.

Every model here is tiny and random, built offline from a transformers config
(``labs.inspector.tiny``) and saved with ``save_pretrained``; nothing is downloaded. The hub
path runs against a Hugging Face cache laid out in a temporary folder, with the hub offline.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from core.norms import layer_norm, rms_norm
from labs.inspector import (
    Catalog,
    ModelRef,
    Refusal,
    Settings,
    clear_cache,
    inspect_side,
    inspect_view,
    is_loaded,
    load,
    loading,
    read_contract,
)
from labs.inspector.layers import probe_input
from labs.inspector.places import norm_modules, trace_places
from labs.inspector.readings import read_norm_inputs
from labs.inspector.report import _contract_claim
from labs.inspector.sources import DEFAULT_MAX_GB, GIB, valid_hub_id
from tests.claims.inspector import check_contract_unknown, unknown_count
from tests.hypothesis_util import examples
from tests.inspector_fixture import offline_hub_cache, tiny_dir

FAMILIES = ("llama", "gemma", "olmo2", "gpt2")


@pytest.fixture(scope="module")
def tiny() -> Path:
    return tiny_dir()


@pytest.fixture
def local(tiny: Path) -> Settings:
    return Settings(model_dirs=(tiny,))


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache(collect=False)  # the models are tiny: no collection needed between tests
    yield
    clear_cache(collect=False)


def ref(name: str, tiny: Path) -> ModelRef:
    return ModelRef("local", f"local:{name}", str(tiny / name))


# --- Sources ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "good", ["openai-community/gpt2", "meta-llama/Llama-3.2-1B", "a/b", "allenai/OLMo-2-0425-1B"]
)
def test_hub_ids_that_match(good: str) -> None:
    assert valid_hub_id(good)


@pytest.mark.parametrize(
    "bad",
    ["", "gpt2", "a/b/c", "../x", "a/..", "a/../b", "http://x/y", "https://huggingface.co/a/b",
     "a--b/c", "a/b.", "-a/b", "a /b", "a/b?c", "a/b#c", "/a/b", "a/", "~/x", "a/" + "b" * 97,
     "ünï/cødé", "a\\b/c", "a/b\n"],
)  # fmt: skip
def test_hub_ids_that_do_not(bad: str) -> None:
    assert not valid_hub_id(bad)


def test_settings_from_the_environment(tmp_path: Path) -> None:
    env = {"NORMLAB_HUB": "1", "NORMLAB_MODEL_DIRS": f"{tmp_path}{os.pathsep}/nowhere"}
    s = Settings.from_env(env)
    assert s.hub and s.model_dirs == (tmp_path, Path("/nowhere"))
    assert s.max_bytes == int(DEFAULT_MAX_GB * GIB)
    assert Settings.from_env({"NORMLAB_MAX_MODEL_GB": "0.5"}).max_bytes == GIB // 2
    for bad in ("lots", "-1", "0", "nan", "inf"):
        assert Settings.from_env({"NORMLAB_MAX_MODEL_GB": bad}).max_bytes == s.max_bytes
    for off in ("", "0", "no", "false"):
        assert not Settings.from_env({"NORMLAB_HUB": off}).hub


def test_catalog_lists_model_folders_and_resolves_only_what_it_lists(tiny: Path, tmp_path):
    single = tmp_path / "one-model"
    shutil.copytree(tiny / "tiny-gpt2", single)
    dirs = (tiny, single, tmp_path / "missing")
    catalog = Catalog(Settings(model_dirs=dirs, shipped_dir=tmp_path / "no-shipped"))
    names = ("tiny-bare", "tiny-gemma", "tiny-gpt2", "tiny-llama", "tiny-olmo2", "one-model")
    assert catalog.choices() == tuple(f"local:{n}" for n in names)
    assert catalog.resolve("local:tiny-llama").location == str((tiny / "tiny-llama").resolve())
    for hostile in ("local:../tiny-llama", "local:", f"local:{tiny}", str(tiny), "tiny-llama"):
        assert catalog.resolve(hostile) is None, hostile
    assert catalog.resolve("openai-community/gpt2") is None  # the hub is off
    hub = Catalog(Settings(hub=True))
    assert hub.resolve("openai-community/gpt2") == ModelRef(
        "hub", "openai-community/gpt2", "openai-community/gpt2"
    )
    assert hub.resolve("openai-community/../gpt2") is None


def test_shipped_names_come_from_the_folder(tmp_path: Path) -> None:
    for stem in ("rms-seed0", "layer-seed0", "bad name"):
        (tmp_path / f"{stem}.safetensors").write_bytes(b"")
        (tmp_path / f"{stem}.json").write_text("{}")
    (tmp_path / "orphan.safetensors").write_bytes(b"")  # no config beside it
    catalog = Catalog(Settings(shipped_dir=tmp_path))
    assert catalog.choices() == ("layer-seed0", "rms-seed0")
    assert catalog.resolve("rms-seed0").kind == "shipped"
    assert catalog.resolve("orphan") is None


@settings(max_examples=examples(200), deadline=None)
@given(link=st.one_of(st.text(max_size=60), st.sampled_from(["local:", "a/b", "../../etc/passwd"])))
def test_no_link_reaches_a_path_the_host_did_not_list(link: str) -> None:
    listed = Path(__file__).resolve().parent  # any folder: it holds no model
    catalog = Catalog(Settings(hub=True, model_dirs=(listed,)))
    found = catalog.resolve(link)
    shipped = catalog.settings.shipped_dir
    assert (
        found is None
        or (found.kind == "hub" and valid_hub_id(found.location))
        # The shipped models are listed by the app itself: a link may name one of them.
        or (found.kind == "shipped" and Path(found.location).parent == Path(shipped))
    )


# --- The contract, per family -------------------------------------------------------------------

EXPECTED = {
    # family: (class, kind, gain, places of one layer, final)
    "llama": ("LlamaRMSNorm", "rms", "direct", ["pre_attention", "pre_mlp"], "llama"),
    "gemma": ("GemmaRMSNorm", "rms", "offset", ["pre_attention", "pre_mlp"], "gemma"),
    "olmo2": ("Olmo2RMSNorm", "rms", "direct", ["qk", "qk", "post_attention", "post_mlp"], "olmo2"),
    "gpt2": ("LayerNorm", "layer", "direct", ["pre_attention", "pre_mlp"], "torch"),
}
# torch's LayerNorm module against the core's "torch" preset on the probe input in float32,
# module by module: the preset calls the same F.layer_norm kernel, so bit for bit.
GPT2_LAYERNORM_DELTAS = (0.0,) * 5


@pytest.mark.parametrize("family", FAMILIES)
def test_contract_per_family(family: str, tiny: Path, local: Settings) -> None:
    cls, kind, gain, per_layer, preset = EXPECTED[family]
    loaded = load(ref(f"tiny-{family}", tiny), local)
    contract = read_contract(loaded.model, torch.arange(8)[None], loaded.width)
    config = json.loads((tiny / f"tiny-{family}" / "config.json").read_text())
    eps = config.get("rms_norm_eps", config.get("layer_norm_epsilon"))
    assert [m.place for m in contract.modules] == per_layer * 2 + ["final"]
    assert [m.layer for m in contract.modules] == [0] * len(per_layer) + [1] * len(per_layer) + [
        None
    ]
    for m in contract.modules:
        assert (m.cls, m.kind, m.gain, m.eps) == (cls, kind, gain, eps)
        assert m.dtype == config["dtype"]
        assert m.preset == preset
    expected = GPT2_LAYERNORM_DELTAS if family == "gpt2" else (0.0,) * len(contract.modules)
    assert tuple(m.delta for m in contract.modules) == expected
    # The weight statistics are those of the stored weights.
    weights = np.concatenate([mod.weight.double().numpy() for _, mod in norm_modules(loaded.model)])
    np.testing.assert_allclose(contract.weight_mean, weights.mean(), rtol=1e-12)
    np.testing.assert_allclose(contract.weight_std, weights.std(), rtol=1e-12)
    assert sum(int(c.sum()) for c in contract.histogram.counts.values()) == weights.size
    assert abs(contract.weight_mean - (0.0 if gain == "offset" else 1.0)) < 0.05


@pytest.mark.parametrize("family", ["llama", "gemma", "olmo2"])
def test_the_named_preset_matches_the_module_bit_for_bit(family: str, tiny, local) -> None:
    """Independent of the contract code: the module and the preset on a fresh input."""
    loaded = load(ref(f"tiny-{family}", tiny), local)
    preset = EXPECTED[family][4]
    for _, module in norm_modules(loaded.model):
        w = module.weight
        x = (torch.randn(5, w.numel(), generator=torch.Generator().manual_seed(7)) * 30).to(w.dtype)
        eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
        with torch.inference_mode():
            assert torch.equal(module(x), rms_norm(x, w, preset=preset, eps=eps))


def test_gpt2_layernorm_against_the_torch_preset(tiny, local) -> None:
    loaded = load(ref("tiny-gpt2", tiny), local)
    _, module = norm_modules(loaded.model)[0]
    x = probe_input(module.weight.numel(), torch.float32)
    with torch.inference_mode():
        delta = (module(x) - layer_norm(x, module.weight, module.bias, preset="torch")).abs().max()
    assert float(delta) == GPT2_LAYERNORM_DELTAS[0]


class ToyAttention(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(d, d)

    def forward(self, x):
        return (self.proj(x),)


class ToyMLP(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(d, d)

    def forward(self, x):
        return torch.relu(self.fc(x))


class WeirdNorm(torch.nn.Module):
    """Not a normalisation: tanh times a gain."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))

    def forward(self, x):
        return torch.tanh(x) * self.weight


class ToyLayer(torch.nn.Module):
    """Post-norm (the original transformer): the norms read the residual sums."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.attn, self.mlp = ToyAttention(d), ToyMLP(d)
        self.norm_attn, self.norm_mlp = torch.nn.LayerNorm(d), WeirdNorm(d)

    def forward(self, x):
        x = self.norm_attn(x + self.attn(x)[0])
        return self.norm_mlp(x + self.mlp(x))


class ToyModel(torch.nn.Module):
    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(16, d)
        self.embed_norm = torch.nn.RMSNorm(d, eps=1e-6)
        self.layers = torch.nn.ModuleList(ToyLayer(d) for _ in range(2))
        self.head = torch.nn.Linear(d, 16)

    def forward(self, ids):
        x = self.embed_norm(self.embed(ids))
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def test_places_and_formulas_are_read_from_behaviour_not_names() -> None:
    torch.manual_seed(0)
    model = ToyModel().eval()
    places = trace_places(model, torch.arange(6)[None])
    assert [p for _, p, _ in places] == ["embedding"] + ["post_attention", "post_mlp"] * 2
    contract = read_contract(model, torch.arange(6)[None], 8)
    kinds = [(m.cls, m.kind, m.preset) for m in contract.modules]
    assert kinds[0] == ("RMSNorm", "rms", "torch")  # torch.nn.RMSNorm: the torch preset
    assert kinds[1] == ("LayerNorm", "layer", "torch")
    assert kinds[2][1] == "unknown" and kinds[2][2] is None
    assert contract.modules[0].delta == 0.0
    claim = _contract_claim(contract)
    assert claim.key == "inspector.contract_unknown"
    assert claim.fields["unknown"] == 2 and claim.fields["count"] == 5
    # The claims module's own count agrees.
    modules = [m for _, m in norm_modules(model)]
    assert unknown_count(modules, claim.fields["tol_pct"]) == 2


def test_the_claims_check_for_unknown_formulas_can_fail() -> None:
    """The check raises on a model whose norms all follow a formula."""
    from labkit.claims import Claim

    with pytest.raises(AssertionError):
        bogus = Claim("inspector.contract_unknown", {"unknown": 1, "count": 5, "tol_pct": 0.05,
                                                     "model": "local:tiny-llama"})  # fmt: skip
        check_contract_unknown({}, bogus)


# --- The readings -------------------------------------------------------------------------------


def manual_inputs(model, family: str, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each norm's input from a forward pass written out here, module by module."""
    out = {}
    with torch.inference_mode():
        if family == "gpt2":
            t = model.transformer
            h = t.wte(ids) + t.wpe(torch.arange(ids.shape[1])[None])
            for i, block in enumerate(t.h):
                out[f"transformer.h.{i}.ln_1"] = h
                h = h + block.attn(block.ln_1(h))[0]
                out[f"transformer.h.{i}.ln_2"] = h
                h = h + block.mlp(block.ln_2(h))
            out["transformer.ln_f"] = h
            return out
        inner = model.model
        h = inner.embed_tokens(ids)
        pe = inner.rotary_emb(h, torch.arange(ids.shape[1])[None])
        for i, layer in enumerate(inner.layers):
            out[f"model.layers.{i}.input_layernorm"] = h
            normed = layer.input_layernorm(h)
            h = h + layer.self_attn(hidden_states=normed, position_embeddings=pe)[0]
            out[f"model.layers.{i}.post_attention_layernorm"] = h
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        out["model.norm"] = h
    return out


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_readings_match_a_manual_forward_pass(family: str, tiny, local) -> None:
    loaded = load(ref(f"tiny-{family}", tiny), local)
    ids = loaded.encode("LayerNorm subtracts the mean first; RMSNorm keeps it.")
    manual = manual_inputs(loaded.model, family, torch.tensor([ids]))
    places = {name: "x" for name in manual}
    readings = read_norm_inputs(loaded.model, ids, places, {})
    assert [r.name for r in readings] == list(manual)
    for r in readings:
        x = manual[r.name][0].double().numpy()
        ms, mu = np.mean(x**2, -1), x.mean(-1)
        ratio = np.abs(x) / np.sqrt(ms)[:, None]
        token, dim = np.unravel_index(np.argmax(ratio), ratio.shape)
        np.testing.assert_allclose(r.share, np.mean(mu**2 / ms), rtol=1e-12)
        np.testing.assert_allclose(r.cos, np.mean(mu / np.sqrt(ms)), rtol=1e-12)
        np.testing.assert_allclose(r.rms, np.mean(np.sqrt(ms)), rtol=1e-12)
        assert (r.top_token, r.top_dim) == (token, dim)
        np.testing.assert_allclose(r.top_ratio, ratio[token, dim], rtol=1e-12)
        assert r.identity_gap < 1e-12
        assert r.tokens == len(ids)


def test_readings_run_under_inference_mode(tiny, local) -> None:
    loaded = load(ref("tiny-llama", tiny), local)
    seen = []
    name, module = norm_modules(loaded.model)[0]
    handle = module.register_forward_hook(lambda *_: seen.append(torch.is_inference_mode_enabled()))
    try:
        read_norm_inputs(loaded.model, [3, 4, 5], {name: "x"}, {})
    finally:
        handle.remove()
    assert seen == [True]
    assert not any(p.requires_grad for p in loaded.model.parameters())


def test_long_text_is_cut_to_the_token_limit(tiny, local) -> None:
    view = inspect_side(ref("tiny-gpt2", tiny), local, "norm " * 200)
    assert (view.prompt.tokens, view.prompt.limit) == (64, 64)
    assert view.prompt.total > 64
    assert view.claims["prompt"].key == "inspector.prompt_cut"


def test_a_model_without_tokenizer_shows_its_contract_only(tiny, local) -> None:
    view = inspect_side(ref("tiny-bare", tiny), local, "hello")
    assert view.prompt is None and view.readings == ()
    assert view.claims["prompt"].key == "inspector.prompt_no_tokenizer"
    assert view.claims["contract"].key == "inspector.contract_exact"


# --- Refusals, the cache and the lock -----------------------------------------------------------


def refusal(call) -> Refusal:
    with pytest.raises(Refusal) as caught:
        call()
    return caught.value


def test_a_link_to_a_model_not_offered(local) -> None:
    assert refusal(lambda: inspect_view({"a": "local:nope"}, "x", local)).code == "unknown_model"


def test_a_model_too_large(tiny, local) -> None:
    small = Settings(model_dirs=(tiny,), max_bytes=10_000)
    r = refusal(lambda: load(ref("tiny-llama", tiny), small))
    assert (r.code, r.fields["limit"]) == ("too_large", 10_000)
    assert r.fields["size"] == 39072 * 2  # bfloat16 parameters
    assert not is_loaded(ref("tiny-llama", tiny))
    # Already in the cache under a larger cap: still refused under the small one.
    load(ref("tiny-llama", tiny), local)
    assert refusal(lambda: load(ref("tiny-llama", tiny), small)).code == "too_large"


def test_not_a_causal_language_model(tmp_path: Path) -> None:
    from transformers import ViTConfig

    ViTConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2).save_pretrained(
        tmp_path / "vit"
    )
    s = Settings(model_dirs=(tmp_path,))
    r = refusal(lambda: load(ModelRef("local", "local:vit", str(tmp_path / "vit")), s))
    assert (r.code, r.fields["model_type"]) == ("not_causal_lm", "vit")


def test_a_model_that_needs_its_own_code(tmp_path: Path) -> None:
    folder = tmp_path / "custom"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps({"model_type": "my-own-model", "auto_map": {"AutoConfig": "x.MyConfig"}})
    )
    s = Settings(model_dirs=(tmp_path,))
    assert refusal(lambda: load(ModelRef("local", "local:custom", str(folder)), s)).code == (
        "needs_code"
    )


def test_pickled_weights_are_never_loaded(tiny, tmp_path, monkeypatch) -> None:
    folder = tmp_path / "pickled"
    folder.mkdir()
    shutil.copy(tiny / "tiny-llama" / "config.json", folder)
    torch.save({"x": torch.zeros(1)}, folder / "pytorch_model.bin")
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load was called"))
    s = Settings(model_dirs=(tmp_path,))
    r = refusal(lambda: load(ModelRef("local", "local:pickled", str(folder)), s))
    assert r.code == "no_safetensors"


def test_a_host_without_transformers(tiny, local, monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "transformers" else real(name, *a),
    )
    r = refusal(lambda: load(ref("tiny-llama", tiny), local))
    assert (r.code, r.fields["reason"]) == ("no_transformers", "transformers")
    # NormLab's own checkpoints need no transformers.
    assert load(Catalog(Settings()).resolve("rms-seed0"), Settings()).family == "normlab"


def test_transformers_without_a_package_it_imports(tiny, local, monkeypatch) -> None:
    """Installed, but failing on import (a dependency missing): a refusal that names the
    missing module, not a ModuleNotFoundError."""
    real = importlib.import_module

    def broken(name, *args):
        if name == "transformers":
            raise ModuleNotFoundError("No module named 'tokenizers'", name="tokenizers")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", broken)
    r = refusal(lambda: load(ref("tiny-llama", tiny), local))
    assert (r.code, r.fields["reason"]) == ("no_transformers", "tokenizers")


def test_a_broken_weight_file(tiny, tmp_path) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(tiny / "tiny-llama", folder)
    (folder / "model.safetensors").write_bytes(b"not a safetensors file")
    s = Settings(model_dirs=(tmp_path,))
    r = refusal(lambda: load(ModelRef("local", "local:broken", str(folder)), s))
    assert r.code == "broken" and r.fields["reason"]


def test_one_load_at_a_time(tiny, local) -> None:
    """While another load holds the lock, a load waits, then says the server is busy."""
    steps: list[str] = []
    with loading._LOAD_LOCK:
        r = refusal(lambda: load(ref("tiny-llama", tiny), local, steps.append, wait_s=0.05))
    assert r.code == "busy" and steps == ["wait"]
    # Two visitors at once: both get the model, loaded once.
    calls = []
    real = loading._LOADERS["local"]
    loading._LOADERS["local"] = lambda *a: calls.append(1) or real(*a)
    try:
        threads = [threading.Thread(target=load, args=(ref("tiny-gpt2", tiny), local))
                   for _ in range(2)]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        loading._LOADERS["local"] = real
    assert calls == [1] and is_loaded(ref("tiny-gpt2", tiny))


def test_one_load_at_a_time_across_processes(tiny, local, tmp_path, monkeypatch) -> None:
    """Another process of the app (a second worker) holding the load lock makes a load wait."""
    import subprocess
    import sys

    lock = loading.HostLock(tmp_path / "load.lock")
    monkeypatch.setattr(loading, "_LOAD_LOCK", lock)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
         str(lock.path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        steps: list[str] = []
        r = refusal(lambda: load(ref("tiny-llama", tiny), local, steps.append, wait_s=0.3))
        assert r.code == "busy" and steps == ["wait"]
    finally:
        holder.kill()
        holder.wait()
    assert load(ref("tiny-llama", tiny), local, wait_s=5).architecture == "LlamaForCausalLM"


def test_the_cache_keeps_the_last_few_models(tiny, local) -> None:
    names = ["tiny-llama", "tiny-gemma", "tiny-olmo2", "tiny-gpt2"]
    for name in names:
        load(ref(name, tiny), local)
    assert [is_loaded(ref(n, tiny)) for n in names] == [False, True, True, True]
    assert loading.MAX_CACHED == 3
    # A budget of two models' bytes: the third evicts the oldest.
    budget = Settings(model_dirs=(tiny,), max_bytes=80_000)
    clear_cache()
    for name in ("tiny-llama", "tiny-olmo2"):
        load(ref(name, tiny), budget)
    assert is_loaded(ref("tiny-llama", tiny)) and is_loaded(ref("tiny-olmo2", tiny))
    load(ref("tiny-gemma", tiny), budget)
    assert not is_loaded(ref("tiny-llama", tiny))


def test_progress_steps_of_a_local_load(tiny, local) -> None:
    steps: list[str] = []
    load(ref("tiny-llama", tiny), local, steps.append)
    assert steps == ["config", "weights"]


# --- The hub path, offline ----------------------------------------------------------------------


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch) -> Path:
    """A Hugging Face cache holding ``normlab/tiny-llama``, with the hub offline."""
    return offline_hub_cache(tmp_path, monkeypatch)


def test_a_hub_id_loads_through_the_cache(hub_cache: Path, tiny: Path, local) -> None:
    hub = Settings(hub=True)
    steps: list[str] = []
    loaded = load(ModelRef("hub", "normlab/tiny-llama", "normlab/tiny-llama"), hub, steps.append)
    assert steps == ["config", "download", "weights"]
    via_hub = inspect_view({"a": "normlab/tiny-llama"}, "hello there", hub).sides["a"]
    via_dir = inspect_side(ref("tiny-llama", tiny), local, "hello there")
    assert loaded.architecture == "LlamaForCausalLM"
    assert via_hub.contract.modules == via_dir.contract.modules
    assert via_hub.readings == via_dir.readings


def test_no_network_and_not_in_the_cache(hub_cache: Path) -> None:
    hub = Settings(hub=True)
    r = refusal(lambda: load(ModelRef("hub", "normlab/absent", "normlab/absent"), hub))
    assert (r.code, r.fields["id"]) == ("offline", "normlab/absent")


def _hub_error(kind: str):
    import httpx2 as httpx
    from huggingface_hub import errors

    response = httpx.Response(404, request=httpx.Request("GET", "https://example.invalid/x"))
    made = {
        "unknown_id": lambda: errors.RepositoryNotFoundError("no repo", response=response),
        "gated": lambda: errors.GatedRepoError("gated", response=response),
        "hub_error": lambda: errors.HfHubHTTPError("server error", response=response),
        "offline": lambda: httpx.ConnectError("no route"),
    }
    return made[kind]()


@pytest.mark.parametrize("code", ["unknown_id", "gated", "hub_error", "offline"])
def test_hub_failures_become_refusals(code: str, monkeypatch) -> None:
    import huggingface_hub

    def fail(*args, **kwargs):
        raise _hub_error(code)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fail)
    r = refusal(lambda: load(ModelRef("hub", "owner/name", "owner/name"), Settings(hub=True)))
    assert (r.code, r.fields["id"]) == (code, "owner/name")


def test_every_refusal_code_has_a_text() -> None:
    from ui.i18n import catalogue

    codes = {"unknown_model", "unknown_id", "gated", "offline", "hub_error", "too_large",
             "not_causal_lm", "no_safetensors", "needs_code", "busy", "broken",
             "no_transformers"}  # fmt: skip
    source = (
        Path(loading.__file__).read_text() + Path(inspect_view.__code__.co_filename).read_text()
    )
    assert codes == set(re.findall(r'Refusal\(\s*"([a-z_]+)"', source))
    assert all(f"inspector.refusal_{c}" in catalogue() for c in codes)


# --- NormLab's shipped checkpoints --------------------------------------------------------------

SHIPPED = Settings()
# The core's own rms_norm / layer_norm (which the shipped models call) against the nearest preset
# on the probe input, module by module, in float32. The core's fused kernels and torch's sum in
# their own orders, so the outputs (near 4 in size) may part by a few ulp on some CPUs: 0 here
# and on CI, at most 2e-6 (8 ulp) anywhere. The page's sentence follows the delta it measured.
SHIPPED_DELTA_BOUND = 2e-6
SHIPPED_KIND = {"rms": ("rms", "direct"), "layer": ("layer", "direct"), "none": ("none", "none")}
WHERE = {"pre-attention": "pre_attention", "pre-MLP": "pre_mlp", "final": "final"}


@pytest.mark.parametrize("name", ["rms-seed0", "layer-seed0", "none-seed0"])
def test_shipped_contract(name: str) -> None:
    config = json.loads((SHIPPED.shipped_dir / f"{name}.json").read_text())
    view = inspect_view({"a": name}, "abc", SHIPPED).sides["a"]
    modules = view.contract.modules
    declared = [(layer["name"], WHERE[layer["where"]]) for layer in config["model"]["norm_layers"]]
    assert [(m.name, m.place) for m in modules] == declared
    kind, gain = SHIPPED_KIND[config["model"]["norm"]]
    for m in modules:
        assert (m.cls, m.kind, m.gain, m.dtype) == ("Norm", kind, gain, "float32")
        assert m.eps == config["model"]["eps"]
    if kind == "none":
        assert view.claims["contract"].key == "inspector.contract_identity"
        assert view.contract.histogram is None
        return
    assert all(0.0 <= m.delta <= SHIPPED_DELTA_BOUND for m in modules), [m.delta for m in modules]
    assert {m.preset for m in modules} == {"torch"}
    assert view.summary.parameters == config["parameters"]


@pytest.mark.parametrize("name", ["rms-seed0", "layer-seed0"])
def test_the_trace_agrees_with_the_trainers_declared_places(name: str) -> None:
    loaded = load(Catalog(SHIPPED).resolve(name), SHIPPED)
    traced = trace_places(loaded.model, torch.arange(8)[None])
    assert [(n, p) for n, p, _ in traced] == [(n, WHERE[m.where]) for n, m in
                                             loaded.model.norms()]  # fmt: skip


def test_shipped_readings_match_a_manual_forward_pass() -> None:
    loaded = load(Catalog(SHIPPED).resolve("layer-seed0"), SHIPPED)
    model, ids = loaded.model, loaded.encode("Each token vector.")
    manual = {}
    with torch.inference_mode():
        h = model.embed(torch.tensor([ids]))
        for i, block in enumerate(model.blocks):
            manual[f"blocks.{i}.ln_1"] = h
            h = h + block.attn(block.ln_1(h))
            manual[f"blocks.{i}.ln_2"] = h
            h = h + block.mlp(block.ln_2(h))
        manual["ln_f"] = h
    readings = read_norm_inputs(model, ids, {n: "x" for n in manual}, {})
    assert [r.name for r in readings] == list(manual)
    for r in readings:
        x = manual[r.name][0].double().numpy()
        ms, mu = np.mean(x**2, -1), x.mean(-1)
        np.testing.assert_allclose(r.share, np.mean(mu**2 / ms), rtol=1e-12)
        np.testing.assert_allclose(r.rms, np.mean(np.sqrt(ms)), rtol=1e-12)


def test_a_checkpoint_built_here_is_one_more_shipped_source(tmp_path: Path) -> None:
    """The shipped source reads any checkpoint the trainer's code writes."""
    from labs.training.model import GPT, ModelConfig
    from labs.training.store import save_checkpoint

    model = GPT(ModelConfig(norm="rms", n_layer=1, n_head=2, n_embd=16, block_size=32), seed=3)
    with torch.no_grad():
        for _, norm in model.norms():
            norm.weight.copy_(torch.linspace(-0.5, 2.0, 16))
    save_checkpoint(model, tmp_path / "fresh.safetensors")
    here = Settings(shipped_dir=tmp_path)
    assert Catalog(here).choices() == ("fresh",)
    view = inspect_view({"a": "fresh"}, "x" * 100, here).sides["a"]
    assert [m.place for m in view.contract.modules] == ["pre_attention", "pre_mlp", "final"]
    np.testing.assert_allclose(view.contract.weight_mean, 0.75, rtol=1e-6)
    assert view.prompt.tokens == 32 and view.prompt.total == 100
    assert view.claims["prompt"].key == "inspector.prompt_cut"
