"""Independent checks of the checkpoint inspector's sentences.

The states are the models this test can offer (tiny random Llama, Gemma, OLMo 2 and GPT-2 models
built offline into a temporary folder, and NormLab's shipped checkpoints when they are present),
alone or side by side, with the page's sentence in either language, the empty text, the longest
text a link may carry, and random text.

Each check loads the model itself (transformers' ``from_pretrained``, or the shipped checkpoint's
own loader), finds the norm modules by their class names, records their inputs with its own
forward hooks and recomputes what the sentence says in numpy float64; preset claims are checked
by running the module and ``core.norms`` on a probe input built here from the recipe in
``core.checkpoints.contract``'s docstring.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from hypothesis import strategies as st

from core.checkpoints import Settings, inspect_view
from core.checkpoints.sources import SHIPPED_DIR
from core.claims import Claim
from tests.inspector_fixture import tiny_dir
from ui.i18n import t

MAX_TEXT = 300
MAX_TOKENS = 64
FAMILIES = ("llama", "gemma", "olmo2", "gpt2")
# The classes of the norm modules in the models sampled here (the shipped model's is "Norm").
NORM_CLASSES = ("LlamaRMSNorm", "GemmaRMSNorm", "Olmo2RMSNorm", "LayerNorm", "Norm")
SHIPPED = tuple(sorted(p.stem for p in SHIPPED_DIR.glob("*.safetensors")))


def settings() -> Settings:
    return Settings(model_dirs=(tiny_dir(),))


MODELS = (*SHIPPED, *(f"local:tiny-{f}" for f in (*FAMILIES, "bare")))
TEXTS = st.one_of(
    st.sampled_from(("", " ", "x" * MAX_TEXT, "é" * MAX_TEXT, "a")),
    st.sampled_from(tuple(t("inspector.prompt", lang) for lang in ("en", "id"))),
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
    """The text the page runs: the visitor's, cut to MAX_TEXT, else the sentence in the
    reader's language."""
    return state["text"].strip()[:MAX_TEXT] or t("inspector.prompt", state["lang"])


def view(state: dict):
    links = {"a": state["model"]}
    if state["compare"] is not None:
        links["b"] = state["compare"]
    return inspect_view(links, prompt_for(state), settings())


# --- The model, loaded here ----------------------------------------------------------------------


@cache
def model_and_encoder(link: str):
    """(model, encode, context) loaded without core.checkpoints."""
    if link.startswith("local:"):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = tiny_dir() / link.removeprefix("local:")
        model = AutoModelForCausalLM.from_pretrained(path).eval().requires_grad_(False)
        context = model.config.max_position_embeddings
        if not (path / "tokenizer.json").exists():
            return model, None, context
        tokenizer = AutoTokenizer.from_pretrained(path)
        return model, lambda text: tokenizer(text)["input_ids"], context
    from core.checkpoint import load_checkpoint

    model, config = load_checkpoint(SHIPPED_DIR / f"{link}.safetensors")
    model = model.eval().requires_grad_(False)
    return model, lambda text: list(text.encode("utf-8")), config["model"]["block_size"]


def norms_of(model) -> list[tuple[str, object]]:
    return [(n, m) for n, m in model.named_modules() if type(m).__name__ in NORM_CLASSES]


@cache
def captured(link: str, text: str) -> list[tuple[str, np.ndarray, np.ndarray, object]]:
    """(name, input (t, d), output (t, d), module) of every norm module, in call order."""
    import torch

    model, encode, context = model_and_encoder(link)
    ids = encode(text)[: min(MAX_TOKENS, context)]
    seen: dict[str, tuple] = {}
    handles = []
    for name, module in norms_of(model):

        def hook(mod, args, out, name=name):
            if name not in seen:
                x = args[0].double().reshape(-1, args[0].shape[-1]).numpy()
                y = out.double().reshape(-1, out.shape[-1]).numpy()
                seen[name] = (name, x, y, mod)

        handles.append(module.register_forward_hook(hook))
    with torch.inference_mode():
        model(torch.tensor([ids]))
    for handle in handles:
        handle.remove()
    return list(seen.values())


