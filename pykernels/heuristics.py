"""Heuristics shared by the ops' kernels (used with @triton.heuristics)."""


def row_warps(args):
    """num_warps for a kernel that runs one row per program: a wider block spreads its row
    over more warps (4 up to 1024 columns, 8 at 2048, 16 from 4096), so each thread keeps few
    elements in registers."""
    block = args["BLOCK"]
    return 16 if block >= 4096 else 8 if block >= 2048 else 4
