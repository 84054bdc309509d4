# Finds the Python environment triton_embed is built against.
#
# Inputs (cache variables, all optional):
#   Python_EXECUTABLE            the interpreter of the environment that holds triton
#                                (a virtual environment's python works; it is what the
#                                library starts by default in a plain C++ executable)
#   TRITON_EMBED_CUDA_INCLUDE_DIR  directory with cuda.h (defaults to the CUDA toolkit's,
#                                else the copy that Triton ships)
# Outputs:
#   Python::Module, Python::Python targets, pybind11::headers
#   TRITON_EMBED_PYTHON_EXECUTABLE, TRITON_EMBED_LIBPYTHON, TRITON_EMBED_TRITON_VERSION,
#   TRITON_EMBED_CUDA_INCLUDE_DIR

if(DEFINED PYTHON AND NOT DEFINED Python_EXECUTABLE)
  set(Python_EXECUTABLE "${PYTHON}" CACHE FILEPATH "Python interpreter")
endif()
# A virtual environment's python must be used as given, not resolved to its base.
set(Python_FIND_VIRTUALENV FIRST)
find_package(Python 3.10 REQUIRED COMPONENTS Interpreter Development.Module Development.Embed)

# Keep the path as given (a venv's bin/python is a symlink to the base interpreter; the
# embedded interpreter must see the venv's path to find the venv's site-packages).
set(TRITON_EMBED_PYTHON_EXECUTABLE "${Python_EXECUTABLE}")

# The shared libpython that executables link. FindPython reports it in Python_LIBRARIES.
set(TRITON_EMBED_LIBPYTHON "")
foreach(_lib IN LISTS Python_LIBRARIES)
  if(_lib MATCHES "libpython.*\\.so")
    set(TRITON_EMBED_LIBPYTHON "${_lib}")
  endif()
endforeach()
if(NOT TRITON_EMBED_LIBPYTHON)
  message(FATAL_ERROR "triton_embed: no shared libpython found for ${Python_EXECUTABLE} "
                      "(found: ${Python_LIBRARIES}). Install the Python development package.")
endif()

execute_process(
  COMMAND "${Python_EXECUTABLE}" -c
          "import triton, os; print(triton.__version__); print(os.path.dirname(triton.__file__))"
  OUTPUT_VARIABLE _te_triton_out ERROR_VARIABLE _te_triton_err RESULT_VARIABLE _te_triton_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _te_triton_rc EQUAL 0)
  message(FATAL_ERROR "triton_embed: 'import triton' failed with ${Python_EXECUTABLE}:\n"
                      "${_te_triton_err}\nInstall triton (3.6 or newer) in that environment "
                      "or pass -DPython_EXECUTABLE=/path/to/python of one that has it.")
endif()
string(REPLACE "\n" ";" _te_triton_out "${_te_triton_out}")
list(GET _te_triton_out 0 TRITON_EMBED_TRITON_VERSION)
list(GET _te_triton_out 1 _te_triton_dir)
if(TRITON_EMBED_TRITON_VERSION VERSION_LESS 3.6)
  message(FATAL_ERROR "triton_embed needs Triton 3.6 or newer, found ${TRITON_EMBED_TRITON_VERSION}")
endif()
message(STATUS "triton_embed: Python ${Python_VERSION} (${Python_EXECUTABLE}), "
               "Triton ${TRITON_EMBED_TRITON_VERSION}, libpython ${TRITON_EMBED_LIBPYTHON}")

if(NOT TARGET pybind11::headers)
  execute_process(COMMAND "${Python_EXECUTABLE}" -m pybind11 --cmakedir
                  OUTPUT_VARIABLE _te_pybind11_dir RESULT_VARIABLE _te_pybind11_rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_te_pybind11_rc EQUAL 0)
    set(pybind11_DIR "${_te_pybind11_dir}" CACHE PATH "pybind11 CMake directory")
  endif()
  set(PYBIND11_FINDPYTHON ON)
  find_package(pybind11 2.12 CONFIG REQUIRED)
endif()

if(NOT TRITON_EMBED_CUDA_INCLUDE_DIR)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND EXISTS "${CUDAToolkit_INCLUDE_DIRS}/cuda.h")
    set(_te_cuda_inc "${CUDAToolkit_INCLUDE_DIRS}")
  else()
    set(_te_cuda_inc "${_te_triton_dir}/backends/nvidia/include")
  endif()
  set(TRITON_EMBED_CUDA_INCLUDE_DIR "${_te_cuda_inc}" CACHE PATH "Directory holding cuda.h")
endif()
if(NOT EXISTS "${TRITON_EMBED_CUDA_INCLUDE_DIR}/cuda.h")
  message(FATAL_ERROR "triton_embed: no cuda.h in ${TRITON_EMBED_CUDA_INCLUDE_DIR}")
endif()
