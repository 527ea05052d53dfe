"""Scripts that measure NormLab as it runs: ``python -m benchmarks.<name> --help``."""
