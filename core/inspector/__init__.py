"""The checkpoint inspector: a real model's normalisation contract and what its norms see.

- :mod:`~core.inspector.sources`: where a model may come from (NormLab's shipped checkpoints,
  directories the host lists, Hugging Face ids when the host turns the hub on) and how a link
  names one; nothing else reaches the loader.
- :mod:`~core.inspector.loading`: one load at a time, a small LRU cache, a size cap, and a
  :class:`Refusal` with a code for everything that can go wrong.
- :mod:`~core.inspector.places`: where each norm module sits, from one traced forward pass.
- :mod:`~core.inspector.layers`: for every norm module, what it computes (RMSNorm or LayerNorm,
  gain w or 1 + w, eps, dtype) and which core preset reproduces it.
- :mod:`~core.inspector.readings`: what each norm receives on a prompt, read by forward hooks.
- :mod:`~core.inspector.report`: the page's state and the sentences chosen by the numbers.
- :mod:`~core.inspector.tiny`: tiny random Hugging Face models built offline, for tests and for
  trying the local-directory source.

torch and transformers are imported inside the functions that need them.
"""

from core.inspector.layers import ModelContract, NormModule, read_contract
from core.inspector.loading import LoadedModel, Refusal, clear_cache, is_loaded, load
from core.inspector.readings import MAX_TOKENS, NormReading
from core.inspector.report import InspectorView, SideView, inspect_side, inspect_view
from core.inspector.sources import Catalog, ModelRef, Settings, valid_hub_id
