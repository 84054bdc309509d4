# Sanitizer builds (CI runs them with `./dev.sh sanitize`).
#
# Input:  TRITON_EMBED_SANITIZE  "" (default: none), "address,undefined" (or either alone) or
#                                "thread"
# Output: -fsanitize=... -O1 -g1 on every target defined after the include (compile and link),
#         and for the tests (tests/CMakeLists.txt adds them to the tests' ENVIRONMENT):
#         TRITON_EMBED_SANITIZER_TEST_ENV    the runtime options for our executables
#         TRITON_EMBED_SANITIZER_PYTHON_ENV  the same for a python process that loads our
#                                            libraries: the runtime is LD_PRELOADed
# Findings are fatal (UBSan too: -fno-sanitize-recover), so a finding fails the test. The
# suppressions (tests/sanitizers/*.supp) are for code outside triton_embed only.

set(TRITON_EMBED_SANITIZE "" CACHE STRING
    "Sanitizers: empty (none), address,undefined or thread (tests: ./dev.sh sanitize)")
set_property(CACHE TRITON_EMBED_SANITIZE PROPERTY STRINGS "" "address,undefined" "thread")
set(TRITON_EMBED_SANITIZER_TEST_ENV "")
set(TRITON_EMBED_SANITIZER_PYTHON_ENV "")
if(TRITON_EMBED_SANITIZE STREQUAL "")
  return()
endif()

string(REPLACE "," ";" _te_san "${TRITON_EMBED_SANITIZE}")
list(SORT _te_san)
list(REMOVE_DUPLICATES _te_san)
if(NOT _te_san STREQUAL "address;undefined" AND NOT _te_san STREQUAL "address"
   AND NOT _te_san STREQUAL "undefined" AND NOT _te_san STREQUAL "thread")
  message(FATAL_ERROR "TRITON_EMBED_SANITIZE='${TRITON_EMBED_SANITIZE}': use address,undefined "
                      "(or either alone) or thread")
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "TRITON_EMBED_SANITIZE needs GCC or Clang, not ${CMAKE_CXX_COMPILER_ID}")
endif()
string(REPLACE ";" "," _te_san_flag "${_te_san}")

# -O1 -g1 come after the build type's flags, so they win over its -O2/-O3 and -g. -g1: function
# names and line tables, which is what a sanitizer's report shows; without the types and
# variables of -g the two builds take about half the disk (CI's disk is small).
add_compile_options(-fsanitize=${_te_san_flag} -fno-sanitize-recover=all
                    -fno-omit-frame-pointer -O1 -g1)
