#pragma once

/*! \file
 *  \brief The exceptions triton_embed throws.
 *
 *  Every message names what went wrong, where (kernel, argument index and name) and what to
 *  do, in one format:
 *  \code
 *  add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK): argument #3 'n': expected an integer, got a string
 *  \endcode
 */

#include <exception>
#include <stdexcept>
#include <string>

#include "triton_embed/detail/export.h"

namespace triton_embed {

namespace detail {
struct ErrorAccess;
}  // namespace detail

/*! \brief Base class of every triton_embed exception. */
class TRITON_EMBED_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
  ~Error() override;

  /*! \brief The Python exception this error reports, when Python code raised it (a heuristic,
   *  a tuning run, a config pre-hook, Triton's compiler or interpreter): rethrown, it is a
   *  \c pybind11::error_already_set holding that exception. Null for the library's own
   *  errors. */
  const std::exception_ptr& cause() const noexcept { return cause_; }

 private:
  friend struct detail::ErrorAccess;
  std::exception_ptr cause_;
};

/*! \brief A call does not fit the kernel's signature (too few or too many arguments, one
 *  given twice, a required one missing) or an argument or object has the wrong type (a string
 *  for a runtime parameter, a float for an integer annotation, a Python object that is not a
 *  \c @triton.jit function). Python raises \c TypeError for the same calls. */
class TRITON_EMBED_API TypeError : public Error {
 public:
  using Error::Error;
  ~TypeError() override;
};

/*! \brief A value is malformed or out of range (a bad target string, a grid out of range, a
 *  CPU tensor on a GPU launch). Python raises \c ValueError for these. */
class TRITON_EMBED_API ValueError : public Error {
 public:
  using Error::Error;
  ~ValueError() override;
};

/*! \brief A number does not fit the type it is passed as: an integer outside its annotated
 *  or forced type, a negative address, a float too large for fp16, a grid axis of 2^31 or
 *  more. Python raises \c OverflowError there (at launch); a \c ValueError, so a handler of
 *  either catches it.
 *  \code
 *  try { k.launch(grid, stream, x, 300); }                 // k(x_ptr, n: tl.uint8)
 *  catch (const triton_embed::OverflowError& e) { ... }   // "... 300 does not fit ... u8"
 *  \endcode
 */
class TRITON_EMBED_API OverflowError : public ValueError {
 public:
  using ValueError::ValueError;
  ~OverflowError() override;
};

/*! \brief A name was not found: a Python module or kernel (the message carries the Python
 *  traceback), a named argument or a Triton option that does not exist, a parameter a grid
 *  callable reads. Python raises \c KeyError (a \c LookupError) for the names of a call. */
class TRITON_EMBED_API LookupError : public Error {
 public:
  using Error::Error;
  ~LookupError() override;
};

/*! \brief Triton failed to compile a kernel; the message holds Triton's message, the kernel
 *  name and the specialised signature. A failed compile is not cached: the next call
 *  compiles again. */
class TRITON_EMBED_API CompileError : public Error {
 public:
  using Error::Error;
  ~CompileError() override;
};

/*! \brief The feature is not supported by triton_embed (yet); the message says what to use. */
class TRITON_EMBED_API NotSupportedError : public Error {
 public:
  using Error::Error;
  ~NotSupportedError() override;
};

/*! \brief The embedded Python interpreter failed (start-up, an unexpected exception). */
class TRITON_EMBED_API PythonError : public Error {
 public:
  using Error::Error;
  ~PythonError() override;
};

/*! \brief A CUDA driver call failed. Keeps the call, the error name, code and text.
 *  \code
 *  try { add.launch(grid, stream, ...); }
 *  catch (const triton_embed::CudaError& e) { std::cerr << e.call() << " " << e.code(); }
 *  \endcode
 */
class TRITON_EMBED_API CudaError : public Error {
 public:
  CudaError(const std::string& what, std::string call, int code, std::string name,
            std::string text);
  ~CudaError() override;
  /*! \brief The driver API call that failed, e.g. \c "cuLaunchKernelEx". */
  const std::string& call() const noexcept { return call_; }
  /*! \brief The \c CUresult value. */
  int code() const noexcept { return code_; }
  /*! \brief The error's name, e.g. \c "CUDA_ERROR_INVALID_VALUE". */
  const std::string& name() const noexcept { return name_; }
  /*! \brief The driver's description of the error. */
  const std::string& text() const noexcept { return text_; }

 private:
  std::string call_;
  int code_;
  std::string name_;
  std::string text_;
};

/*! \brief No usable GPU: the CUDA driver library is missing, fails to initialise, or sees no
 *  device. Compiling still works with an explicit target (\c TRITON_EMBED_TARGET=cuda:90). */
class TRITON_EMBED_API NoDeviceError : public CudaError {
 public:
  using CudaError::CudaError;
  ~NoDeviceError() override;
};

/*! \brief A kernel needs more of a device resource (shared memory, threads) than the device
 *  has. */
class TRITON_EMBED_API OutOfResourcesError : public Error {
 public:
  using Error::Error;
  ~OutOfResourcesError() override;
};

/*! \brief A kernel bundle (a \c .teb file, or one embedded in the executable) cannot be read,
 *  written or merged. The message names the bundle (its path, or the name it was embedded
 *  under), which problem (reason()) and why, and what to do:
 *  \code
 *  bundle /opt/app/kernels.teb: truncated: the header says 81920 bytes, the file has 4096; the
 *  file was cut short (copy it again)
 *  \endcode
 *  A bundle that fails to open leaves nothing behind (no mapping, no half-read kernels). */
class TRITON_EMBED_API BundleError : public Error {
 public:
  /*! \brief Which problem the bundle has. */
  enum class Reason {
    kIo,         //!< the file cannot be opened, read, mapped or written (the OS error is given)
    kTruncated,  //!< the file is shorter than its header says: it was cut short
    kCorrupt,    //!< a checksum or the structure is wrong: the file was damaged
    kForeign,    //!< not a triton_embed bundle at all (wrong magic or byte order)
    kTooNew,     //!< a newer format version than this library reads
    kConflict,   //!< merging: two bundles hold different kernels under one identity
  };
  BundleError(const std::string& what, Reason reason) : Error(what), reason_(reason) {}
  ~BundleError() override;
  /*! \brief Which problem the bundle has. */
  Reason reason() const noexcept { return reason_; }

 private:
  Reason reason_;
};

/*! \brief A launch needs a kernel or a tuning decision that the loaded bundles do not hold
 *  (and compiling is not available); the message names the kernel and the missing entry.
 *  Compiling is not available in a program linked to \c triton_embed::runtime only (no JIT
 *  layer, no Python): there \c JitFunction(module, name) of a kernel no bundle holds, and a
 *  cache miss (the message gives the specialised signature and target), raise it, and the
 *  message says what to do: link \c triton_embed::triton_embed, or build a bundle that holds
 *  it. A \c LookupError, so a handler of either catches it.
 *  \code
 *  try { triton_embed::JitFunction add("pykernels.vector", "add_kernel"); }
 *  catch (const triton_embed::NotInBundleError& e) { std::cerr << e.what(); }
 *  \endcode */
class TRITON_EMBED_API NotInBundleError : public LookupError {
 public:
  using LookupError::LookupError;
  ~NotInBundleError() override;
};

}  // namespace triton_embed
