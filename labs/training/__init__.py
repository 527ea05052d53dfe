"""The training lab: tiny transformers trained on Python's own docs, the shipped reference runs and
sets, and the page's views of them and the sentences they make true. One module per idea; the
list, with what each holds, is under ``labs/training/`` in ``docs/architecture.md``."""
