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

CudaError::CudaError(const std::string& what, std::string call, int code, std::string name,
                     std::string text)
    : Error(what),
      call_(std::move(call)),
      code_(code),
      name_(std::move(name)),
      text_(std::move(text)) {}
CudaError::~CudaError() = default;

}  // namespace triton_embed
