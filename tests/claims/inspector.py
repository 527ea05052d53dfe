"""Independent checks of the checkpoint inspector's sentences.

The states are the models this test can offer (tiny random Llama, Gemma, OLMo 2 and GPT-2 models
built offline into a temporary folder by ``tests/inspector_fixture.py``, and NormLab's shipped
checkpoints), alone or side by side, with the page's sentence in either language, the empty text,
the longest text a link may carry, and random text.

Nothing here runs NormLab's model or norm code. A Hugging Face model is loaded by transformers'
``from_pretrained`` and read with this module's own forward hooks on its norm modules (found by
class name). A shipped checkpoint is read with safetensors: its config (the safetensors header)
names the norm (RMSNorm, LayerNorm or none) and eps, and this module runs the nanoGPT forward
pass that config describes with ``torch.nn.functional`` in float32, the checkpoint's dtype. The
readings are recomputed in float64 numpy another way (norms by ``np.linalg.norm``, medians by
sorting). A preset named in a sentence is the upstream computation it names: transformers' own
module class where transformers has it, ``torch.nn.functional`` for torch's, else a transcription
of the upstream formula; each is run on a probe input built here from the recipe in
``labs.inspector.layers``'s docstring and compared bit for bit with the module.
"""

from __future__ import annotations

import importlib
import json
import math
import statistics
from functools import cache

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.torch import load_file

from labkit.claims import Claim
from labs.inspector import Settings, inspect_view
from labs.inspector.readings import DEFAULT_PROMPT
from labs.inspector.sources import SHIPPED_DIR
from labs.training.store import CONFIG_KEY
from tests.claims.oracle import check_pair_words, check_series_words, ulps
from tests.inspector_fixture import tiny_dir

MAX_TEXT = 300
MAX_TOKENS = 64
FAMILIES = ("llama", "gemma", "olmo2", "gpt2")
# The classes of the norm modules in the Hugging Face models sampled here.
NORM_CLASSES = ("LlamaRMSNorm", "GemmaRMSNorm", "Olmo2RMSNorm", "LayerNorm")
SHIPPED = tuple(sorted(p.stem for p in SHIPPED_DIR.glob("*.safetensors")))
# The page's test of RMS² = σ² + μ² (a gap at most this, relative to RMS², is rounding).
IDENTITY_TOL = 1e-12


def settings() -> Settings:
    return Settings(model_dirs=(tiny_dir(),))


MODELS = (*SHIPPED, *(f"local:tiny-{f}" for f in (*FAMILIES, "bare")))
TEXTS = st.one_of(
    st.sampled_from(("", " ", "x" * MAX_TEXT, "é" * MAX_TEXT, "a")),
    st.just(DEFAULT_PROMPT),
    st.text(max_size=MAX_TEXT),
)
STATES = st.fixed_dictionaries(
    {
        "model": st.sampled_from(MODELS),
        "compare": st.sampled_from((None, *MODELS)),
        "text": TEXTS,
        "lang": st.sampled_from(("en", "id")),
    }
)


def prompt_for(state: dict) -> str:
    """The text the page runs: the visitor's, cut to MAX_TEXT, else the page's sentence (one
    for both languages)."""
    return state["text"].strip()[:MAX_TEXT] or DEFAULT_PROMPT


def view(state: dict):
    links = {"a": state["model"]}
    if state["compare"] is not None:
        links["b"] = state["compare"]
    return inspect_view(links, prompt_for(state), settings())


# This module's forward pass of a shipped checkpoint does the model's float32 arithmetic, but for
# a one-token text a matrix product takes another path and rounds otherwise: the activations then
# differ by a few float32 ulps (4 seen over the three blocks). 64 bound that, and lie below the
# four significant digits the page writes.
ACTIVATION_ULPS = 64


