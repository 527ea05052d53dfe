"""The speed lab: what a run will measure, the timing itself, and what it measured."""
