"""torch.compile(fullgraph=True) traces the ops without graph breaks, forward and backward."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_matches, make

ops = torch.ops.triton_embed


def block(x, w, b):
    h = ops.layer_norm(ops.add(x, x, alpha=0.5), [x.shape[-1]], w, b)
    h = ops.rms_norm(ops.mul(h, h), [x.shape[-1]], w)
    return ops.sum(ops.softmax(h), -1)


def reference(x, w, b):
    h = F.layer_norm(x + 0.5 * x, (x.shape[-1],), w, b)
    h = F.rms_norm(h * h, (x.shape[-1],), w)
    return torch.softmax(h, -1).sum(-1)


@pytest.mark.parametrize("dynamic", [False, True])
def test_fullgraph(device, dynamic):
    torch._dynamo.reset()
    backends = ["aot_eager"] + (["inductor"] if device == "cuda" else [])
    for backend in backends:
        x = make((6, 40), torch.float32, device).requires_grad_()
        w = make((40,), torch.float32, device, seed=1).requires_grad_()
        b = make((40,), torch.float32, device, seed=2).requires_grad_()
        compiled = torch.compile(block, backend=backend, fullgraph=True, dynamic=dynamic)
        got = compiled(x, w, b)
        expected = reference(x, w, b)
        assert_matches(got, expected)
        grads = torch.autograd.grad(got.sum(), (x, w, b))
        ref = torch.autograd.grad(expected.sum(), (x, w, b))
        for a, e in zip(grads, ref):
            torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-4)
