#include "core/tensor_map.h"

#include <atomic>
#include <cstring>
#include <limits>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/triton_versions.h"
#include "cuda/driver.h"

namespace triton_embed {

// ---- TensorDescriptor -------------------------------------------------------------------

namespace {

constexpr int64_t kMaxBlockNumel = int64_t{1} << 20;  // Triton's TRITON_MAX_TENSOR_NUMEL

void check_lists(size_t shape, size_t strides, size_t block) {
  TE_CHECK(shape >= 1 && shape <= TensorDescriptor::kMaxRank, ValueError)
      << "TensorDescriptor: the rank must be 1 to 5, got a shape of " << shape << " dimensions";
  TE_CHECK(strides == shape && block == shape, ValueError)
      << "TensorDescriptor: shape, strides and block_shape must have the same length, got " << shape
      << ", " << strides << " and " << block;
}

}  // namespace

TensorDescriptor::TensorDescriptor(uint64_t base, DType dtype, Dims shape, Dims strides,
                                   Dims block_shape, Padding padding, bool round_f32_to_tf32)
    : base_(base), dtype_(dtype), padding_(padding), tf32_(round_f32_to_tf32) {
  detail::TensorDescriptorAccess::init_cache(*this);
  check_lists(shape.size(), strides.size(), block_shape.size());
  init(static_cast<int>(shape.size()), shape.begin(), strides.begin(), block_shape.begin());
}

TensorDescriptor::TensorDescriptor(uint64_t base, DType dtype, int rank, const int64_t* shape,
                                   const int64_t* strides, const int64_t* block_shape,
                                   Padding padding, bool round_f32_to_tf32)
    : base_(base), dtype_(dtype), padding_(padding), tf32_(round_f32_to_tf32) {
  detail::TensorDescriptorAccess::init_cache(*this);
  check_lists(rank < 0 ? 0 : static_cast<size_t>(rank), static_cast<size_t>(rank),
              static_cast<size_t>(rank));
  init(rank, shape, strides, block_shape);
}

TensorDescriptor::TensorDescriptor(const TensorDescriptor& o)
    : base_(o.base_),
      dtype_(o.dtype_),
      rank_(o.rank_),
      padding_(o.padding_),
      tf32_(o.tf32_),
      flags_(o.flags_) {
  detail::TensorDescriptorAccess::init_cache(*this);  // its own encoding, made when first launched
  std::memcpy(shape_, o.shape_, sizeof(shape_));
  std::memcpy(strides_, o.strides_, sizeof(strides_));
  std::memcpy(block_, o.block_, sizeof(block_));
}

TensorDescriptor& TensorDescriptor::operator=(const TensorDescriptor& o) {
  if (this == &o) return *this;
  base_ = o.base_;
  dtype_ = o.dtype_;
  rank_ = o.rank_;
  padding_ = o.padding_;
  tf32_ = o.tf32_;
  flags_ = o.flags_;
  std::memcpy(shape_, o.shape_, sizeof(shape_));
  std::memcpy(strides_, o.strides_, sizeof(strides_));
  std::memcpy(block_, o.block_, sizeof(block_));
  ++version_;  // new fields: checked and encoded again at the next launch
  return *this;
}

void TensorDescriptor::init(int rank, const int64_t* shape, const int64_t* strides,
                            const int64_t* block) {
  rank_ = static_cast<uint8_t>(rank);
  for (int i = 0; i < rank; ++i) {
    shape_[i] = shape[i];
    strides_[i] = strides[i];
    block_[i] = block[i];
  }
}

void TensorDescriptor::set_shape(Dims shape, Dims strides) {
  TE_CHECK(shape.size() == rank_ && strides.size() == rank_, ValueError)
      << "TensorDescriptor::set_shape: the descriptor has rank " << int(rank_) << ", got "
      << shape.size() << " sizes and " << strides.size() << " strides";
  std::copy(shape.begin(), shape.end(), shape_);
  std::copy(strides.begin(), strides.end(), strides_);
  ++version_;
}

void TensorDescriptor::set_block_shape(Dims block_shape) {
  TE_CHECK(block_shape.size() == rank_, ValueError)
      << "TensorDescriptor::set_block_shape: the descriptor has rank " << int(rank_) << ", got "
      << block_shape.size() << " block dimensions";
  std::copy(block_shape.begin(), block_shape.end(), block_);
  ++version_;
}

namespace detail {

namespace {

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

int log2_of(int64_t v) {
  int n = 0;
  while ((int64_t{1} << n) < v) ++n;
  return n;
}

std::string dims_str(const int64_t* v, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Triton's device-side TMA element types differ from the driver's in three places
// (TMA_DTYPE_DEVICE_TO_HOST in Triton's driver.py); 11 is TF32.
int host_tma_type(int device_type) {
  switch (device_type) {
    case 8:
      return 10;
    case 9:
      return 8;
    case 10:
      return 9;
    default:
      return device_type;
  }
}
constexpr int kTmaTf32 = 11;

// Triton's rules for a descriptor (TensorDescriptor.__post_init__ and the block shape's);
// returns the specialisation word: rank, and log2 of each block dimension.
uint32_t check_fields(const KernelState& k, uint32_t param, const TensorDescriptor& d);

}  // namespace

uint32_t check_descriptor(const KernelState& k, uint32_t param, const TensorDescriptor& d) {
  // Fields that passed before (same version) pass again: the rules depend on the descriptor
  // and the installed Triton only.
  TensorMapCache& c = TensorDescriptorAccess::cache(d);
  const uint64_t version = TensorDescriptorAccess::version(d);
  if (c.checked_version.load(std::memory_order_acquire) == version) {
    return c.checked_word.load(std::memory_order_relaxed);
  }
  const uint32_t word = check_fields(k, param, d);
  c.checked_word.store(word, std::memory_order_relaxed);
  c.checked_version.store(version, std::memory_order_release);
  return word;
}

namespace {

uint32_t check_fields(const KernelState& k, uint32_t param, const TensorDescriptor& d) {
  const int rank = d.rank();
  const DType t = d.dtype();
  TE_CHECK(t != DType::invalid, TypeError)
      << arg_where(k, param) << ": the tensor descriptor has no element type; pass a DType";
  const int64_t elem = dtype_size(t);
  // TensorDescriptor.__post_init__'s rules, in its order.
  TE_CHECK(d.base() % 16 == 0, ValueError)
      << arg_where(k, param) << ": the tensor descriptor's base address 0x" << std::hex << d.base()
      << std::dec << " is not 16-byte aligned (Triton: base must be 16-byte aligned)";
  int64_t numel = 1;
  uint32_t count = static_cast<uint32_t>(rank);
  for (int i = 0; i < rank; ++i) {
    const int64_t b = d.block_shape()[i];
    TE_CHECK(is_power_of_two(b), ValueError)
        << arg_where(k, param) << ": block_shape " << dims_str(d.block_shape(), rank)
        << ": element " << i << " (" << b << ") is not a power of 2";
    numel *= b;
    TE_CHECK(numel <= kMaxBlockNumel, ValueError)
        << arg_where(k, param) << ": block_shape " << dims_str(d.block_shape(), rank)
        << " has more than " << kMaxBlockNumel << " elements (Triton's maximum tensor numel)";
    count |= static_cast<uint32_t>(log2_of(b)) << (3 + 5 * i);
  }
  for (int i = 0; i + 1 < rank; ++i) {
    const int64_t s = d.strides()[i];
    TE_CHECK((s * elem) % 16 == 0, ValueError)
        << arg_where(k, param) << ": strides " << dims_str(d.strides(), rank) << ": stride " << i
        << " (" << s << " elements of " << elem
        << " bytes) is not a multiple of 16 bytes (Triton: strides must be 16-byte aligned)";
  }
  for (int i = 0; i < rank; ++i) {
    TE_CHECK(d.shape()[i] > 0, ValueError)
        << arg_where(k, param) << ": shape " << dims_str(d.shape(), rank) << ": dimension " << i
        << " is not positive (Triton: shape must be positive)";
    TE_CHECK(d.shape()[i] <= std::numeric_limits<int32_t>::max(), OverflowError)
        << arg_where(k, param) << ": shape " << dims_str(d.shape(), rank) << ": dimension " << i
        << " does not fit the i32 Triton passes it as";
  }
  TE_CHECK(d.strides()[rank - 1] == 1, ValueError)
      << arg_where(k, param) << ": strides " << dims_str(d.strides(), rank)
      << ": the last stride must be 1 (Triton: last dimension must be contiguous)";
  TE_CHECK(d.padding() == Padding::kZero || dtype_is_float(t), ValueError)
      << arg_where(k, param) << ": NaN padding needs a floating-point element type, got "
      << dtype_name(t);
  if (d.round_f32_to_tf32()) {
    TE_CHECK(triton_versions::descriptor_round_f32_to_tf32(k.triton_version), NotSupportedError)
        << arg_where(k, param)
        << ": round_f32_to_tf32 needs Triton 3.7 or newer (installed: " << k.triton_version / 100
        << "." << k.triton_version % 100 << ")";
    TE_CHECK(t == DType::fp32, ValueError)
        << arg_where(k, param) << ": round_f32_to_tf32 needs an fp32 tensor, got " << dtype_name(t);
  }
  return count;
}

}  // namespace

std::string descriptor_type_name(DType dtype, uint32_t count) {
  const int rank = static_cast<int>(count & 7u);
  std::string s = "tensordesc<" + std::string(dtype_name(dtype)) + "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(int64_t{1} << ((count >> (3 + 5 * i)) & 31u));
  }
  return s + "]>";
}

uint32_t descriptor_param_count(const TmaMeta& meta, int rank, int triton_version) {
  const uint32_t r = static_cast<uint32_t>(rank);
  if (meta.present) return 1 + 2 * r;
  return 1 + 2 * r + triton_versions::descriptor_flag_params(triton_version) + 2 * r;
}

namespace {

// The encoding's inputs as fixed words, compared with what the cached map was made from.
void encode_inputs(const TensorDescriptor& d, const TmaMeta& m, uint64_t* in) {
  std::memset(in, 0, TensorMapCache::kInputWords * sizeof(uint64_t));
  const int rank = d.rank();
  in[0] = d.base();
  in[1] = static_cast<uint64_t>(m.elem_type) | static_cast<uint64_t>(m.swizzle) << 16 |
          static_cast<uint64_t>(m.elem_size) << 32 | static_cast<uint64_t>(rank) << 48 |
          static_cast<uint64_t>(m.fp4_padded) << 56;
  in[2] = static_cast<uint64_t>(d.padding()) | static_cast<uint64_t>(d.round_f32_to_tf32()) << 8;
  for (int i = 0; i < rank; ++i) {
    in[3 + i] = d.shape()[i];
    in[8 + i] = d.strides()[i];
    in[13 + i] = m.box[i];
  }
}

// Out of line: a cache miss's work (and its frame) stays off the packing of a current map.
__attribute__((noinline)) void encode(const KernelState& k, uint32_t param,
                                      const TensorDescriptor& d, const TmaMeta& m,
                                      unsigned char* out) {
  // fill_tma_descriptor(_tiled) of Triton's driver.c: dimensions innermost first, strides in
  // bytes (rank - 1 of them), the box from the kernel's metadata, element strides 1, no
  // interleave, the kernel's swizzle, 128-byte L2 promotion, NaN fill for padding="nan".
  const int rank = d.rank();
  const int data_type = host_tma_type(d.round_f32_to_tf32() ? kTmaTf32 : m.elem_type);
  cuuint64_t dims[TensorDescriptor::kMaxRank] = {}, strides[TensorDescriptor::kMaxRank] = {};
  cuuint32_t box[TensorDescriptor::kMaxRank] = {}, element_strides[TensorDescriptor::kMaxRank] = {};
  for (int i = 0; i < rank; ++i) {
    int64_t dim = d.shape()[i];
    if (m.fp4_padded && i == rank - 1) dim *= 2;
    dims[rank - 1 - i] = static_cast<cuuint64_t>(dim);
    box[rank - 1 - i] = m.box[i];
    element_strides[i] = 1;
  }
  for (int i = 0; i + 1 < rank; ++i) {
    strides[rank - 2 - i] = static_cast<cuuint64_t>(m.elem_size * d.strides()[i]);
  }
  // Encoding is a host call of the driver library: it needs the library, not a device (dry
  // runs encode for a compile-only target). Without the library, or where the call fails on
  // a machine with no usable device, the missing device is the error to report.
  const cuda::Api& api = cuda::api();
  if (api.cuTensorMapEncodeTiled == nullptr) cuda::require_api();
  TE_CHECK(api.cuTensorMapEncodeTiled != nullptr, NotSupportedError)
      << arg_where(k, param) << ": the CUDA driver has no cuTensorMapEncodeTiled (a CUDA 12 "
      << "driver or newer is needed for tensor descriptors)";
  const CUresult r = api.cuTensorMapEncodeTiled(
      reinterpret_cast<CUtensorMap*>(out), static_cast<CUtensorMapDataType>(data_type),
      static_cast<cuuint32_t>(rank), reinterpret_cast<void*>(static_cast<uintptr_t>(d.base())),
      dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      static_cast<CUtensorMapSwizzle>(m.swizzle), CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      d.padding() == Padding::kNan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                   : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    if (!api.ok) cuda::require_api();
    cuda::throw_error(r, "cuTensorMapEncodeTiled",
                      arg_where(k, param) + ": encoding the tensor map of a " +
                          std::string(dtype_name(d.dtype())) + " descriptor (shape " +
                          dims_str(d.shape(), rank) + ", strides " + dims_str(d.strides(), rank) +
                          ", block " + dims_str(d.block_shape(), rank) + ", element type " +
                          std::to_string(data_type) + ", swizzle " + std::to_string(m.swizzle) +
                          ")");
  }
}

// The map for d into out: the descriptor's cached one when its inputs are unchanged, else a
// new encoding that replaces it. Launches on several threads may share the descriptor.
void tensor_map(const KernelState& k, uint32_t param, const TensorDescriptor& d, const TmaMeta& m,
                unsigned char* out) {
  TensorMapCache& c = TensorDescriptorAccess::cache(d);
  while (c.busy.exchange(true, std::memory_order_acquire)) {
  }
  struct Release {
    std::atomic<bool>& b;
    ~Release() { b.store(false, std::memory_order_release); }
  } release{c.busy};
  // The same fields (version) for the same kernel layout as last time: the map is current.
  // Otherwise compare what the encoding reads, and encode only when that changed.
  if (!c.valid || c.layout != &m || c.version != TensorDescriptorAccess::version(d)) {
    uint64_t in[TensorMapCache::kInputWords];
    encode_inputs(d, m, in);
    if (!c.valid || std::memcmp(c.input, in, sizeof(in)) != 0) {
      c.valid = false;
      encode(k, param, d, m, c.map);
      std::memcpy(c.input, in, sizeof(in));
      c.valid = true;
    }
    c.layout = &m;
    c.version = TensorDescriptorAccess::version(d);
  }
  std::memcpy(out, c.map, sizeof(c.map));
}

}  // namespace

uint32_t pack_descriptor(const KernelState& k, uint32_t param, const TensorDescriptor& d,
                         const TmaMeta& meta, int triton_version, uint64_t* slots, void** params,
                         TensorMapStorage* map) {
  const int rank = d.rank();
  uint32_t n = 0;
  if (meta.present) {
    TE_CHECK(meta.rank == rank, Error)
        << "triton_embed internal error: " << arg_where(k, param) << ": the kernel's descriptor "
        << "has rank " << meta.rank << ", the argument " << rank;
    tensor_map(k, param, d, meta, map->bytes);
    std::memcpy(&slots[n], map->bytes, sizeof(uint64_t));  // for dry runs: the first 8 bytes
    params[n++] = map->bytes;
  } else {
    // Triton's decompose_descriptor: base, shape, strides, padding == "nan",
    // (3.7: round_f32_to_tf32), then the shape and strides once more.
    slots[n] = d.base();
    params[n] = &slots[n];
    ++n;
    for (int i = 0; i < rank; ++i, ++n) {
      slots[n] = static_cast<uint64_t>(d.shape()[i]);
      params[n] = &slots[n];
    }
    for (int i = 0; i < rank; ++i, ++n) {
      slots[n] = static_cast<uint64_t>(d.strides()[i]);
      params[n] = &slots[n];
    }
    slots[n] = d.padding() == Padding::kNan ? 1 : 0;
    params[n] = &slots[n];
    ++n;
    if (triton_versions::descriptor_round_f32_to_tf32(triton_version)) {
      slots[n] = d.round_f32_to_tf32() ? 1 : 0;
      params[n] = &slots[n];
      ++n;
    }
  }
  // The shape (i32) and strides (i64) Triton appends; 3.6 appends the fp4-doubled shape.
  const bool doubled = triton_versions::fp4_padded_shape_doubled(triton_version);
  for (int i = 0; i < rank; ++i, ++n) {
    int64_t dim = d.shape()[i];
    if (meta.present && meta.fp4_padded && doubled && i == rank - 1) dim *= 2;
    slots[n] = static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(dim)));
    params[n] = &slots[n];
  }
  for (int i = 0; i < rank; ++i, ++n) {
    slots[n] = static_cast<uint64_t>(d.strides()[i]);
    params[n] = &slots[n];
  }
  return n;
}

uint32_t expand_descriptors(const KernelState& k, const Entry& e, const DescSlots& d,
                            const uint64_t* in, uint32_t n_in, uint64_t* slots, void** params,
                            TensorMapStorage* maps) {
  uint32_t np = 0, from = 0;
  auto copy_to = [&](uint32_t end) {
    for (; from < end; ++from, ++np) {
      slots[np] = in[from];
      params[np] = &slots[np];
    }
  };
  for (uint32_t i = 0; i < d.n; ++i) {
    copy_to(d.at[i]);
    np += pack_descriptor(k, d.param[i], *d.desc[i], e.tma[i], e.triton_version, slots + np,
                          params + np, &maps[i]);
  }
  copy_to(n_in);
  return np;
}

}  // namespace detail
}  // namespace triton_embed
