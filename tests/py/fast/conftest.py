"""The Python fast-path suite (triton_embed.jit): the package from the build tree (CTest sets
TRITON_EMBED_OPS_LIBRARY and TE_SOURCE_DIR) or an installed one."""

import os
import sys

import pytest

if "TE_SOURCE_DIR" in os.environ and "TRITON_EMBED_OPS_LIBRARY" in os.environ:
    sys.path.insert(0, os.path.join(os.environ["TE_SOURCE_DIR"], "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import triton_embed  # noqa: E402,F401


def pytest_sessionstart(session):
    """./dev.sh versions runs this suite under each supported Triton: check it got that one."""
    import triton

    expected = os.environ.get("TE_EXPECT_TRITON")
    if expected and triton.__version__ != expected:
        raise pytest.UsageError("Triton %s imported (%s), expected %s"
                                % (triton.__version__, triton.__file__, expected))


@pytest.fixture(autouse=True)
def _fresh_stats():
    triton_embed.reset_fast_path_stats()
    yield
