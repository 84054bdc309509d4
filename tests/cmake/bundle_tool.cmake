# triton-embed-bundle end to end: SAMPLES (test_bundle --write-samples) writes a.teb, b.teb,
# corrupt.teb and conflict.teb into WORK_DIR; TOOL lists and merges them. Each step checks
# the exit status and the whole output (stdout and stderr; paths relative to WORK_DIR). The
# samples' parameter tables are placeholders: a load refuses them, which the listing says.

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# run(<expected status> <expected stdout+stderr> <args>...)
function(run expect_rc expect_out)
  execute_process(COMMAND "${TOOL}" ${ARGN} WORKING_DIRECTORY "${WORK_DIR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE "${WORK_DIR}" "DIR" got "${out}${err}")
  if(NOT "${rc}" STREQUAL "${expect_rc}" OR NOT "${got}" STREQUAL "${expect_out}")
    message(FATAL_ERROR "triton-embed-bundle ${ARGN}: exit status ${rc} (expected ${expect_rc}), "
                        "output:\n${got}\nexpected:\n${expect_out}")
  endif()
endfunction()

execute_process(COMMAND "${SAMPLES}" --write-samples "${WORK_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "test_bundle --write-samples: exit status ${rc}")
endif()
file(SIZE "${WORK_DIR}/a.teb" a_size)
file(SIZE "${WORK_DIR}/b.teb" b_size)

run(0 "bundle a.teb: format version 2, ${a_size} bytes
  written by triton_embed 0.1.0 (Triton 3.8.0)
  note: a
  2 kernels, 2 entries, 1 record
kernel #0 pykernels.vector.add_kernel: source hash a1b2c3
  entry #0 cuda:90 'num_warps=4;num_stages=3': hash 9f2c81aa, key 3 words, signature '*fp32,*fp32,*fp32,i32', cubin 1000 bytes, ptx 31 bytes
kernel #1 pykernels.matmul.matmul_kernel: source hash d4e5f6, autotune
  entry #1 cuda:100 'num_warps=8;num_stages=4;num_ctas=2': hash 77aa0e, key 1 word, signature 'tensordesc<fp16[64, 64]>,i32,i32', cubin 3000 bytes, no ptx
  1 record
a program refuses to load it: bundle a.teb: kernel pykernels.vector.add_kernel: its parameter table is damaged (more parameters than a kernel can have at byte 9 of 9); rebuild the bundle
" list a.teb)

run(0 "wrote m.teb: 3 kernels, 4 entries, 2 records from 2 bundles\n" merge -o m.teb a.teb b.teb)
file(SIZE "${WORK_DIR}/m.teb" m_size)
run(0 "bundle m.teb: format version 2, ${m_size} bytes
  written by triton_embed 0.1.0 (Triton 3.8.0 + 3.7.1)
  note: merged from a.teb, b.teb
  3 kernels, 4 entries, 2 records
kernel #0 pykernels.vector.add_kernel: source hash a1b2c3
  entry #0 cuda:90 'num_warps=4;num_stages=3': hash 9f2c81aa, key 3 words, signature '*fp32,*fp32,*fp32,i32', cubin 1000 bytes, ptx 31 bytes
kernel #1 pykernels.matmul.matmul_kernel: source hash d4e5f6, autotune
  entry #1 cuda:100 'num_warps=8;num_stages=4;num_ctas=2': hash 77aa0e, key 1 word, signature 'tensordesc<fp16[64, 64]>,i32,i32', cubin 3000 bytes, no ptx
  entry #3 cuda:90:64 'num_warps=2': hash 0c0c, key 0 words, signature '*fp32,*fp32,*fp32,i32', cubin 1000 bytes, no ptx
  1 record
kernel #2 pykernels.softmax.softmax_kernel: source hash 0f0f, heuristics
  entry #2 cuda:90 'num_warps=4;num_stages=3': hash 50f7, key 3 words, signature '*fp32,*fp32,*fp32,i32', cubin 1000 bytes, ptx 31 bytes
  1 record
a program refuses to load it: bundle m.teb: kernel pykernels.vector.add_kernel: its parameter table is damaged (more parameters than a kernel can have at byte 9 of 9); rebuild the bundle
" list m.teb)

# A flipped bit in the last cubin (entry #1's): refused when list checks the blobs, status 1,
# the message on stderr.
run(1 "triton-embed-bundle: bundle corrupt.teb: corrupt: entry #1 (kernel pykernels.matmul.matmul_kernel): its cubin's CRC-32 is 0x7dec89d0, its bytes give 0x605b99b4; the file is damaged (copy it again, or rebuild it)
" list corrupt.teb)
# The same entry with another hash: no output file.
run(1 "triton-embed-bundle: bundle conflict.teb: conflict: kernel pykernels.matmul.matmul_kernel (source hash d4e5f6): its entry for cuda:100 options 'num_warps=8;num_stages=4;num_ctas=2' key [0x7] is also in bundle a.teb, with a different hash (deadbeef here, 77aa0e there); merge bundles built from the same kernel sources by the same Triton, or leave one of them out
" merge -o x.teb a.teb conflict.teb)
if(EXISTS "${WORK_DIR}/x.teb")
  message(FATAL_ERROR "a failed merge left x.teb behind")
endif()
run(1 "triton-embed-bundle: bundle missing.teb: cannot read: cannot open it: No such file or directory; check the path and its permissions
" list missing.teb)

include("${CMAKE_CURRENT_LIST_DIR}/tool_usage.cmake")
run(2 "${usage}")
run(2 "triton-embed-bundle: unknown command 'frob'\n${usage}" frob)
run(2 "triton-embed-bundle: merge: give the output file with -o OUT\n${usage}" merge a.teb)
run(0 "${usage}" --help)
