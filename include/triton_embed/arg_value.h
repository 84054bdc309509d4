#pragma once

/*! \file
 *  \brief The plain-data form every kernel argument takes before it leaves the template.
 *
 *  The launch template turns each C++ argument into one \c ArgValue (tuples and wrappers use
 *  a few more, in the same stack array); everything else happens in compiled code. It is the
 *  type a specialisation of triton_embed::ArgTraits fills (args.h):
 *  \code
 *  template <>
 *  struct triton_embed::ArgTraits<MyIndex> {
 *    static constexpr size_t kNested = 0;
 *    static void fill(const MyIndex& v, ArgValue& out, ArgValue*&) {
 *      out = ArgValue{};
 *      out.kind = ArgKind::kInt;
 *      out.i = v.value;
 *    }
 *  };
 *  \endcode
 */

#include <cstddef>
#include <cstdint>

#include "triton_embed/dtype.h"

namespace triton_embed {

/*! \brief What an ArgValue holds, in terms of the Python value Triton would see. */
enum class ArgKind : uint8_t {
  kNone,         //!< None (nullptr, std::nullopt)
  kBool,         //!< bool;                       value in \c i (0 or 1)
  kInt,          //!< int;                        value in \c i, or \c u when \c big
  kFloat,        //!< float (a C++ double/float); value in \c f
  kPointer,      //!< device pointer;             address in \c u, element type in \c dtype
  kStr,          //!< str (constexpr only);       \c s, length in \c count
  kDType,        //!< tl.dtype (constexpr only);  \c dtype
  kScalar,       //!< forced scalar type \c dtype; \c i / \c u (integers) or \c f (floats)
  kConstexpr,    //!< tl.constexpr(inner);        \c elems points at the inner value
  kTuple,        //!< tuple of \c count values at \c elems
  kJitFunction,  //!< another @triton.jit function (constexpr); \c ptr is its KernelState
  kPyObject,     //!< a Python object (a parameter's default value); \c ptr is the PyObject
  kTensorDesc,   //!< a host tensor descriptor; \c ptr is the TensorDescriptor, \c dtype its element
                 //!< type
};

/*! \brief ArgValue::flags of a pointer that came from a tensor (set by layers such as the
 *  torch one, which finds its tensors by the first flag); a GPU launch refuses pointers with
 *  the second. */
inline constexpr uint8_t kArgFromTensor = 1;
inline constexpr uint8_t kArgHostMemory = 2;

/*! \brief One argument in plain data: 16 bytes, trivially copyable. */
struct ArgValue {
  ArgKind kind;
  DType dtype;
  uint8_t big;     //!< kInt / kScalar: the value is an unsigned 64-bit integer above INT64_MAX
  uint8_t flags;   //!< kPointer, kTensorDesc: \c kArgHostMemory, \c kArgFromTensor
  uint32_t count;  //!< kTuple: element count; kStr: length in bytes
  union {
    int64_t i;
    uint64_t u;
    double f;
    const char* s;
    const ArgValue* elems;
    const void* ptr;
  };
};
static_assert(sizeof(ArgValue) == 16, "ArgValue must stay 16 bytes");

namespace detail {
// The names the library's own code has used for them.
using triton_embed::ArgKind;
using triton_embed::ArgValue;
using triton_embed::kArgFromTensor;
using triton_embed::kArgHostMemory;
}  // namespace detail

}  // namespace triton_embed
