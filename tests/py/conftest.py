import os
import sys

import pytest

# The extension module built by CMake (tests/CMakeLists.txt passes its directory).
if "TE_PYEXT_DIR" in os.environ:
    sys.path.insert(0, os.environ["TE_PYEXT_DIR"])
sys.path.insert(0, os.path.join(os.environ["TE_SOURCE_DIR"]))  # for pykernels
for p in os.environ.get("TRITON_EMBED_PYTHONPATH", "").split(":"):
    if p:
        sys.path.insert(0, p)


from te_helpers import FakeDriver, P  # noqa: E402,F401  (tests/kernels, on sys.path)


def pytest_sessionstart(session):
    """./dev.sh versions runs this suite under each supported Triton: check it got that one."""
    import triton

    expected = os.environ.get("TE_EXPECT_TRITON")
    if expected and triton.__version__ != expected:
        raise pytest.UsageError("Triton %s imported (%s), expected %s"
                                % (triton.__version__, triton.__file__, expected))


@pytest.fixture
def fake_driver():
    from triton.runtime.driver import driver

    previous = driver._active
    driver.set_active(FakeDriver())
    yield
    driver._active = previous
