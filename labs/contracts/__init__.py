"""The contracts lab: two implementations' contracts, and how far their outputs part."""