def tolerance(size: float, d: int, share: bool = False) -> float:
    """How far the page's reading may lie from this module's: float64 rounding of statistics of
    d-wide rows (two ways of computing one, a mean or a norm, round by a few ulps per term over d
    terms, amplified by at most d where a mean cancels: d² ulps of a share's 1, else of the
    reading's ``size``), and the activations' float32 rounding (relative to the reading; a share
    s, a square of a ratio, moves by at most 2√s times it)."""
    if share:
        return ulps(d * d, 1.0) + ulps(ACTIVATION_ULPS, 2 * math.sqrt(size), "float32")
    return ulps(d * d, size) + ulps(ACTIVATION_ULPS, size, "float32")


def near(shown: float, value: float, d: int, share: bool = False) -> None:
    """``shown`` equals ``value`` within :func:`tolerance` (``share``: a fraction of RMS²)."""
    size = max(abs(shown), abs(value))
    assert abs(shown - value) <= tolerance(size, d, share), (shown, value)


# --- A shipped checkpoint, read with safetensors ------------------------------------------------


class ShippedNorm:
    """One norm of a shipped checkpoint, as its config describes it: ``kind`` "rms", "layer" or
    "none", eps, and the stored weight and bias (None where the kind has none)."""

    def __init__(self, kind: str, eps: float, weight, bias) -> None:
        self.kind, self.eps, self.weight, self.bias = kind, eps, weight, bias

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        if self.kind == "rms":
            return F.rms_norm(x, (d,), self.weight, self.eps)
        if self.kind == "layer":
            return F.layer_norm(x, (d,), self.weight, self.bias, self.eps)
        return x


@cache
def shipped(link: str) -> tuple[dict, dict]:
    """(config, tensors) of a shipped checkpoint: the config from the safetensors header."""
    path = str(SHIPPED_DIR / f"{link}.safetensors")
    with safe_open(path, framework="pt") as f:
        config = json.loads(f.metadata()[CONFIG_KEY])
    return config, load_file(path)


@cache
def shipped_norms(link: str) -> tuple[tuple[str, ShippedNorm], ...]:
    config, w = shipped(link)
    m = config["model"]
    return tuple(
        (layer["name"], ShippedNorm(m["norm"], m["eps"], *(
            w.get(f"{layer['name']}.{p}") for p in ("weight", "bias"))))
        for layer in m["norm_layers"]
    )  # fmt: skip


def shipped_pass(link: str, ids: list[int]) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(name, input, output) of every norm, in the order a forward pass over ``ids`` meets them:
    token and position embeddings, then per block h += attn(ln_1(h)) and h += mlp(ln_2(h)),
    then ln_f (the layout the checkpoint's config names: nanoGPT's, no biases, causal)."""
    config, w = shipped(link)
    m = config["model"]
    norms = dict(shipped_norms(link))
    seen = []

    def norm(name: str, x: torch.Tensor) -> torch.Tensor:
        y = norms[name](x)
        seen.append((name, x[0], y[0]))
        return y

    d, heads, n = m["n_embd"], m["n_head"], len(ids)
    h = (w["wte.weight"][torch.tensor(ids)] + w["wpe.weight"][:n])[None]  # (1, t, d)
    with torch.inference_mode():
        for i in range(m["n_layer"]):
            b = f"blocks.{i}"
            qkv = F.linear(norm(f"{b}.ln_1", h), w[f"{b}.attn.c_attn.weight"]).split(d, dim=2)
            q, k, v = (z.view(1, n, heads, d // heads).transpose(1, 2) for z in qkv)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            h = h + F.linear(a.transpose(1, 2).reshape(1, n, d), w[f"{b}.attn.c_proj.weight"])
            up = F.gelu(F.linear(norm(f"{b}.ln_2", h), w[f"{b}.mlp.c_fc.weight"]))
            h = h + F.linear(up, w[f"{b}.mlp.c_proj.weight"])
        norm("ln_f", h)
    return seen


# --- The model, loaded here ----------------------------------------------------------------------


@cache
def hf_model(link: str):
    """(model, encode or None) of a Hugging Face model, loaded by transformers."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = tiny_dir() / link.removeprefix("local:")
    model = AutoModelForCausalLM.from_pretrained(path).eval().requires_grad_(False)
    if not (path / "tokenizer.json").exists():
        return model, None
    tokenizer = AutoTokenizer.from_pretrained(path)
    return model, lambda text: tokenizer(text)["input_ids"]


