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

void rethrow_copy(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (const NoDeviceError& e) {
    throw NoDeviceError(std::string(e.what()), std::string(e.call()), e.code(),
                        std::string(e.name()), std::string(e.text()));
  } catch (const CudaError& e) {
    throw CudaError(std::string(e.what()), std::string(e.call()), e.code(), std::string(e.name()),
                    std::string(e.text()));
  } catch (const OverflowError& e) {
    throw OverflowError(std::string(e.what()));
  } catch (const TypeError& e) {
    throw TypeError(std::string(e.what()));
  } catch (const ValueError& e) {
    throw ValueError(std::string(e.what()));
  } catch (const BundleError& e) {
    throw BundleError(std::string(e.what()), e.reason());
  } catch (const NotInBundleError& e) {
    throw NotInBundleError(std::string(e.what()));
  } catch (const LookupError& e) {
    throw LookupError(std::string(e.what()));
  } catch (const CompileError& e) {
    throw CompileError(std::string(e.what()));
  } catch (const NotSupportedError& e) {
    throw NotSupportedError(std::string(e.what()));
  } catch (const PythonError& e) {
    throw PythonError(std::string(e.what()));
  } catch (const OutOfResourcesError& e) {
    throw OutOfResourcesError(std::string(e.what()));
  } catch (const Error& e) {
    throw Error(std::string(e.what()));
  }
}

}  // namespace triton_embed::detail
