"""The attention lab: what each norm does to the keys attention reads."""