def encoder(link: str):
    """(encode or None, context): a shipped model reads UTF-8 bytes."""
    if link.startswith("local:"):
        model, encode = hf_model(link)
        return encode, model.config.max_position_embeddings
    return (lambda text: list(text.encode("utf-8"))), shipped(link)[0]["model"]["block_size"]


def norms_of(link: str) -> list[tuple[str, object]]:
    if not link.startswith("local:"):
        return list(shipped_norms(link))
    model, _ = hf_model(link)
    return [(n, m) for n, m in model.named_modules() if type(m).__name__ in NORM_CLASSES]


def _hooked_pass(link: str, ids: list[int]) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    model, _ = hf_model(link)
    seen: dict[str, tuple] = {}
    handles = []
    for name, module in norms_of(link):

        def hook(mod, args, out, name=name):
            seen.setdefault(name, (name, args[0].clone(), out.clone()))

        handles.append(module.register_forward_hook(hook))
    with torch.inference_mode():
        model(torch.tensor([ids]))
    for handle in handles:
        handle.remove()
    return list(seen.values())


@cache
def captured(link: str, text: str) -> list[tuple[str, np.ndarray, np.ndarray, object]]:
    """(name, input (t, d), output (t, d), module) of every norm module, in call order."""
    encode, context = encoder(link)
    ids = encode(text)[: min(MAX_TOKENS, context)]
    run = _hooked_pass if link.startswith("local:") else shipped_pass
    modules = dict(norms_of(link))
    return [
        (name, *(z.double().reshape(-1, z.shape[-1]).numpy() for z in (x, y)), modules[name])
        for name, x, y in run(link, ids)
    ]


# --- What each module computes -------------------------------------------------------------------