# --- What each module computes -------------------------------------------------------------------


def probe(d: int, dtype):
    """The probe input, from the recipe in core.checkpoints.contract's docstring."""
    import torch

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
    import torch

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
    rms = x64 / np.sqrt(np.mean(x64**2, -1, keepdims=True) + eps)
    c = x64 - x64.mean(-1, keepdims=True)
    layer = c / np.sqrt(np.mean(c**2, -1, keepdims=True) + eps)
    options = {
        (k, g): n * gain + shift
        for k, n in (("rms", rms), ("layer", layer))
        for g, gain in (("direct", w64), ("offset", 1 + w64))
    }
    return min(options, key=lambda key: np.max(np.abs(options[key] - y)))


@cache
def preset_deltas(module) -> dict[str, float]:
    """max |Δ| of every preset of the module's kind that takes its weight and bias."""
    import torch

    from core.norms import layer_norm, rms_norm
    from core.presets import get_preset, preset_names

    kind, _ = convention(module)
    w, b = getattr(module, "weight", None), getattr(module, "bias", None)
    x = probe(w.numel(), w.dtype)
    with torch.inference_mode():
        y = module(x)
        out = {}
        for name in preset_names(kind):
            p = get_preset(name, kind)
            if p.has_weight != (w is not None) or p.has_bias != (b is not None):
                continue
            if kind == "rms":
                z = rms_norm(x, w, preset=name, eps=module_eps(module))
            else:
                z = layer_norm(x, w, b, preset=name, eps=module_eps(module))
            out[name] = float((y.double() - z.double()).abs().max())
    return out


# --- The checks ----------------------------------------------------------------------------------


@cache
def _normalising(link: str) -> list[object]:
    model, _, _ = model_and_encoder(link)
    return [m for _, m in norms_of(model) if convention(m)[0] in ("rms", "layer")]


def check_contract_exact(state: dict, claim: Claim) -> None:
    modules = _normalising(claim.fields["model"])
    assert claim.fields["count"] == len(modules) > 0
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
    import torch

    model, _, _ = model_and_encoder(claim.fields["model"])
    modules = [m for _, m in norms_of(model)]
    assert claim.fields["count"] == len(modules) > 0
    x = torch.randn(3, 16)
    assert all(torch.equal(m(x), x) for m in modules)


