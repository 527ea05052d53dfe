"""Scripts that measure NormLab as it runs: ``python -m benchmarks.<name> --help``."""

from core.device import passive_openmp_threads

# Before any benchmark imports torch, as the app's start does (see there).
passive_openmp_threads()