def probe(d: int, dtype):
    """The probe input, from the recipe in labs.inspector.layers's docstring."""
    z = torch.randn(16, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    rows = []
    for r in range(16):
        scale = 10.0 ** (-2.0 + 4.0 * r / 15.0)
        rows.append(scale * z[r] + scale * (-1.0 + 2.0 * r / 15.0))
    return torch.stack(rows).to(dtype)


def module_eps(module) -> float | None:
    for attr in ("variance_epsilon", "eps", "epsilon"):
        value = getattr(module, attr, None)
        if isinstance(value, float | int) and not isinstance(value, bool):
            return float(value)
    return None


def convention(module) -> tuple[str, str]:
    """(kind, gain) whose float64 formula is nearest the module's output on a random input."""
    w, b = getattr(module, "weight", None), getattr(module, "bias", None)
    if w is None:
        x = torch.randn(4, 8, dtype=torch.float32)
        return ("none", "none") if torch.equal(module(x), x) else ("?", "none")
    x = torch.randn(6, w.numel(), generator=torch.Generator().manual_seed(1)) * 3 + 1.5
    x = x.to(w.dtype)
    with torch.inference_mode():
        y = module(x).double().numpy()
    x64, w64 = x.double().numpy(), w.detach().double().numpy()
    eps = module_eps(module) or 0.0
    shift = 0.0 if b is None else b.detach().double().numpy()
    d = x64.shape[-1]
    rms = x64 / np.sqrt(np.linalg.norm(x64, axis=-1, keepdims=True) ** 2 / d + eps)
    c = x64 - x64.sum(-1, keepdims=True) / d
    layer = c / np.sqrt(np.linalg.norm(c, axis=-1, keepdims=True) ** 2 / d + eps)
    options = {
        (k, g): n * gain + shift
        for k, n in (("rms", rms), ("layer", layer))
        for g, gain in (("direct", w64), ("offset", 1 + w64))
    }
    return min(options, key=lambda key: np.max(np.abs(options[key] - y)))


def _upstream(cls_path: str, d: int, eps: float, weight: torch.Tensor):
    """transformers' own norm class ``module.Class`` with ``weight`` and ``eps``."""
    module_name, cls_name = cls_path.rsplit(".", 1)
    cls = getattr(importlib.import_module(f"transformers.models.{module_name}"), cls_name)
    norm = cls(d, eps=eps).to(weight.dtype)
    with torch.no_grad():
        norm.weight.copy_(weight)
    return norm


def upstream_norm(kind: str, preset: str, x, weight, bias, eps: float | None):
    """The upstream computation a preset names, on ``x`` with the module's weight, bias, eps."""
    d = x.shape[-1]
    if kind == "layer":
        if preset == "olmo":  # OlmoLayerNorm: F.layer_norm of float32 x, no weight, cast back
            return F.layer_norm(x.float(), (d,), None, None, eps).to(x.dtype)
        return F.layer_norm(x, (d,), weight, bias, eps)
    classes = {
        "llama": "llama.modeling_llama.LlamaRMSNorm",
        "gemma": "gemma.modeling_gemma.GemmaRMSNorm",
        "olmo2": "olmo2.modeling_olmo2.Olmo2RMSNorm",
        "t5": "t5.modeling_t5.T5LayerNorm",
        "qwen3": "qwen3.modeling_qwen3.Qwen3RMSNorm",
        "qwen3-next": "qwen3_next.modeling_qwen3_next.Qwen3NextRMSNorm",
        "deepseek-v3": "deepseek_v3.modeling_deepseek_v3.DeepseekV3RMSNorm",
        "gpt-oss": "gpt_oss.modeling_gpt_oss.GptOssRMSNorm",
    }
    if preset == "llama4-qk":  # Llama4TextL2Norm: float32, no weight, cast back
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x)
    if preset in classes:
        return _upstream(classes[preset], d, 1e-6 if eps is None else eps, weight)(x)
    if preset == "torch":
        return F.rms_norm(x, (d,), weight, eps)
    xf = x.float()
    if preset == "transformer-engine":  # zero-centred gamma, float32 throughout, one cast
        xhat = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        return ((1 + weight.float()) * xhat).to(x.dtype)
    if preset == "paper":  # rmsnorm_torch.py: eps added to the RMS, outside the root
        return weight * (x / (x.norm(2, dim=-1, keepdim=True) * d**-0.5 + eps))
    if preset == "x-transformers":  # F.normalize(x) * sqrt(d) * g
        return F.normalize(x, dim=-1, eps=eps) * d**0.5 * weight
    raise AssertionError(f"no upstream for the {kind} preset {preset!r}")


# Every preset of each kind the page compares a module with.
PRESETS = {
    "rms": ("torch", "llama", "gemma", "t5", "olmo2", "qwen3", "qwen3-next", "deepseek-v3",
            "gpt-oss", "llama4-qk", "transformer-engine", "paper", "x-transformers"),
    "layer": ("torch", "olmo"),
}  # fmt: skip
# (kind, preset) -> whether the preset takes a weight, and a bias; else a weight and no bias.
TAKES = {
    ("layer", "torch"): (True, True),
    ("layer", "olmo"): (False, False),
    ("rms", "llama4-qk"): (False, False),
}


@cache
def preset_deltas(module) -> dict[str, float]:
    """max |Δ| of every preset of the module's kind that takes its weight and bias."""
    kind, _ = convention(module)
    w, b = getattr(module, "weight", None), getattr(module, "bias", None)
    x = probe(w.numel(), w.dtype)
    out = {}
    with torch.inference_mode():
        y = module(x)
        for name in PRESETS[kind]:
            if TAKES.get((kind, name), (True, False)) != (w is not None, b is not None):
                continue
            z = upstream_norm(kind, name, x, w, b, module_eps(module))
            out[name] = float((y.double() - z.double()).abs().max())
    return out


