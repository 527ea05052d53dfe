"""The training lab: tiny transformers (``model``) on Python's own docs (``corpus``), trained by
``train``, the shipped reference runs (``runs``), their checkpoints (``store``), the stream read
by forward hooks (``activations``) and the page's view of the runs (``lab_view``), with the runs
as drawn and compared (``curves``) and what they say (``findings``)."""
