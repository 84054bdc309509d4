#include "core/errors.h"

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

void rethrow_copy(const std::exception_ptr& p, std::string_view prefix) {
  const auto msg = [&](const std::exception& e) { return std::string(prefix) + e.what(); };
  try {
    std::rethrow_exception(p);
  } catch (const NoDeviceError& e) {
    throw NoDeviceError(msg(e), std::string(e.call()), e.code(), std::string(e.name()),
                        std::string(e.text()));
  } catch (const CudaError& e) {
    throw CudaError(msg(e), std::string(e.call()), e.code(), std::string(e.name()),
                    std::string(e.text()));
  } catch (const OverflowError& e) {
    throw OverflowError(msg(e));
  } catch (const TypeError& e) {
    throw TypeError(msg(e));
  } catch (const ValueError& e) {
    throw ValueError(msg(e));
  } catch (const BundleError& e) {
    throw BundleError(msg(e), e.reason());
  } catch (const NotInBundleError& e) {
    throw NotInBundleError(msg(e));
  } catch (const LookupError& e) {
    throw LookupError(msg(e));
  } catch (const CompileError& e) {
    throw CompileError(msg(e));
  } catch (const NotSupportedError& e) {
    throw NotSupportedError(msg(e));
  } catch (const PythonError& e) {
    throw PythonError(msg(e));
  } catch (const OutOfResourcesError& e) {
    throw OutOfResourcesError(msg(e));
  } catch (const Error& e) {
    throw Error(msg(e));
  }
}

}  // namespace triton_embed::detail
