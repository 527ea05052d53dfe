"""Scripts that measure NormLab as it runs: ``python -m benchmarks.<name> --help``."""

# ``core`` sets torch's OpenMP threads to sleep between operations (see there); imported here, it
# does so before any benchmark imports torch, as it does for the app.
import core  # noqa: F401
