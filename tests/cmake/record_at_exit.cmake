# A plain program run with TRITON_EMBED_RECORD=OUT writes, as it exits, a bundle of what it
# compiled: PROBE compiles pykernels.vector.add_kernel for cuda:90 once; TOOL lists OUT.
#   cmake -DPROBE=... -DTOOL=... -DOUT=... -P record_at_exit.cmake
file(REMOVE "${OUT}")
set(ENV{TRITON_EMBED_RECORD} "${OUT}")
execute_process(COMMAND ${PROBE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the probe exited with ${rc}:\n${out}\n${err}")
endif()
if(NOT EXISTS "${OUT}")
  message(FATAL_ERROR "TRITON_EMBED_RECORD=${OUT}: no bundle was written at exit\n${out}\n${err}")
endif()
# Triton may warn on stderr (its text is its own); nothing of ours may be there.
if(err MATCHES "(^|\n)(triton_embed|\\[triton_embed\\])")
  message(FATAL_ERROR "the probe reported on stderr:\n${err}")
endif()
unset(ENV{TRITON_EMBED_RECORD})
execute_process(COMMAND ${TOOL} list "${OUT}" RESULT_VARIABLE rc OUTPUT_VARIABLE listing
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "triton-embed-bundle list ${OUT} exited with ${rc}:\n${err}")
endif()
foreach(expect
    "  1 kernel, 1 entry, 0 records\n"
    "kernel #0 pykernels[.]vector[.]add_kernel: source hash [0-9a-f]+\n"
    "  entry #0 cuda:90 '': hash [0-9a-f]+, key 4 words, signature 'add_kernel[(]x_ptr: [*]fp32 D, y_ptr: [*]fp32 D, out_ptr: [*]fp32 D, n_elements: i32 D, BLOCK: constexpr = 1024[)]'")
  if(NOT listing MATCHES "${expect}")
    message(FATAL_ERROR "the listing lacks '${expect}':\n${listing}")
  endif()
endforeach()

# With TRITON_EMBED_RECORD_WIDEN=1 the bundle written at exit is widened: the entry and its
# twin with n_elements unspecialised, compiled at exit (before the interpreter closes), not by
# the probe's launch.
file(REMOVE "${OUT}")
set(ENV{TRITON_EMBED_RECORD} "${OUT}")
set(ENV{TRITON_EMBED_RECORD_WIDEN} "1")
execute_process(COMMAND ${PROBE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
unset(ENV{TRITON_EMBED_RECORD})
unset(ENV{TRITON_EMBED_RECORD_WIDEN})
if(NOT rc EQUAL 0 OR NOT EXISTS "${OUT}")
  message(FATAL_ERROR "the probe exited with ${rc}, bundle written: ${OUT}\n${out}\n${err}")
endif()
if(err MATCHES "(^|\n)(triton_embed|\\[triton_embed\\])")
  message(FATAL_ERROR "the probe reported on stderr:\n${err}")
endif()
execute_process(COMMAND ${TOOL} list "${OUT}" RESULT_VARIABLE rc OUTPUT_VARIABLE listing
                ERROR_VARIABLE err)
foreach(expect
    "  1 kernel, 2 entries, 0 records\n"
    "signature 'add_kernel[(]x_ptr: [*]fp32 D, y_ptr: [*]fp32 D, out_ptr: [*]fp32 D, n_elements: i32 D, BLOCK: constexpr = 1024[)]'"
    "signature 'add_kernel[(]x_ptr: [*]fp32 D, y_ptr: [*]fp32 D, out_ptr: [*]fp32 D, n_elements: i32, BLOCK: constexpr = 1024[)]'")
  if(NOT listing MATCHES "${expect}")
    message(FATAL_ERROR "the widened recording's listing lacks '${expect}':\n${listing}")
  endif()
endforeach()