# GCC warns that TSan does not model std::atomic_thread_fence (the seqlock of src/core/memo.h).
# Every field that seqlock guards is itself a std::atomic, so TSan still sees every access it
# needs to; the warning is not a finding.
if("thread" IN_LIST _te_san AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options(-Wno-tsan)
endif()
# A python process has no sanitizer runtime of its own: with Clang, link the shared one (the
# one LD_PRELOADed below) rather than a static copy per executable.
add_link_options(-fsanitize=${_te_san_flag}
                 "$<$<CXX_COMPILER_ID:Clang>:-shared-libsan>")

set(_te_supp "${PROJECT_SOURCE_DIR}/tests/sanitizers")
# PYTHONMALLOC=malloc: every Python object is its own malloc block, which the sanitizer sees
# (pymalloc's arenas would hide overflows and use-after-free of Python objects).
# OPENBLAS_NUM_THREADS=1: numpy's OpenBLAS (imported with torch) otherwise starts a thread
# server at import that is still being torn down while LeakSanitizer's exit-time check stops
# the world, one source of that check's own crash ("Tracer caught signal 11").
set(_te_common "PYTHONMALLOC=malloc" "OPENBLAS_NUM_THREADS=1")
if("thread" IN_LIST _te_san)
  set(_te_runtime tsan)
  # Exit code 66 is TSan's default; halt at the first report so the test fails on it.
  set(_te_tsan "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:history_size=4"
               ":suppressions=${_te_supp}/tsan.supp:print_suppressions=0")
  string(CONCAT _te_tsan ${_te_tsan})
  # The thread tests only (the rest gains nothing from TSan): the gtests and pytest tests with
  # Thread or Concurrent in their name.
  set(TRITON_EMBED_SANITIZER_TEST_ENV "${_te_common}" "${_te_tsan}"
      "GTEST_FILTER=*Thread*:*Concurrent*")
  set(TRITON_EMBED_SANITIZER_PYTHON_ENV "${_te_common}" "${_te_tsan}"
      "PYTEST_ADDOPTS=-k 'thread or concurrent'")
else()
  set(_te_runtime asan)
  if(NOT "address" IN_LIST _te_san)
    set(_te_runtime ubsan)
  endif()
  # protect_shadow_gap=0: the CUDA driver maps memory in the address range ASan otherwise
  # reserves, so that its initialisation can fail on a GPU machine (no effect without one).
  set(_te_asan "halt_on_error=1:abort_on_error=0:exitcode=1:check_initialization_order=1"
               ":strict_init_order=1:detect_stack_use_after_return=1:protect_shadow_gap=0"
               ":suppressions=${_te_supp}/asan.supp:print_suppressions=0")
  string(CONCAT _te_asan ${_te_asan})
  set(_te_ubsan "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1"
                ":suppressions=${_te_supp}/ubsan.supp:print_suppressions=0")
  string(CONCAT _te_ubsan ${_te_ubsan})
  set(_te_lsan "LSAN_OPTIONS=suppressions=${_te_supp}/lsan.supp:print_suppressions=0")
  # Leak reports need whole allocation stacks: libpython, Triton and torch have no frame
  # pointers, so the fast unwinder stops at the first frame in them and a leaked Python
  # object could not be told apart from ours (nor suppressed by where it comes from). The
  # slow unwinder costs about 5x on the tests that compile; 20 frames reach the caller.
  set(TRITON_EMBED_SANITIZER_TEST_ENV "${_te_common}"
      "ASAN_OPTIONS=${_te_asan}:detect_leaks=1:fast_unwind_on_malloc=0:malloc_context_size=20"
      "${_te_ubsan}" "${_te_lsan}")
  # In a python process no leak check: python itself, pytest, torch and Triton are not ours
  # and free little at exit, and the tests' subprocesses (readelf, ptxas, the C compiler)
  # inherit LD_PRELOAD and would report theirs. The C++ executables check leaks.
  set(TRITON_EMBED_SANITIZER_PYTHON_ENV
      "${_te_common}" "ASAN_OPTIONS=${_te_asan}:detect_leaks=0" "${_te_ubsan}")
endif()

# The shared runtime for LD_PRELOAD into python (our libraries must not load it late), with
# the C++ runtime: python does not link libstdc++, and a runtime that starts without it
# cannot intercept __cxa_throw (ASan: "CHECK failed ... real___cxa_throw" at the first
# C++ exception, e.g. in Triton's import).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(_te_preload_names "lib${_te_runtime}.so" "libstdc++.so")
else()
  set(_te_preload_names "libclang_rt.${_te_runtime}-${CMAKE_SYSTEM_PROCESSOR}.so" "libstdc++.so")
endif()
set(_te_preload "")
foreach(_te_name IN LISTS _te_preload_names)
  execute_process(COMMAND "${CMAKE_CXX_COMPILER}" -print-file-name=${_te_name}
                  OUTPUT_VARIABLE _te_path OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${_te_path}" OR NOT EXISTS "${_te_path}")
    message(FATAL_ERROR "TRITON_EMBED_SANITIZE: ${CMAKE_CXX_COMPILER} does not know ${_te_name} "
                        "(install its sanitizer runtime)")
  endif()
  get_filename_component(_te_path "${_te_path}" REALPATH)
  list(APPEND _te_preload "${_te_path}")
endforeach()
string(REPLACE ";" ":" _te_preload "${_te_preload}")
if(NOT _te_runtime STREQUAL "ubsan")  # UBSan's runtime may load late, with our library
  list(APPEND TRITON_EMBED_SANITIZER_PYTHON_ENV "LD_PRELOAD=${_te_preload}")
endif()
message(STATUS "triton_embed: sanitizers ${_te_san_flag} (-O1 -g1; python tests preload "
               "${_te_preload})")
