"""The checkpoint inspector: a real model's normalisation contract and what its norms see.

- :mod:`~labs.inspector.sources`: where a model may come from (NormLab's shipped checkpoints,
  directories the host lists, Hugging Face ids when the host turns the hub on) and how a link
  names one; nothing else reaches the loader.
- :mod:`~labs.inspector.loading`: one load at a time, a small LRU cache, a size cap, and a
  :class:`Refusal` with a code for everything that can go wrong.
- :mod:`~labs.inspector.places`: where each norm module sits, from one traced forward pass.
- :mod:`~labs.inspector.layers`: for every norm module, what it computes (RMSNorm or LayerNorm,
  gain w or 1 + w, eps, dtype) and which core preset reproduces it.
- :mod:`~labs.inspector.readings`: what each norm receives on a prompt, read by forward hooks.
- :mod:`~labs.inspector.report`: the page's state and the sentences chosen by the numbers.
- :mod:`~labs.inspector.tiny`: tiny random Hugging Face models built offline, for tests and for
  trying the local-directory source.

torch and transformers are imported inside the functions that need them."""

from labs.inspector.layers import ModelContract, NormModule, read_contract
from labs.inspector.loading import LoadedModel, Refusal, clear_cache, is_loaded, load
from labs.inspector.readings import MAX_TOKENS, NormReading
from labs.inspector.report import InspectorView, SideView, inspect_side, inspect_view
from labs.inspector.sources import Catalog, ModelRef, Settings, valid_hub_id
