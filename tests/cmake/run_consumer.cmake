# Builds and runs tests/cmake/consumer against this build of triton_embed: `consumer` (the
# JIT) and `consumer_runtime` (linked to triton_embed::runtime only: needs no libpython; it and
# its library `consumer_kernels` embed BUNDLE, which the build recorded with its hashes).
#   MODE=find_package: installs BUILD_DIR into WORK_DIR/prefix and uses find_package.
#   MODE=fetchcontent: the consumer pulls SOURCE_DIR in with FetchContent.
cmake_minimum_required(VERSION 3.22)

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}")
  endif()
endfunction()

set(args -S "${SOURCE_DIR}/tests/cmake/consumer" -B "${WORK_DIR}/build" -G "${GENERATOR}"
         -DCMAKE_BUILD_TYPE=Release "-DPython_EXECUTABLE=${Python_EXECUTABLE}" -DTE_MODE=${MODE}
         "-DTE_BUNDLE=${BUNDLE}")
if(MODE STREQUAL "find_package")
  run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
  list(APPEND args "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix")
else()
  list(APPEND args "-DTE_SOURCE_DIR=${SOURCE_DIR}")
endif()
run("${CMAKE_COMMAND}" ${args})
# The consumer's own targets and what they link (with FetchContent, not the rest of
# triton_embed's: its torch layer and ops, which no consumer here uses, took most of the time).
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build" --parallel --target consumer consumer_runtime)
execute_process(COMMAND "${WORK_DIR}/build/consumer" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer failed (${rc})")
endif()
if(MODE STREQUAL "find_package" AND NOT out MATCHES "prefix/share/triton_embed/python")
  message(FATAL_ERROR "the installed library did not put its share/ pykernels on sys.path")
endif()

execute_process(COMMAND "${WORK_DIR}/build/consumer_runtime" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
message("${out}${err}")
# The recorded kernel, from the bundles; then the eight entries of the two copies, the
# library's first (its initialisers ran before the program's).
get_filename_component(bundle_dir "${BUNDLE}" DIRECTORY)
file(STRINGS "${bundle_dir}/record_hashes.txt" aligned REGEX "^aligned ")
string(REPLACE "aligned " "" aligned "${aligned}")
string(CONCAT listed "for cuda:90 is in no kernel bundle [(]the loaded bundles hold 8 entries "
                    "of it, e[.]g[.]:\n  cuda:90: [^\n]* "
                    "[(]record[.]teb embedded in consumer_kernels[)]\n")
if(NOT rc EQUAL 0 OR NOT aligned OR NOT out MATCHES "^consumer_runtime: add_kernel ${aligned}\n"
   OR NOT out MATCHES "${listed}")
  message(FATAL_ERROR "the runtime-only consumer failed (${rc}), or its output is not the "
                      "expected (add_kernel ${aligned})")
endif()
foreach(file consumer_runtime libconsumer_kernels.so)
  run("${CMAKE_COMMAND}" "-DFILES=${WORK_DIR}/build/${file}"
      "-DFORBID=^(libpython|libtriton_embed[.]so|libtorch|libc10)"
      -P "${CMAKE_CURRENT_LIST_DIR}/check_needed.cmake")
endforeach()
if(MODE STREQUAL "find_package")
  file(GLOB runtime_lib "${WORK_DIR}/prefix/lib*/libtriton_embed_runtime.so")
  if(NOT runtime_lib)
    message(FATAL_ERROR "no libtriton_embed_runtime.so installed under ${WORK_DIR}/prefix")
  endif()
  run("${CMAKE_COMMAND}" "-DFILES=${runtime_lib}"
      "-DFORBID=^(libpython|libtriton_embed[.]so|libtorch|libc10)"
      -P "${CMAKE_CURRENT_LIST_DIR}/check_needed.cmake")
endif()

# The installed triton-embed-bundle: list and merge need no Python; build loads the installed
# JIT library (next to the installed runtime) and finds the installed pykernels/.
if(MODE STREQUAL "find_package")
  set(tool "${WORK_DIR}/prefix/bin/triton-embed-bundle")
  run("${CMAKE_COMMAND}" "-DFILES=${tool}" "-DFORBID=^(libpython|libtriton_embed[.]so|libtorch|libc10)"
      -P "${CMAKE_CURRENT_LIST_DIR}/check_needed.cmake")
  file(WRITE "${WORK_DIR}/calls.txt" "pykernels.vector:add_kernel *fp32 *fp32 *fp32 i32:16 1024\n")
  execute_process(COMMAND "${tool}" build --target cuda:90 -o "${WORK_DIR}/aot.teb" "${WORK_DIR}/calls.txt"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "/aot[.]teb: 1 kernel, 1 entry, 0 records from 1 call\n$")
    message(FATAL_ERROR "the installed triton-embed-bundle build failed (${rc})")
  endif()
  execute_process(COMMAND "${tool}" list "${WORK_DIR}/aot.teb" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "\n  entry #0 cuda:90 '': hash [0-9a-f]+, key 4 words, signature 'add_kernel[(]")
    message(FATAL_ERROR "the installed triton-embed-bundle list failed (${rc}):\n${out}${err}")
  endif()
endif()
