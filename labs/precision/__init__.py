"""The precision lab: each dtype's outputs against float64, and the reduction's precision."""
