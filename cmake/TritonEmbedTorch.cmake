# Finds the torch of the Python environment (for the torch layer and the ops).
#
# Input:  TRITON_EMBED_TORCH  AUTO (default: build them when torch imports), ON or OFF
# Output: TRITON_EMBED_HAVE_TORCH, the Torch package (TORCH_LIBRARIES), TRITON_EMBED_TORCH_VERSION,
#         TRITON_EMBED_TORCH_CXX_STANDARD

set(TRITON_EMBED_HAVE_TORCH OFF)
if(TRITON_EMBED_TORCH STREQUAL "OFF")
  return()
endif()

execute_process(
  COMMAND "${TRITON_EMBED_PYTHON_EXECUTABLE}" -c
          "import torch; print(torch.__version__); print(torch.utils.cmake_prefix_path); print(torch.version.cuda or '')"
  OUTPUT_VARIABLE _te_torch_out ERROR_VARIABLE _te_torch_err RESULT_VARIABLE _te_torch_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _te_torch_rc EQUAL 0)
  if(TRITON_EMBED_TORCH STREQUAL "ON")
    message(FATAL_ERROR "triton_embed: TRITON_EMBED_TORCH=ON but 'import torch' failed with "
                        "${TRITON_EMBED_PYTHON_EXECUTABLE}:\n${_te_torch_err}")
  endif()
  message(STATUS "triton_embed: torch not found; the torch layer and the ops are not built")
  return()
endif()
string(REPLACE "\n" ";" _te_torch_out "${_te_torch_out}")
list(GET _te_torch_out 0 TRITON_EMBED_TORCH_VERSION)
list(GET _te_torch_out 1 _te_torch_prefix)
list(LENGTH _te_torch_out _te_torch_n)
set(_te_torch_cuda "")
if(_te_torch_n GREATER 2)
  list(GET _te_torch_out 2 _te_torch_cuda)
endif()
if(NOT _te_torch_cuda)
  message(FATAL_ERROR "triton_embed: torch ${TRITON_EMBED_TORCH_VERSION} is not a CUDA build; "
                      "the torch layer needs one (set TRITON_EMBED_TORCH=OFF to skip it)")
endif()
set(TRITON_EMBED_TORCH_PREFIX "${_te_torch_prefix}")
list(APPEND CMAKE_PREFIX_PATH "${_te_torch_prefix}")
# Torch's CMake config looks for the CUDA toolkit; point it at the default install.
if(NOT DEFINED CUDA_TOOLKIT_ROOT_DIR AND EXISTS "/usr/local/cuda")
  set(CUDA_TOOLKIT_ROOT_DIR "/usr/local/cuda")
endif()
# It also wants libnvrtc, which a minimal toolkit lacks; the pip wheels of torch ship one.
find_library(CUDA_nvrtc_LIBRARY nvrtc HINTS "${CUDA_TOOLKIT_ROOT_DIR}/lib64")
if(NOT CUDA_nvrtc_LIBRARY)
  get_filename_component(_te_site "${_te_torch_prefix}/../../.." ABSOLUTE)
  file(GLOB _te_nvrtc "${_te_site}/nvidia/*/lib/libnvrtc.so*" "${_te_site}/nvidia/cuda_nvrtc/lib/libnvrtc.so*")
  list(FILTER _te_nvrtc EXCLUDE REGEX "builtins|alt")
  if(_te_nvrtc)
    list(GET _te_nvrtc 0 _te_nvrtc)
    set(CUDA_nvrtc_LIBRARY "${_te_nvrtc}" CACHE FILEPATH "libnvrtc (from torch's pip wheels)" FORCE)
  endif()
endif()
find_package(Torch REQUIRED)
# Code that includes torch's headers is compiled with the C++ standard torch was built with
# (torch's config records it on its target but does not pass it on): C++20 for torch 2.10+,
# C++17 before.
get_target_property(TRITON_EMBED_TORCH_CXX_STANDARD torch CXX_STANDARD)
if(NOT TRITON_EMBED_TORCH_CXX_STANDARD)
  set(TRITON_EMBED_TORCH_CXX_STANDARD 17)
endif()
set(TRITON_EMBED_HAVE_TORCH ON)
message(STATUS "triton_embed: torch ${TRITON_EMBED_TORCH_VERSION} (CUDA ${_te_torch_cuda}, "
               "C++${TRITON_EMBED_TORCH_CXX_STANDARD})")