# --- The checks ----------------------------------------------------------------------------------


@cache
def _normalising(link: str) -> list[object]:
    return [m for _, m in norms_of(link) if convention(m)[0] in ("rms", "layer")]


def check_contract_exact(state: dict, claim: Claim) -> None:
    modules = _normalising(claim.fields["model"])
    assert claim.fields["count"] == len(modules) > 0
    assert claim.fields["exact"] == len(modules) and claim.fields["rest"] == 0
    assert claim.fields["delta"] == 0.0
    named = set(claim.fields["presets"].split(", "))
    for module in modules:
        deltas = preset_deltas(module)
        assert any(deltas.get(name) == 0.0 for name in named), deltas


def check_contract_close(state: dict, claim: Claim) -> None:
    modules = _normalising(claim.fields["model"])
    best = [min(preset_deltas(m).values()) for m in modules]
    assert claim.fields["count"] == len(modules)
    assert claim.fields["exact"] == sum(d == 0.0 for d in best)
    assert claim.fields["rest"] == len(modules) - claim.fields["exact"] > 0
    assert claim.fields["delta"] == max(best) > 0


def check_contract_identity(state: dict, claim: Claim) -> None:
    modules = [m for _, m in norms_of(claim.fields["model"])]
    assert claim.fields["count"] == len(modules) > 0
    x = torch.randn(3, 16)
    assert all(torch.equal(m(x), x) for m in modules)


def formula_error(module) -> float:
    """The smallest relative error of the module's output against the float64 formulas
    (RMSNorm or LayerNorm, gain w, 1 + w or none, with its bias), on a random input."""
    w, b = getattr(module, "weight", None), getattr(module, "bias", None)
    d = w.numel() if w is not None else 16
    x = torch.randn(6, d, generator=torch.Generator().manual_seed(2), dtype=torch.float64) + 0.7
    x = x.to(w.dtype if w is not None else torch.float32)
    with torch.inference_mode():
        y = module(x).double().numpy()
    x64 = x.double().numpy()
    if np.array_equal(y, x64):
        return 0.0
    eps = module_eps(module) or float(torch.finfo(x.dtype).eps)
    c = x64 - x64.sum(-1, keepdims=True) / d
    normalised = (
        x64 / np.sqrt(np.linalg.norm(x64, axis=-1, keepdims=True) ** 2 / d + eps),
        c / np.sqrt(np.linalg.norm(c, axis=-1, keepdims=True) ** 2 / d + eps),
    )
    gains = [1.0] if w is None else [w.detach().double().numpy(), 1 + w.detach().double().numpy()]
    shift = 0.0 if b is None else b.detach().double().numpy()
    errors = []
    for n in normalised:
        for g in gains:
            ref = n * g + shift
            errors.append(np.max(np.abs(y - ref)) / (np.max(np.abs(ref)) or 1.0))
    return float(min(errors))


def unknown_count(modules: list, tol: float) -> int:
    return sum(formula_error(m) > tol for m in modules)


def check_contract_unknown(state: dict, claim: Claim) -> None:
    modules = [m for _, m in norms_of(claim.fields["model"])]
    assert claim.fields["count"] == len(modules)
    assert claim.fields["unknown"] == unknown_count(modules, claim.fields["tol_pct"]) > 0


def _stored_weights(link: str) -> tuple[list[float], list[str]]:
    weights, gains = [], []
    for _, m in norms_of(link):
        if getattr(m, "weight", None) is not None:
            weights += m.weight.detach().double().numpy().ravel().tolist()
            gains.append(convention(m)[1])
    return weights, gains


