"""core.device, and that core imports and computes on numpy with torch absent."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from core import available_devices, resolve_device, rms_norm, torch_available

REPO = Path(__file__).resolve().parents[1]


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_torch_is_found_here():
    assert torch_available() is True


def test_available_devices_lists_cpu_first_and_only_real_ones():
    devices = available_devices()
    assert devices[0] == "cpu"
    assert ("cuda" in devices) == torch.cuda.is_available()
    assert set(devices) <= {"cpu", "cuda", "mps"}


def test_resolve_device():
    assert resolve_device("cpu") == "cpu"
    preferred = [d for d in ("cuda", "mps", "cpu") if d in available_devices()]
    assert resolve_device("auto") == preferred[0]
    with pytest.raises(ValueError, match=r"device must be one of .*'auto'"):
        resolve_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message for an absent cuda")
def test_absent_device_names_the_available_ones():
    with pytest.raises(ValueError, match=r"device 'cuda' is not available here; available: \["):
        resolve_device("cuda")


def test_numpy_path_does_not_import_torch():
    result = _run_python("""
        import sys
        import numpy as np
        from core import rms_norm, layer_norm_report
        y = rms_norm(np.arange(1.0, 5.0), [1.0, 2.0, 3.0, 4.0], preset="gemma")
        r = layer_norm_report([[1.0, 2.0, 4.0]], eps=0.0)
        assert "torch" not in sys.modules, "torch was imported"
        print("ok", y.dtype, r.output.shape)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok", "float64", "(1,", "3)"]


def test_core_works_with_torch_blocked():
    result = _run_python("""
        import sys
        sys.modules["torch"] = None  # any "import torch" now raises ImportError
        import numpy as np
        import core
        assert core.torch_available() is False
        assert core.available_devices() == []
        out = core.rms_norm(np.array([[3.0, 4.0]]), eps=0.0)
        np.testing.assert_allclose(out, [[0.6 * 2**0.5, 0.8 * 2**0.5]], rtol=1e-12)
        for call in (lambda: core.rms_norm([1.0, 2.0], reduction_dtype="bfloat16"),
                     lambda: core.rms_norm([1.0, 2.0], device="auto")):
            try:
                call()
            except ValueError as exc:
                print(exc)
            else:
                raise AssertionError("no ValueError")
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "reduction_dtype" in lines[0] and "torch" in lines[0]
    assert "device" in lines[1] and "torch" in lines[1]


def test_device_argument_computes_with_torch_there():
    x = np.random.default_rng(7).normal(size=(2, 6)).astype(np.float32)
    on_cpu = rms_norm(x, device="cpu")
    assert isinstance(on_cpu, torch.Tensor) and on_cpu.device.type == "cpu"
    assert on_cpu.dtype == torch.float32
    np.testing.assert_allclose(on_cpu.numpy(), rms_norm(x), rtol=1e-6, atol=1e-6)
    auto = rms_norm(torch.from_numpy(x), device="auto")
    assert auto.device.type == resolve_device("auto")