def formula_error(module) -> float:
    """The smallest relative error of the module's output against the float64 formulas
    (RMSNorm or LayerNorm, gain w, 1 + w or none, with its bias), on a random input."""
    import torch

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
    c = x64 - x64.mean(-1, keepdims=True)
    normalised = (
        x64 / np.sqrt(np.mean(x64**2, -1, keepdims=True) + eps),
        c / np.sqrt(np.mean(c**2, -1, keepdims=True) + eps),
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
    model, _, _ = model_and_encoder(claim.fields["model"])
    modules = [m for _, m in norms_of(model)]
    assert claim.fields["count"] == len(modules)
    assert claim.fields["unknown"] == unknown_count(modules, claim.fields["tol_pct"]) > 0


def _stored_weights(link: str) -> tuple[np.ndarray, list[str]]:
    model, _, _ = model_and_encoder(link)
    weights, gains = [], []
    for _, m in norms_of(model):
        if getattr(m, "weight", None) is not None:
            weights.append(m.weight.detach().double().numpy().ravel())
            gains.append(convention(m)[1])
    return (np.concatenate(weights) if weights else np.zeros(0)), gains


def check_gain(state: dict, claim: Claim) -> None:
    weights, gains = _stored_weights(claim.fields["model"])
    kind = claim.key.removeprefix("inspector.gain_")
    if kind == "none":
        assert weights.size == 0
        return
    if kind == "mixed":
        assert claim.fields["direct"] == gains.count("direct") > 0
        assert claim.fields["offset"] == gains.count("offset") > 0
        return
    assert set(gains) == {kind}
    np.testing.assert_allclose(claim.fields["mean"], weights.mean(), rtol=1e-9)
    np.testing.assert_allclose(claim.fields["std"], weights.std(), rtol=1e-9)
    if kind == "offset":
        np.testing.assert_allclose(claim.fields["gain"], 1 + weights.mean(), rtol=1e-9)


def check_prompt(state: dict, claim: Claim) -> None:
    _, encode, context = model_and_encoder(claim.fields["model"])
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
    out = []
    for name, x, y, module in captured(claim.fields["model"], prompt_for(state)):
        ms, mu = np.mean(x**2, -1), x.mean(-1)
        var = np.mean((x - mu[:, None]) ** 2, -1)
        ratio = np.abs(x) / np.sqrt(ms)[:, None]
        out.append({"name": name, "x": x, "y": y, "module": module, "ms": ms, "mu": mu,
                    "gap": np.max(np.abs(ms - var - mu**2) / ms), "share": np.mean(mu**2 / ms),
                    "ratio": ratio})  # fmt: skip
    return out


def check_identity(state: dict, claim: Claim) -> None:
    norms = _per_norm(state, claim)
    gap = max(n["gap"] for n in norms)
    assert claim.fields["norms"] == len(norms)
    assert claim.fields["tokens"] == norms[0]["x"].shape[0]
    assert math.isclose(claim.fields["gap"], gap, rel_tol=1e-6, abs_tol=1e-300)
    assert (claim.key == "inspector.identity_holds") == (gap <= 1e-12)


def check_share(state: dict, claim: Claim) -> None:
    norms = _per_norm(state, claim)
    largest = max(norms, key=lambda n: n["share"])
    assert claim.fields["name"] == largest["name"]
    assert math.isclose(claim.fields["share_pct"], largest["share"], rel_tol=1e-9)
    assert (claim.key == "inspector.share_small") == (largest["share"] <= 0.01)


def _top(state: dict, claim: Claim) -> tuple[dict, int, int]:
    """The module, token and coordinate where one coordinate carries the largest share of its
    token's sum of squares."""
    norms = _per_norm(state, claim)
    for n in norms:
        n["carried"] = n["x"] ** 2 / np.sum(n["x"] ** 2, -1, keepdims=True)
    top = max(norms, key=lambda n: n["carried"].max())
    token, dim = np.unravel_index(np.argmax(top["carried"]), top["carried"].shape)
    return top, int(token), int(dim)


def check_outlier(state: dict, claim: Claim) -> None:
    top, token, dim = _top(state, claim)
    ratio = top["ratio"][token, dim]
    share = top["x"][token, dim] ** 2 / np.sum(top["x"][token] ** 2)
    assert (claim.fields["name"], claim.fields["token"], claim.fields["dim"]) == (
        top["name"], token, dim)  # fmt: skip
    assert math.isclose(claim.fields["ratio"], ratio, rel_tol=1e-9)
    assert math.isclose(claim.fields["share_pct"], share, rel_tol=1e-9)
    assert claim.fields["width"] == top["x"].shape[1]
    assert (claim.key == "inspector.outlier_dominates") == (share >= 0.5)


def check_treat(state: dict, claim: Claim) -> None:
    top, token, dim = _top(state, claim)
    y = top["y"]
    out_ratio = abs(y[token, dim]) / np.sqrt(np.mean(y[token] ** 2))
    assert math.isclose(claim.fields["out_ratio"], out_ratio, rel_tol=1e-9)
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
    assert math.isclose(claim.fields["gain"], gain[dim], rel_tol=1e-12)
    assert math.isclose(claim.fields["median"], np.median(np.abs(gain)), rel_tol=1e-12)


CHECKS = {
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