def check_gain(state: dict, claim: Claim) -> None:
    weights, gains = _stored_weights(claim.fields["model"])
    kind = claim.key.removeprefix("inspector.gain_")
    if kind == "none":
        assert weights == []
        return
    if kind == "mixed":
        assert claim.fields["direct"] == gains.count("direct") > 0
        assert claim.fields["offset"] == gains.count("offset") > 0
        return
    assert set(gains) == {kind}
    # A sum of n terms rounds by up to n ulps of the largest; the variance's rounding, by n ulps
    # of the largest square, moves the standard deviation by that over twice itself.
    n, size = len(weights), max(map(abs, weights))
    mean, std = statistics.fmean(weights), statistics.pstdev(weights)
    assert abs(claim.fields["mean"] - mean) <= ulps(n, size)
    assert abs(claim.fields["std"] - std) <= ulps(n, size**2 / std)
    if kind == "offset":
        assert abs(claim.fields["gain"] - (1 + mean)) <= ulps(n, 1 + size)


def check_prompt(state: dict, claim: Claim) -> None:
    encode, context = encoder(claim.fields["model"])
    ids = encode(prompt_for(state))
    limit = min(MAX_TOKENS, context)
    if claim.key == "inspector.prompt_empty":
        assert ids == []
        return
    assert claim.fields["tokens"] == min(len(ids), limit)
    assert claim.fields["total"] == len(ids)
    assert (claim.key == "inspector.prompt_whole") == (len(ids) <= limit)


def check_prompt_no_tokenizer(state: dict, claim: Claim) -> None:
    from transformers import AutoTokenizer

    link = claim.fields["model"]
    assert link.startswith("local:"), "shipped checkpoints read bytes: they need no tokenizer"
    try:
        AutoTokenizer.from_pretrained(tiny_dir() / link.removeprefix("local:"))
    except Exception:
        return
    raise AssertionError(f"{link} has a tokenizer that loads")


def _per_norm(state: dict, claim: Claim) -> list[dict]:
    """Per norm module: the token rows x, y, and per token the squared norm, the sum, the
    share of RMS² that is μ² (cos²(x, 1)) and |x_i| / RMS."""
    out = []
    for name, x, y, module in captured(claim.fields["model"], prompt_for(state)):
        d = x.shape[1]
        sq = np.linalg.norm(x, axis=1) ** 2  # d · RMS², per token
        total = x.sum(axis=1)  # d · μ
        out.append({"name": name, "x": x, "y": y, "module": module, "sq": sq, "d": d,
                    "share": float(np.mean(total**2 / (d * sq))),
                    "ratio": np.abs(x) * math.sqrt(d) / np.sqrt(sq)[:, None]})  # fmt: skip
    return out


def check_identity(state: dict, claim: Claim) -> None:
    """RMS² = σ² + μ² is exact for real numbers. In float64, from float32 (or narrower)
    activations, the mean, the centred squares and the three means each round by a few d ulps
    of RMS²; so the page's gap is rounding below 8d float64 ulps of RMS², and at the widths
    sampled here (d = 32, 48) that is below the page's 1e-12: "holds" is the true verdict."""
    norms = _per_norm(state, claim)
    assert claim.fields["norms"] == len(norms)
    assert claim.fields["tokens"] == norms[0]["x"].shape[0]
    assert all(np.isfinite(n["x"]).all() for n in norms)
    assert 0.0 <= claim.fields["gap"] <= ulps(8 * max(n["d"] for n in norms), 1.0)
    assert (claim.key == "inspector.identity_holds") == (claim.fields["gap"] <= IDENTITY_TOL)


def check_share(state: dict, claim: Claim) -> None:
    norms = _per_norm(state, claim)
    largest = max(norms, key=lambda n: n["share"])
    assert claim.fields["name"] == largest["name"]
    # A share is at most 1: its rounding is counted in ulps of 1, not of the share.
    near(claim.fields["share_pct"], largest["share"], largest["d"], share=True)
    assert (claim.key == "inspector.share_small") == (largest["share"] <= 0.01)


