"""add and mul against torch: dtypes x shapes, broadcasting, promotion, strides, out=."""

import pytest
import torch
from conftest import ALL_DTYPES, assert_matches, make

ops = torch.ops.triton_embed

SHAPES = [
    ((), ()),
    ((1,), (1,)),
    ((0,), (0,)),
    ((7,), (7,)),
    ((33, 65), (33, 65)),
    ((4, 1, 5), (3, 1)),  # broadcast both ways
    ((2, 3, 4, 5, 6), (6,)),  # rank 5, broadcast
    ((0, 3), (1, 3)),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("name", ["add", "mul"])
def test_same_dtype(name, shapes, dtype, device):
    a = make(shapes[0], dtype, device, seed=1)
    b = make(shapes[1], dtype, device, seed=2)
    got = getattr(ops, name)(a, b)
    assert_matches(got, getattr(torch, name)(a, b))


@pytest.mark.parametrize(
    "da,db",
    [
        (torch.int32, torch.float16),
        (torch.uint8, torch.int8),
        (torch.bool, torch.int64),
        (torch.bfloat16, torch.float16),
        (torch.float32, torch.float64),
        (torch.int64, torch.bfloat16),
    ],
    ids=str,
)
@pytest.mark.parametrize("name", ["add", "mul"])
def test_type_promotion(name, da, db, device):
    a = make((5, 6), da, device, seed=3)
    b = make((5, 6), db, device, seed=4)
    expected = getattr(torch, name)(a, b)
    got = getattr(ops, name)(a, b)
    assert got.dtype == expected.dtype
    assert_matches(got, expected)


@pytest.mark.parametrize("name", ["add", "mul"])
def test_zero_dim_tensor_promotes_as_scalar(name, device):
    a = make((4, 3), torch.float16, device)
    b = torch.tensor(2.5, dtype=torch.float64, device=device)
    got = getattr(ops, name)(a, b)
    assert got.dtype == torch.float16
    assert_matches(got, getattr(torch, name)(a, b))
    # a CPU 0-dim tensor is accepted beside a tensor on any device, as in torch
    c = torch.tensor(3, dtype=torch.int64)
    assert_matches(getattr(ops, name)(a, c), getattr(torch, name)(a, c))


@pytest.mark.parametrize("name", ["add", "mul"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16], ids=str)
def test_non_contiguous(name, dtype, device):
    base = make((12, 10), dtype, device, seed=5)
    a = base.t()  # transposed
    b = make((10, 24), dtype, device, seed=6)[:, ::2]  # strided columns
    assert not a.is_contiguous() and not b.is_contiguous()
    assert_matches(getattr(ops, name)(a, b), getattr(torch, name)(a, b))
    c = make((3, 4, 5, 6, 7), dtype, device, seed=7).permute(4, 2, 0, 3, 1)  # rank 5, permuted
    d = make((7, 5, 3, 6, 4), dtype, device, seed=8)
    assert_matches(getattr(ops, name)(c, d), getattr(torch, name)(c, d))


@pytest.mark.parametrize(
    "dtype,alpha",
    [(torch.float32, 2.5), (torch.float64, -0.125), (torch.int32, 3), (torch.bool, True),
     (torch.float16, 1)],
    ids=str,
)
def test_add_alpha(dtype, alpha, device):
    a = make((9, 17), dtype, device, seed=9)
    b = make((17,), dtype, device, seed=10)
    assert_matches(ops.add(a, b, alpha=alpha), torch.add(a, b, alpha=alpha))


def test_large(device):
    n = (1 << 20) + 6  # not a power of two; both strided halves have n / 2
    a = make((n,), torch.float32, device, seed=11)
    b = make((n,), torch.float32, device, seed=12)
    assert_matches(ops.add(a, b), a + b)
    assert_matches(ops.mul(a[::2], b[1::2]), a[::2] * b[1::2])


@pytest.mark.parametrize("name", ["add", "mul"])
def test_out(name, device):
    a = make((6, 5), torch.float32, device, seed=13)
    b = make((5,), torch.float32, device, seed=14)
    expected = getattr(torch, name)(a, b)
    out = torch.empty((6, 5), device=device)
    ptr = out.data_ptr()
    assert getattr(ops, name).out(a, b, out=out) is None  # mutates out, returns nothing
    assert out.data_ptr() == ptr
    assert_matches(out, expected)
    # an empty out is resized
    out = torch.empty(0, device=device)
    getattr(ops, name).out(a, b, out=out)
    assert_matches(out, expected)
    # a non-contiguous out receives the values in its own layout
    out = torch.empty((5, 6), device=device).t()
    getattr(ops, name).out(a, b, out=out)
    assert not out.is_contiguous()
    assert_matches(out, expected)
    # a wider out dtype
    out = torch.empty((6, 5), dtype=torch.float64, device=device)
    getattr(ops, name).out(a, b, out=out)
    assert_matches(out, expected.double(), torch.float32)
    # in place: out aliases self
    x = a.clone()
    getattr(ops, name).out(x, b, out=x)
    assert_matches(x, expected)


@pytest.mark.parametrize("name", ["add", "mul"])
def test_gradients(name, device):
    a = make((4, 1, 5), torch.float32, device, seed=15).requires_grad_()
    b = make((3, 1), torch.float32, device, seed=16).requires_grad_()
    kwargs = {"alpha": 1.5} if name == "add" else {}
    got = getattr(ops, name)(a, b, **kwargs)
    g = make(got.shape, torch.float32, device, seed=17)
    ga, gb = torch.autograd.grad(got, (a, b), g)
    ea, eb = torch.autograd.grad(getattr(torch, name)(a, b, **kwargs), (a, b), g)
    assert_matches(ga, ea)
    assert_matches(gb, eb)


@pytest.mark.parametrize("name", ["add", "mul"])
def test_gradcheck(name, device):
    a = make((3, 4), torch.float64, device, seed=18).requires_grad_()
    b = make((4,), torch.float64, device, seed=19).requires_grad_()
    assert torch.autograd.gradcheck(getattr(ops, name), (a, b))


@pytest.mark.parametrize("name", ["add", "mul"])
def test_opcheck(name, device):
    a = make((4, 3), torch.float32, device, seed=20)
    b = make((3,), torch.float32, device, seed=21)
    op = getattr(ops, name)
    torch.library.opcheck(op.default, (a, b))
    torch.library.opcheck(op.default, (a.requires_grad_(), b))
    torch.library.opcheck(op.out, (a.detach(), b), {"out": torch.empty(4, 3, device=device)})
