"""Shared fixtures of the rlx Python tests: the repository's tiny model fixtures and the devices.

GPU devices that cannot be opened skip loudly, unless RLX_REQUIRE_GPU=1 (set by CI, which has
lavapipe) makes that a failure.
"""

import os
import pathlib

import pytest

import rlx

REPO = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = REPO / "crates" / "rlx-models" / "tests" / "fixtures"


def require_gpu() -> bool:
    return os.environ.get("RLX_REQUIRE_GPU") == "1"


def open_or_skip(device: str):
    """A Session on `device`, or a skip (a failure under RLX_REQUIRE_GPU=1) when it cannot open."""
    try:
        return rlx.Session(device)
    except rlx.DeviceUnavailable as e:
        if device == "cpu" or require_gpu():
            raise
        pytest.skip(f"{device} unavailable here: {e}")


@pytest.fixture(params=["cpu", "vulkan"])
def device(request):
    """Each device the graph tests run on: the CPU and the native Vulkan backend."""
    open_or_skip(request.param).close()
    return request.param


@pytest.fixture(scope="session")
def fixtures() -> pathlib.Path:
    return FIXTURES