def _top(state: dict, claim: Claim) -> tuple[dict, int, int]:
    """The module, token and coordinate where one coordinate carries the largest share of its
    token's sum of squares."""
    norms = _per_norm(state, claim)
    for n in norms:
        n["carried"] = n["x"] ** 2 / n["sq"][:, None]
    top = max(norms, key=lambda n: n["carried"].max())
    token, dim = np.unravel_index(np.argmax(top["carried"]), top["carried"].shape)
    return top, int(token), int(dim)


def check_outlier(state: dict, claim: Claim) -> None:
    top, token, dim = _top(state, claim)
    ratio = top["ratio"][token, dim]
    share = top["carried"][token, dim]
    assert (claim.fields["name"], claim.fields["token"], claim.fields["dim"]) == (
        top["name"], token, dim)  # fmt: skip
    near(claim.fields["ratio"], ratio, top["d"])
    near(claim.fields["share_pct"], share, top["d"], share=True)
    assert claim.fields["width"] == top["d"]
    assert (claim.key == "inspector.outlier_dominates") == (share >= 0.5)


def _median(values) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def check_treat(state: dict, claim: Claim) -> None:
    top, token, dim = _top(state, claim)
    y = top["y"]
    out_ratio = abs(y[token, dim]) * math.sqrt(top["d"]) / np.linalg.norm(y[token])
    near(claim.fields["out_ratio"], out_ratio, top["d"])
    module = top["module"]
    weight = getattr(module, "weight", None)
    if claim.key == "inspector.treat_identity":
        assert np.array_equal(top["x"], y)
        return
    if claim.key == "inspector.treat_nogain":
        assert weight is None
        return
    w = weight.detach().double().numpy()
    gain = 1 + w if convention(module)[1] == "offset" else w
    assert abs(claim.fields["gain"] - gain[dim]) <= ulps(1, gain[dim])
    assert abs(claim.fields["median"] - _median(np.abs(gain))) <= ulps(1, claim.fields["median"])


# --- The charts' words --------------------------------------------------------------------------

# The gain histogram: this many bins of one width, from the smallest stored weight to the largest.
BINS = 40


def check_hist(state: dict, claim: Claim) -> None:
    """The histogram's summary: the count and range of the stored weights; the most any bin
    holds, and a bin (quoted by its edges) that holds that many, every bin holding lower <= w
    < upper (the last also its upper edge)."""
    weights, _ = _stored_weights(claim.fields["model"])
    w = np.array(weights)
    f = claim.fields
    assert f["count"] == w.size > 0
    if claim.key == "inspector.hist_words_same":
        assert np.all(w == f["value"])
        return
    lo, hi = min(weights), max(weights)
    assert (f["lo"], f["hi"]) == (lo, hi) and lo < hi

    def count(a: float, b: float, last: bool) -> int:
        return sum(1 for v in weights if a <= v < b or (last and v == b))

    width = f["peak_hi"] - f["peak_lo"]
    tol = ulps(8, max(abs(lo), abs(hi), width))
    regular = abs(width - (hi - lo) / BINS) <= tol
    assert f["peak"] == count(f["peak_lo"], f["peak_hi"], regular and f["peak_hi"] >= hi), f
    if not regular:
        # Weights this close together are drawn in bars wider than their whole range: the
        # quoted bar and its two neighbours hold them all.
        assert hi - lo < width, (lo, hi, width)
        bars = [f["peak_lo"] + k * width for k in (-1, 0, 1, 2)]
        counts = [count(a, b, False) for a, b in zip(bars[:-1], bars[1:], strict=True)]
        assert sum(counts) == w.size and f["peak"] == max(counts)
        return
    edges = [lo + (hi - lo) * k / BINS for k in range(BINS)] + [hi]
    counts = [
        count(a, b, k == BINS - 1)
        for k, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True))
    ]
    assert f["peak"] == max(counts), (f["peak"], max(counts))
    assert any(abs(e - f["peak_lo"]) <= tol for e in edges[:-1]), f["peak_lo"]


def _read_names(state: dict, link: str | None) -> list[str]:
    """The norm modules a model's readings name, in call order; none without tokens."""
    if link is None:
        return []
    encode, _ = encoder(link)
    if encode is None or not encode(prompt_for(state)):
        return []
    return [name for name, *_ in captured(link, prompt_for(state))]


