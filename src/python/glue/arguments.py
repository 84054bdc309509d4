"""C++ arguments as the Python objects heuristics and hooks see: torch dtypes, raw device
pointers and tensor descriptors."""

import sys

_TORCH_DTYPES = {
    "u1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2", "fp8e4b8": "float8_e4m3fnuz",
    "fp8e5b16": "float8_e5m2fnuz", "fp16": "float16", "bf16": "bfloat16",
    "fp32": "float32", "fp64": "float64",
}


class _NamedDtype:
    """A dtype that prints as torch's (for processes without torch): Triton reads str(dtype)."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name

    __repr__ = __str__

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return str(other) == str(self)


def torch_dtype(triton_name):
    """The torch dtype a tensor of Triton element type `triton_name` has."""
    name = _TORCH_DTYPES.get(triton_name, triton_name)
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            return _NamedDtype(name)
    return getattr(torch, name, None) or _NamedDtype(name)


class DevicePointer:
    """A raw device pointer passed from C++: what Triton's launcher needs of a tensor (its
    address and dtype). It carries no shape, strides or storage."""

    __slots__ = ("_address", "dtype", "_param")

    def __init__(self, address, dtype, param):
        self._address = address
        self.dtype = dtype
        self._param = param

    def data_ptr(self):
        return self._address

    def element_size(self):
        return int(getattr(self.dtype, "itemsize", 0)) or _itemsize(str(self.dtype))

    def __getattr__(self, attr):
        raise RawPointerAttribute(
            "argument '%s' is a raw device pointer from C++, which has no attribute '%s' (it has "
            "data_ptr(), dtype and element_size()); pass an at::Tensor through the torch layer "
            "(triton_embed::launch) for what needs a tensor" % (self._param, attr)
        )


def _itemsize(dtype_str):
    name = dtype_str.split(".")[-1]
    for bits in ("64", "32", "16", "8"):
        if name.endswith(bits) or ("float" + bits) in name or ("int" + bits) in name:
            return int(bits) // 8
    return 1


def make_descriptor(address, dtype_name, shape, strides, block_shape, padding, round_f32_to_tf32):
    """A triton.tools.tensor_descriptor.TensorDescriptor for a C++ one (checked there): its
    base a DevicePointer, so hooks and heuristics see what Python code would."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    d = object.__new__(TensorDescriptor)
    d.base = DevicePointer(address, torch_dtype(dtype_name), "base")
    d.shape = list(shape)
    d.strides = list(strides)
    d.block_shape = list(block_shape)
    d.padding = padding
    if "round_f32_to_tf32" in TensorDescriptor.__dataclass_fields__:
        d.round_f32_to_tf32 = round_f32_to_tf32
    return d


class RawPointerAttribute(AttributeError):
    """A heuristic or hook asked a raw pointer for what only a tensor has."""
