"""Independent checks of the sentences the pages show (see ``labkit/claims.py``).

One module per page, named after it, defines:

``STATES``
    a hypothesis strategy of link states (dicts of the page's parameters, as the page's core
    function takes them), covering the extremes a link can reach: the smallest and largest
    widths, eps at its maximum, large offsets, every dtype and every preset pair.
``view(state)``
    the page's core function called for that state; its result has ``claims``, a mapping from
    slot to :class:`labkit.claims.Claim`.
``CHECKS``
    a dict from text key to a function ``check(state, claim)`` that recomputes, independently
    of the core (plain numpy in float64, torch.nn.functional, autograd), what the sentence says,
    including the numbers it quotes, and raises ``AssertionError`` when it is false.

Helpers several modules share live in ``oracle`` (which imports nothing from ``core``); a module
never imports another page's module.

``tests/test_claims.py`` runs every page's module: every claim shown in every sampled state must
have a check and pass it, and every text marked ``claim = true`` must have a check.
"""