def _drawn(state: dict, link: str, chart: str) -> tuple[list[str], list[float], float]:
    """(module names, what the chart draws per module, how far this reading of it may lie
    from the page's: :func:`tolerance` at its largest value)."""
    norms = _per_norm(state, Claim("inspector.share_side", {"model": link}))
    if chart == "share":
        values = [n["share"] for n in norms]
    elif chart == "rms":
        values = [float(np.mean(np.sqrt(n["sq"] / n["d"]))) for n in norms]
    else:
        assert chart == "top", chart
        values = [float(n["ratio"].max()) for n in norms]
    size = max([abs(v) for v in values if math.isfinite(v)], default=0.0)
    d = max(n["d"] for n in norms)
    return [n["name"] for n in norms], values, tolerance(size, d, share=chart == "share")


def check_reading_words(state: dict, claim: Claim) -> None:
    """A chart of readings: two models with the same norm modules as a pair (each one's extremes
    and where they part most), else each model alone; percentages as the fractions they are."""
    chart, _, mode = claim.fields.get("chart", claim.key).removeprefix("inspector.").partition("_")
    mode = mode.removesuffix("_equal")
    plain = Claim(claim.key, {k.removesuffix("_pct"): v for k, v in claim.fields.items()})
    a, b = state["model"], state["compare"]
    if mode == "pair":
        assert (claim.fields["model"], claim.fields["compare"]) == (a, b)
        (names, ra, ta), (names_b, rb, tb) = (_drawn(state, link, chart) for link in (a, b))
        assert names == names_b
        size = max([abs(v) for v in ra + rb if math.isfinite(v)], default=0.0)
        check_pair_words(plain, names, ra, rb, rtol=max(ta, tb) / size if size else 0.0)
        return
    assert mode == "side", claim.key
    link = claim.fields["model"]
    other = b if claim.fields["side"] == "A" else a
    assert link == (a if claim.fields["side"] == "A" else b)
    # Alone, or beside a model whose readings name other modules (or none).
    assert not (_read_names(state, link) == _read_names(state, other) != [])
    names, values, tol = _drawn(state, link, chart)
    check_series_words(plain, names, values, atol=tol)


CHART_CHECKS = {"inspector.hist_words": check_hist, "inspector.hist_words_same": check_hist}
for _chart in ("share", "rms", "top"):
    for _mode in ("pair", "side"):
        CHART_CHECKS |= dict.fromkeys(
            (f"inspector.{_chart}_{_mode}", f"inspector.{_chart}_{_mode}_equal"),
            check_reading_words,
        )
CHART_CHECKS |= dict.fromkeys(
    ("charts.not_finite", "charts.no_finite", "charts.no_finite_values"), check_reading_words
)


CHECKS = {
    **CHART_CHECKS,
    "inspector.contract_exact": check_contract_exact,
    "inspector.contract_close": check_contract_close,
    "inspector.contract_identity": check_contract_identity,
    "inspector.contract_unknown": check_contract_unknown,
    "inspector.gain_direct": check_gain,
    "inspector.gain_offset": check_gain,
    "inspector.gain_mixed": check_gain,
    "inspector.gain_none": check_gain,
    "inspector.prompt_whole": check_prompt,
    "inspector.prompt_cut": check_prompt,
    "inspector.prompt_empty": check_prompt,
    "inspector.prompt_no_tokenizer": check_prompt_no_tokenizer,
    "inspector.identity_holds": check_identity,
    "inspector.identity_fails": check_identity,
    "inspector.share_small": check_share,
    "inspector.share_large": check_share,
    "inspector.outlier_dominates": check_outlier,
    "inspector.outlier_spread": check_outlier,
    "inspector.treat_gain": check_treat,
    "inspector.treat_nogain": check_treat,
    "inspector.treat_identity": check_treat,
}
