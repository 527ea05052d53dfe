"""The checkpoint inspector: a real model's normalisation contract and what its norms see.

docs/architecture.md maps its modules and docs/inspector.md its sources; nothing but
:mod:`~labs.inspector.sources` names what reaches the loader. :mod:`~labs.inspector.tiny` builds
tiny random Hugging Face models offline, for tests and for trying the local-directory source.
torch and transformers are imported inside the functions that need them."""

from labs.inspector.layers import ModelContract, NormModule, read_contract
from labs.inspector.loading import LoadedModel, Refusal, clear_cache, is_loaded, load
from labs.inspector.readings import MAX_TOKENS, NormReading
from labs.inspector.report import InspectorView, SideView, inspect_side, inspect_view
from labs.inspector.sources import Catalog, ModelRef, Settings, valid_hub_id
