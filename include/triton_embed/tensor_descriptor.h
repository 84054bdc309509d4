#pragma once

/*! \file
 *  \brief Host-side tensor descriptors (TMA): the C++ form of Triton's
 *  \c triton.tools.tensor_descriptor.TensorDescriptor.
 *
 *  A kernel parameter that Python would give a \c TensorDescriptor takes a
 *  \c triton_embed::TensorDescriptor. It is specialised as Triton's binder specialises the
 *  Python one (\c tensordesc<fp16[64, 64]>: element type and block shape; shape, strides and
 *  padding are run-time values) and packed as Triton's launcher packs it: on targets where
 *  Triton lowers the descriptor to TMA, a \c CUtensorMap encoded with
 *  \c cuTensorMapEncodeTiled (cached in the descriptor: re-encoded only when its base, shape,
 *  strides, block shape, padding or the kernel's layout change) followed by the shape and the
 *  strides; elsewhere the base pointer, shape, strides and flags Triton passes instead.
 *  \code
 *  #include <triton_embed/jit.h>
 *  triton_embed::TensorDescriptor a(a_ptr, triton_embed::DType::fp16, {M, K}, {K, 1}, {128, 64});
 *  triton_embed::TensorDescriptor b(b_ptr, triton_embed::DType::fp16, {K, N}, {N, 1}, {64, 128});
 *  triton_embed::TensorDescriptor c(c_ptr, triton_embed::DType::fp16, {M, N}, {N, 1}, {128, 128});
 *  matmul.launch({num_sms}, stream, a, b, c, M, N, K, 128, 128, 64, num_sms);
 *  \endcode
 */

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "triton_embed/args.h"
#include "triton_embed/detail/export.h"
#include "triton_embed/dtype.h"

namespace triton_embed {

/*! \brief What a TMA load reads outside the tensor: zeros (Triton's \c padding="zero") or
 *  NaN (\c padding="nan", floating-point element types only). */
enum class Padding : uint8_t { kZero = 0, kNan = 1 };

namespace detail {

template <class T>
inline constexpr bool dependent_false_desc = false;

struct TensorDescriptorAccess;  // what the launch path reads and caches (src/core/tensor_map.h)

/*! How a tensor type becomes a descriptor (specialised by the torch layer for at::Tensor). */
template <class Tensor>
struct TensorDescriptorSource {
  static_assert(dependent_false_desc<Tensor>,
                "triton_embed: TensorDescriptor::from_tensor takes an at::Tensor; include "
                "<triton_embed/torch.h> (target triton_embed::torch)");
};

}  // namespace detail

/*! \brief A host-side tensor descriptor: a device tensor (base address, element type, shape,
 *  strides in elements) and the block a TMA load or store moves, as Triton's
 *  \c TensorDescriptor(base, shape, strides, block_shape, padding, round_f32_to_tf32).
 *
 *  Rank 1 to 5; the constructor and the setters throw \c ValueError when the lists' lengths
 *  differ or the rank is outside 1..5. Triton's own rules (16-byte aligned base, strides other
 *  than the last multiples of 16 bytes, last stride 1, positive shape, block dimensions powers
 *  of two with at most 2^20 elements in all, NaN padding only for floating-point types,
 *  \c round_f32_to_tf32 only for fp32 and Triton 3.8) are checked at launch, with the kernel
 *  and the argument named, as the block shape may change after creation (what an autotune
 *  pre-hook does in Python).
 *  \code
 *  namespace te = triton_embed;
 *  te::TensorDescriptor d(ptr, te::DType::bf16, {1024, 512}, {512, 1}, {64, 64});
 *  d.set_block_shape({128, 64});  // a new specialisation: compiles once, then cached
 *  \endcode
 */
class TRITON_EMBED_API TensorDescriptor {
 public:
  static constexpr int kMaxRank = 5;
  using Dims = std::initializer_list<int64_t>;

  TensorDescriptor(uint64_t base, DType dtype, Dims shape, Dims strides, Dims block_shape,
                   Padding padding = Padding::kZero, bool round_f32_to_tf32 = false);
  TensorDescriptor(const volatile void* base, DType dtype, Dims shape, Dims strides,
                   Dims block_shape, Padding padding = Padding::kZero,
                   bool round_f32_to_tf32 = false)
      : TensorDescriptor(reinterpret_cast<uintptr_t>(base), dtype, shape, strides, block_shape,
                         padding, round_f32_to_tf32) {}
  /*! \brief From arrays of \p rank values each. */
  TensorDescriptor(uint64_t base, DType dtype, int rank, const int64_t* shape,
                   const int64_t* strides, const int64_t* block_shape,
                   Padding padding = Padding::kZero, bool round_f32_to_tf32 = false);

