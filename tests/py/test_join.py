"""triton_embed loaded into a running Python process joins that interpreter."""

import concurrent.futures
import os
import subprocess
import sys

import pytest
import te_pyext
from conftest import P


def test_joins_the_running_interpreter():
    info = te_pyext.runtime_info()
    assert info["embedded"] is False
    # The glue module the library runs lives in this very interpreter.
    assert "_triton_embed_glue" in sys.modules
    import triton

    assert info["triton_version"] == triton.__version__
    assert info["python_version"] == sys.version.split()[0]


def _needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def test_shared_libraries_do_not_link_libpython():
    ext = os.environ["TE_PYEXT_FILE"]
    needed = _needed(ext)
    assert not [n for n in needed if n.startswith("libpython")], needed
    lib = [n for n in needed if n.startswith("libtriton_embed")]
    assert lib, needed


def test_hash_matches_python_jit_in_the_same_process(fake_driver):
    te_pyext.set_target("cuda:90")
    ours = te_pyext.compile_add(0x10000, 0x20000, 0x30010, 4096, 512, num_warps=2)
    from pykernels.vector import add_kernel

    theirs = add_kernel.warmup(P(0x10000), P(0x20000), P(0x30010), 4096, 512, grid=(1,), num_warps=2)
    assert ours["hash"] == theirs.hash
    assert ours["num_warps"] == 2
    assert ours["signature"] == (
        "add_kernel(x_ptr: *fp32 D, y_ptr: *fp32 D, out_ptr: *fp32 D, n_elements: i32 D, "
        "BLOCK: constexpr = 512)"
    )


def test_errors_become_python_exceptions():
    with pytest.raises(LookupError, match=r"^cannot load kernel pykernels.vector.nope: module"):
        te_pyext.signature("pykernels.vector", "nope")
    with pytest.raises(TypeError, match=r"is not a @triton.jit function \(it is a builtins.int\)"):
        te_pyext.signature("te_compile_kernels", "not_a_kernel")


def test_python_threads_compiling_concurrently_do_not_deadlock():
    te_pyext.set_target("cuda:90")
    before = te_pyext.compile_count()
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        futures = [pool.submit(te_pyext.compile_add, 0x10000, 0x20000, 0x30000, 2048, 256, w)
                   for w in (1, 2, 4, 1, 2, 4, 1, 2, 4, 1, 2, 4)]
        results = [f.result(timeout=600) for f in futures]
    hashes = {r["num_warps"]: r["hash"] for r in results}
    assert len(hashes) == 3
    for r in results:
        assert r["hash"] == hashes[r["num_warps"]]
    assert te_pyext.compile_count() - before <= 3  # each option set compiled at most once




def _gpu():
    try:
        import torch as t
    except ImportError:
        return None
    return t if t.cuda.is_available() and te_pyext.cuda_available() else None


@pytest.mark.skipif(_gpu() is None, reason="needs torch with a CUDA GPU")
def test_gpu_launch_from_a_python_process_matches_python_triton():
    import torch as t

    te_pyext.set_target(None)
    n = 10000
    x = t.rand(n, device="cuda")
    y = t.rand(n, device="cuda")
    out = t.empty_like(x)
    out_py = t.empty_like(x)
    stream = t.cuda.current_stream().cuda_stream
    ours = te_pyext.launch_add(x.data_ptr(), y.data_ptr(), out.data_ptr(), n, 1024, stream)
    from pykernels.vector import add_kernel

    ck = add_kernel[(triton_cdiv(n, 1024),)](x, y, out_py, n, BLOCK=1024)
    t.cuda.synchronize()
    assert t.equal(out, x + y)
    assert t.equal(out, out_py)  # bitwise
    assert ours["hash"] == ck.hash


def triton_cdiv(a, b):
    return (a + b - 1) // b


def test_python_process_exits_cleanly_after_using_the_library():
    # The library drops its Python references when the interpreter shuts down.
    code = (
        "import sys, os\n"
        "sys.path[:0] = [os.environ['TE_PYEXT_DIR'], os.environ['TE_SOURCE_DIR']]\n"
        "import te_pyext\n"
        "te_pyext.set_target('cuda:90')\n"
        "print(te_pyext.compile_add(0x1000, 0x2000, 0x3000, 4096, 1024)['hash'])\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip()) == 64, r.stdout
    assert "Traceback" not in r.stderr and "Fatal" not in r.stderr, r.stderr
