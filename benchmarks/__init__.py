"""Scripts that measure NormLab as it runs: ``python -m benchmarks.<name> --help``."""

import os

# As ``core`` sets it for the app (see there): torch's OpenMP threads sleep between operations
# instead of spinning, set before a benchmark imports torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