  /*! \brief A descriptor of the whole tensor \p t (its data pointer, dtype, sizes and
   *  strides), as Triton's \c TensorDescriptor.from_tensor. Needs <triton_embed/torch.h>.
   *  A descriptor of a CPU tensor is refused by a GPU launch (ValueError).
   *  \code
   *  auto d = triton_embed::TensorDescriptor::from_tensor(x, {64, 64});
   *  \endcode */
  template <class Tensor>
  static TensorDescriptor from_tensor(const Tensor& t, Dims block_shape,
                                      Padding padding = Padding::kZero,
                                      bool round_f32_to_tf32 = false) {
    return detail::TensorDescriptorSource<Tensor>::make(t, block_shape, padding, round_f32_to_tf32);
  }

  /*! \brief Copies the fields; the copy encodes its own \c CUtensorMap when first launched. */
  TensorDescriptor(const TensorDescriptor& o);
  TensorDescriptor& operator=(const TensorDescriptor& o);

  uint64_t base() const noexcept { return base_; }
  DType dtype() const noexcept { return dtype_; }
  int rank() const noexcept { return rank_; }
  const int64_t* shape() const noexcept { return shape_; }
  const int64_t* strides() const noexcept { return strides_; }
  const int64_t* block_shape() const noexcept { return block_; }
  Padding padding() const noexcept { return padding_; }
  bool round_f32_to_tf32() const noexcept { return tf32_; }

  void set_base(uint64_t base) noexcept {
    base_ = base;
    ++version_;
  }
  void set_base(const volatile void* base) noexcept { set_base(reinterpret_cast<uintptr_t>(base)); }
  /*! \brief Replaces the shape and strides (same rank). */
  void set_shape(Dims shape, Dims strides);
  /*! \brief Replaces the block shape (same rank), as Python's autotune pre-hooks do. */
  void set_block_shape(Dims block_shape);
  void set_padding(Padding p) noexcept {
    padding_ = p;
    ++version_;
  }
  void set_round_f32_to_tf32(bool v) noexcept {
    tf32_ = v;
    ++version_;
  }

 private:
  friend struct detail::TensorDescriptorAccess;
  friend struct ArgTraits<TensorDescriptor>;
  template <class Tensor>
  friend struct detail::TensorDescriptorSource;

  //! Bytes of the cache a launch keeps in the descriptor: the encoded \c CUtensorMap, what
  //! it was encoded from, and the version whose fields passed Triton's checks. Its type is
  //! the launch path's (src/core/tensor_map.h), which checks that it fits.
  static constexpr size_t kCacheBytes = 384;

  //! Changes with every change of the fields (what a launch's checks and cached encoding of
  //! this descriptor are keyed on).
  uint64_t version() const noexcept { return version_; }
  //! ArgValue flags: \c kArgFromTensor, \c kArgHostMemory (a descriptor of a CPU tensor).
  uint8_t arg_flags() const noexcept { return flags_; }
  void set_arg_flags(uint8_t f) noexcept { flags_ = f; }
  void init(int rank, const int64_t* shape, const int64_t* strides, const int64_t* block);

  uint64_t base_ = 0;
  DType dtype_ = DType::invalid;
  uint8_t rank_ = 0;
  Padding padding_ = Padding::kZero;
  bool tf32_ = false;
  uint8_t flags_ = 0;
  int64_t shape_[kMaxRank] = {};
  int64_t strides_[kMaxRank] = {};
  int64_t block_[kMaxRank] = {};
  uint64_t version_ = 0;
  alignas(64) mutable unsigned char cache_[kCacheBytes];  // constructed by the constructors
};

/*! \brief A \c TensorDescriptor argument: Triton's \c tensordesc type. The descriptor must
 *  outlive the launch call (the launch reads and caches its encoding). */
template <>
struct ArgTraits<TensorDescriptor> {
  static constexpr size_t kNested = 0;
  static void fill(const TensorDescriptor& d, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kTensorDesc;
    out.dtype = d.dtype();
    out.flags = d.arg_flags();
    out.ptr = &d;
  }
};

}  // namespace triton_embed
