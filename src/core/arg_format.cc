#include "core/arg_format.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "triton_embed/dtype.h"

namespace triton_embed {

namespace {
struct DTypeNames {
  DType type;
  const char* sig;  // Triton signature name
  const char* tl;   // triton.language attribute
};
constexpr DTypeNames kDTypeNames[] = {
    {DType::u1, "u1", "int1"},
    {DType::i8, "i8", "int8"},
    {DType::i16, "i16", "int16"},
    {DType::i32, "i32", "int32"},
    {DType::i64, "i64", "int64"},
    {DType::u8, "u8", "uint8"},
    {DType::u16, "u16", "uint16"},
    {DType::u32, "u32", "uint32"},
    {DType::u64, "u64", "uint64"},
    {DType::fp8e4nv, "fp8e4nv", "float8e4nv"},
    {DType::fp8e5, "fp8e5", "float8e5"},
    {DType::fp8e4b15, "fp8e4b15", "float8e4b15"},
    {DType::fp8e4b8, "fp8e4b8", "float8e4b8"},
    {DType::fp8e5b16, "fp8e5b16", "float8e5b16"},
    {DType::fp16, "fp16", "float16"},
    {DType::bf16, "bf16", "bfloat16"},
    {DType::fp32, "fp32", "float32"},
    {DType::fp64, "fp64", "float64"},
};
// Other spellings Triton canonicalises (triton._utils.type_canonicalisation_dict).
struct Alias {
  const char* name;
  DType type;
};
constexpr Alias kAliases[] = {
    {"bool", DType::u1},
    {"int1", DType::u1},
    {"uint1", DType::u1},
    {"i1", DType::u1},
    {"float8e4nv", DType::fp8e4nv},
    {"float8e5", DType::fp8e5},
    {"float8e4b15", DType::fp8e4b15},
    {"float8_e4m3fn", DType::fp8e4nv},
    {"float8e4b8", DType::fp8e4b8},
    {"float8_e4m3fnuz", DType::fp8e4b8},
    {"float8_e5m2", DType::fp8e5},
    {"float8e5b16", DType::fp8e5b16},
    {"float8_e5m2fnuz", DType::fp8e5b16},
    {"half", DType::fp16},
    {"float16", DType::fp16},
    {"bfloat16", DType::bf16},
    {"float", DType::fp32},
    {"float32", DType::fp32},
    {"double", DType::fp64},
    {"float64", DType::fp64},
    {"int8", DType::i8},
    {"int16", DType::i16},
    {"int", DType::i32},
    {"int32", DType::i32},
    {"int64", DType::i64},
    {"uint8", DType::u8},
    {"uint16", DType::u16},
    {"uint32", DType::u32},
    {"uint64", DType::u64},
};
}  // namespace

std::string_view dtype_name(DType t) noexcept {
  for (const auto& n : kDTypeNames) {
    if (n.type == t) return n.sig;
  }
  return "invalid";
}

std::string_view dtype_tl_name(DType t) noexcept {
  for (const auto& n : kDTypeNames) {
    if (n.type == t) return n.tl;
  }
  return "invalid";
}

DType dtype_from_name(std::string_view name) noexcept {
  // torch.float32 / tl.float32 / triton.language.float32 spell the same type.
  const size_t dot = name.rfind('.');
  if (dot != std::string_view::npos) name = name.substr(dot + 1);
  for (const auto& n : kDTypeNames) {
    if (name == n.sig) return n.type;
  }
  for (const auto& a : kAliases) {
    if (name == a.name) return a.type;
  }
  return DType::invalid;
}

namespace detail {

std::string describe_value(const ArgValue& v) {
  std::ostringstream os;
  switch (v.kind) {
    case ArgKind::kNone:
      return "None";
    case ArgKind::kBool:
      return v.i ? "a bool (true)" : "a bool (false)";
    case ArgKind::kInt:
      if (v.big) {
        os << "an integer (" << v.u << ")";
      } else {
        os << "an integer (" << v.i << ")";
      }
      return os.str();
    case ArgKind::kFloat:
      os << "a float (" << v.f << ")";
      return os.str();
    case ArgKind::kPointer:
      os << "a pointer to " << dtype_name(v.dtype);
      return os.str();
    case ArgKind::kStr:
      os << "a string '" << std::string_view(v.s, v.count) << "'";
      return os.str();
    case ArgKind::kDType:
      os << "a dtype (" << dtype_name(v.dtype) << ")";
      return os.str();
    case ArgKind::kScalar:
      os << "a " << dtype_name(v.dtype) << " scalar (";
      if (dtype_is_float(v.dtype)) {
        os << v.f;
      } else if (v.big) {
        os << v.u;
      } else {
        os << v.i;
      }
      os << ")";
      return os.str();
    case ArgKind::kConstexpr:
      return "tl.constexpr(" + describe_value(*v.elems) + ")";
    case ArgKind::kTuple:
      os << "a tuple of " << v.count << " values";
      return os.str();
    case ArgKind::kJitFunction:
      return "a JitFunction";
    case ArgKind::kPyObject:
      return "a Python object";
    case ArgKind::kTensorDesc:
      os << "a tensor descriptor of " << dtype_name(v.dtype);
      return os.str();
  }
  return "an unknown value";
}

std::string full_name(const KernelState& kernel) { return kernel.module + "." + kernel.name; }

std::vector<std::string> param_names(const KernelState& kernel) {
  std::vector<std::string> names;
  for (const auto& p : kernel.params) names.push_back(p.name);
  return names;
}

std::string call_signature(const KernelState& kernel) {
  std::string s = kernel.name + "(";
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    if (i) s += ", ";
    s += kernel.params[i].name;
  }
  return s + ")";
}

std::string specialized_signature(const KernelState& kernel, const LeafList& leaves) {
  std::string s = kernel.name + "(";
  uint32_t param = UINT32_MAX;
  bool open = true;  // no element written yet since the last '(' (no ", " before the next)
  for (uint32_t i = 0; i < leaves.n; ++i) {
    const Leaf& leaf = leaves.leaves[i];
    if (leaf.param != param) {
      if (param != UINT32_MAX) s += ", ";
      param = leaf.param;
      s += (param < kernel.params.size() ? kernel.params[param].name : "?") + ": ";
      open = true;
    }
    if (leaf.kind == LeafKind::kTupleEnd) {
      s += ")";
      open = false;
      continue;
    }
    if (!open) s += ", ";
    s += leaf_type_name(leaf);
    open = leaf.kind == LeafKind::kTupleBegin;
    if (leaf.kind == LeafKind::kConstexpr && leaf.value != nullptr) {
      s += leaf.value->kind == ArgKind::kInt && !leaf.value->big
               ? " = " + std::to_string(leaf.value->i)
               : " (" + describe_value(*leaf.value) + ")";
    } else if (leaf.key == SpecKey::kDiv16) {
      s += " D";
    }
  }
  return s + ")";
}

std::string arg_where(const KernelState& kernel, size_t index) {
  std::string s = call_signature(kernel);
  s += ": argument #" + std::to_string(index);
  if (index < kernel.params.size()) s += " '" + kernel.params[index].name + "'";
  return s;
}

}  // namespace detail
}  // namespace triton_embed
