"""Triton kernels shipped with triton_embed (importable as ``pykernels.*``)."""
