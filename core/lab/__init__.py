"""The pages' models: one module per page, named after it, each a function from the page's
settings to one dataclass of numbers and the claims (``core.lab.claims``) they make true."""
