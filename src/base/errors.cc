#include "base/errors.h"

#include <utility>

namespace triton_embed {

// Out-of-line destructors anchor the vtables (and type_info) in the library, so catching
// works across shared-library boundaries.
Error::~Error() = default;
TypeError::~TypeError() = default;
ValueError::~ValueError() = default;
OverflowError::~OverflowError() = default;
LookupError::~LookupError() = default;
CompileError::~CompileError() = default;
NotSupportedError::~NotSupportedError() = default;
PythonError::~PythonError() = default;
OutOfResourcesError::~OutOfResourcesError() = default;
NoDeviceError::~NoDeviceError() = default;
BundleError::~BundleError() = default;
NotInBundleError::~NotInBundleError() = default;

CudaError::CudaError(const std::string& what, std::string call, int code, std::string name,
                     std::string text)
    : Error(what),
      call_(std::move(call)),
      code_(code),
      name_(std::move(name)),
      text_(std::move(text)) {}
CudaError::~CudaError() = default;

}  // namespace triton_embed

namespace triton_embed::detail {

namespace {

// Throws `copy` of `original`, with its cause.
template <class E>
[[noreturn]] void raise(E copy, const Error& original) {
  ErrorAccess::set_cause(copy, original.cause());
  throw copy;
}

}  // namespace

void rethrow_copy(const std::exception_ptr& p, std::string_view prefix) {
  const auto msg = [&](const std::exception& e) { return std::string(prefix) + e.what(); };
  try {
    std::rethrow_exception(p);
  } catch (const NoDeviceError& e) {
    raise(NoDeviceError(msg(e), std::string(e.call()), e.code(), std::string(e.name()),
                        std::string(e.text())),
          e);
  } catch (const CudaError& e) {
    raise(CudaError(msg(e), std::string(e.call()), e.code(), std::string(e.name()),
                    std::string(e.text())),
          e);
  } catch (const OverflowError& e) {
    raise(OverflowError(msg(e)), e);
  } catch (const TypeError& e) {
    raise(TypeError(msg(e)), e);
  } catch (const ValueError& e) {
    raise(ValueError(msg(e)), e);
  } catch (const BundleError& e) {
    raise(BundleError(msg(e), e.reason()), e);
  } catch (const NotInBundleError& e) {
    raise(NotInBundleError(msg(e)), e);
  } catch (const LookupError& e) {
    raise(LookupError(msg(e)), e);
  } catch (const CompileError& e) {
    raise(CompileError(msg(e)), e);
  } catch (const NotSupportedError& e) {
    raise(NotSupportedError(msg(e)), e);
  } catch (const PythonError& e) {
    raise(PythonError(msg(e)), e);
  } catch (const OutOfResourcesError& e) {
    raise(OutOfResourcesError(msg(e)), e);
  } catch (const Error& e) {
    raise(Error(msg(e)), e);
  }
}

}  // namespace triton_embed::detail
