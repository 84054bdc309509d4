# The GPU widening tests' second step (tests/cpp/test_widen_gpu.cc): `triton-embed-bundle
# widen` of what widen_gpu_record recorded, which it records only on a GPU: without the
# recording (no GPU) there is nothing to widen, and the next steps skip too.
#   cmake -DTOOL=... -DKERNELS=... -DRECORDED=... -DWIDENED=... -P widen_gpu.cmake
if(NOT EXISTS "${RECORDED}")
  message("no recording (widen_gpu_record records on a GPU only): nothing to widen")
  return()
endif()
execute_process(
  COMMAND "${TOOL}" widen -o "${WIDENED}" --python-path "${KERNELS}"
          --rule te_widen_kernels:mm_kernel=M=nearest
          --values te_widen_kernels:rope_kernel:BATCH=1,2,3,...,8 "${RECORDED}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT rc EQUAL 0 OR out MATCHES "not added")
  message(FATAL_ERROR "widen exited with ${rc}, or left something out:\n${out}\n${err}")
endif()
