"""Where each normalisation module of a model sits, found from one traced forward pass, without
trusting names: a norm whose output is what an attention or MLP block reads is *pre*-attention or
*pre*-MLP; one that reads a block's output, or the residual sum of the block's input and output,
is *post*; one inside the attention block normalises queries or keys (*qk*), one inside the MLP
is *mlp_inner*; one after the last layer is *final*, one before the first is *embedding*.

A module that names its own place, as NormLab's own models do, is taken at its word
(``declared_place``): an identity's input and output are one tensor, so a trace cannot place it."""

from __future__ import annotations

import re
from typing import Any

# Where a norm can sit, in the order a reader meets them in a block.
PLACES = (
    "embedding",
    "pre_attention",
    "qk",
    "post_attention",
    "pre_mlp",
    "mlp_inner",
    "post_mlp",
    "final",
    "other",
)
_NORM_CLASS = re.compile(r"(RMSNorm|LayerNorm|Norm)$")
_NOT_NORMS = ("BatchNorm", "GroupNorm", "InstanceNorm")
_ATTENTION = re.compile(r"(Attention|Attn)$")
_MLP = re.compile(r"(MLP|FeedForward|FFN)$")


def _is_norm(module: Any) -> bool:
    name = type(module).__name__
    return (
        bool(_NORM_CLASS.search(name))
        and not any(bad in name for bad in _NOT_NORMS)
        and not any(True for _ in module.children())
    )


def norm_modules(model: Any) -> list[tuple[str, Any]]:
    """Every normalisation module of ``model`` (leaf modules named ...Norm), by name."""
    return [(name, m) for name, m in model.named_modules() if name and _is_norm(m)]


def _outermost(model: Any, pattern: re.Pattern) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name, module in model.named_modules():
        if pattern.search(type(module).__name__) and not _is_norm(module):
            if not any(name.startswith(f"{outer}.") for outer, _ in found):
                found.append((name, module))
    return found


def _layers(model: Any) -> list[Any]:
    """The decoder layers: the items of the module list whose items hold attention blocks."""
    import torch

    best: list[Any] = []
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) > len(best):
            if all(_outermost(item, _ATTENTION) for item in module):
                best = list(module)
    return best


def _tensor(args: tuple, kwargs: dict) -> Any:
    import torch

    for value in (*args, kwargs.get("hidden_states"), *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value
    return None


def _output(out: Any) -> Any:
    return out[0] if isinstance(out, tuple | list) else out


def _same(a: Any, b: Any) -> bool:
    import torch

    if a is None or b is None:
        return False
    return a is b or (a.shape == b.shape and torch.equal(a, b))


class _Tracer:
    """Forward hooks that record, in call order, each attention and MLP block's input and
    output and each norm's input, output and the blocks it was called inside."""

    def __init__(self, model: Any) -> None:
        self.layer_index = {id(m): i for i, m in enumerate(_layers(model))}
        self.names = {id(m): n for n, m in norm_modules(model)}
        self.blocks = [(m, "attention") for _, m in _outermost(model, _ATTENTION)]
        self.blocks += [(m, "mlp") for _, m in _outermost(model, _MLP)]
        self.stack: list[tuple[str, int | None]] = []
        self.events: list[dict[str, Any]] = []
        self.handles: list[Any] = []
        for module in model.modules():
            if id(module) in self.layer_index:
                self._around(module, "layer", self.layer_index[id(module)])
            elif id(module) in self.names:
                self.handles.append(module.register_forward_hook(self.on_norm, with_kwargs=True))
        for module, kind in self.blocks:
            self._around(module, kind, None)

    def _around(self, module: Any, kind: str, index: int | None) -> None:
        def enter(mod, args, kwargs):
            self.stack.append((kind, index))
            if kind != "layer":
                layer = _current_layer(self.stack)
                self.events.append({"kind": kind, "layer": layer, "input": _tensor(args, kwargs)})

        def leave(mod, args, kwargs, out):
            self.stack.pop()
            if kind != "layer":
                open_blocks = [e for e in self.events if e["kind"] == kind and "output" not in e]
                open_blocks[-1]["output"] = _output(out)

        self.handles.append(module.register_forward_pre_hook(enter, with_kwargs=True))
        self.handles.append(module.register_forward_hook(leave, with_kwargs=True))

    def on_norm(self, module, args, kwargs, out) -> None:
        self.events.append(
            {
                "kind": "norm",
                "name": self.names[id(module)],
                "inside": {kind for kind, _ in self.stack},
                "layer": _current_layer(self.stack),
                "input": _tensor(args, kwargs),
                "output": _output(out),
            }
        )

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def trace_places(model: Any, ids: Any) -> list[tuple[str, str, int | None]]:
    """(norm name, place, layer index) for every norm call of one forward pass, in call order.

    ``ids`` is a (1, t) tensor of token ids. See the module docstring for the rules."""
    import torch

    tracer = _Tracer(model)
    try:
        with torch.inference_mode():
            model(ids)
    finally:
        tracer.remove()
    return _classify(tracer.events)


def _current_layer(stack: list[tuple[str, int | None]]) -> int | None:
    return next((index for kind, index in stack if kind == "layer"), None)


def _classify(events: list[dict[str, Any]]) -> list[tuple[str, str, int | None]]:
    out: list[tuple[str, str, int | None]] = []
    seen_layer = False
    for event in events:
        layer = event["layer"]
        seen_layer = seen_layer or layer is not None
        if event["kind"] != "norm":
            continue
        inside = event["inside"]
        if "attention" in inside:
            place = "qk"
        elif "mlp" in inside:
            place = "mlp_inner"
        elif layer is None:
            place = "final" if seen_layer else "embedding"
        else:
            place = _place_in_layer(
                event, [e for e in events if e["kind"] != "norm" and e["layer"] == layer]
            )
        out.append((event["name"], place, layer))
    return out


def _place_in_layer(norm: dict[str, Any], blocks: list[dict[str, Any]]) -> str:
    """Before a block when the block reads the norm's output; after it when the norm reads the
    block's output, or the residual sum of the block's input and output (post-norm)."""
    for block in blocks:
        out, inp = block.get("output"), block.get("input")
        summed = out is not None and inp is not None and out.shape == inp.shape
        if _same(norm["input"], out) or (summed and _same(norm["input"], inp + out)):
            return f"post_{block['kind']}"
        if _same(norm["output"], inp):
            return f"pre_{block['kind']}"
    return "other"


# A module that names its own place (``labs.training.model.Norm.where``): the code says where it
# sits. Needed for an identity, whose input and output are the same tensor, so that the traced
# pass cannot tell "after attention" from "before the MLP".
_DECLARED = {"pre-attention": "pre_attention", "pre-MLP": "pre_mlp", "final": "final"}


def declared_place(module: Any, traced: str) -> str:
    """The place ``module`` names for itself, else ``traced``."""
    where = getattr(module, "where", None)
    return _DECLARED.get(where, traced) if isinstance(where, str) else traced
