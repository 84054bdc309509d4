# `triton-embed-bundle widen` end to end, without a GPU (issue 37).
#   - widens the bundle bundle_widen_record recorded (RECORDED) into WIDENED: every entry's
#     twins, a tuning rule for the autotuned kernel recorded without one, other constexpr
#     values (one through @triton.heuristics); the runtime-only tests serve from WIDENED;
#   - a bundle built for two targets gets twins for each;
#   - what it cannot add (a kernel whose source changed) is reported, the rest written;
#   - bad options: the message, and no output file.
# Inputs: TOOL, KERNELS (tests/kernels), WORK_DIR, RECORDED, WIDENED; SANITIZED (true in a
# sanitizer build: the first part only).

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
unset(ENV{TRITON_EMBED_PYTHONPATH})  # only --python-path puts the kernels on sys.path

# run(<expected status> <regex>... ARGS <args>...): the tool's stdout and stderr must match
# every regex (each a line, or part of one), and the exit status be the one expected.
function(run expect_rc)
  cmake_parse_arguments(PARSE_ARGV 1 A "" "" "ARGS")
  execute_process(COMMAND "${TOOL}" ${A_ARGS} WORKING_DIRECTORY "${WORK_DIR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT "${rc}" STREQUAL "${expect_rc}")
    message(FATAL_ERROR "triton-embed-bundle ${A_ARGS}: exit status ${rc} (expected "
                        "${expect_rc})\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  foreach(re ${A_UNPARSED_ARGUMENTS})
    if(NOT "${out}${err}" MATCHES "${re}")
      message(FATAL_ERROR "triton-embed-bundle ${A_ARGS}: the output does not match '${re}'"
                          "\nstdout:\n${out}\nstderr:\n${err}")
    endif()
  endforeach()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

# count(<var> <regex> <text>): how many lines of <text> match <regex>.
function(count var re text)
  string(REPLACE ";" "," text "${text}")  # a ';' in a match would split it as a list item
  string(REPLACE ";" "," re "${re}")
  string(REGEX MATCHALL "${re}" found "${text}")
  list(LENGTH found n)
  set(${var} ${n} PARENT_SCOPE)
endfunction()

function(expect_count re text want)
  count(n "${re}" "${text}")
  if(NOT n EQUAL want)
    message(FATAL_ERROR "${n} lines match '${re}', expected ${want}:\n${text}")
  endif()
endfunction()

set(wk "te_widen_kernels")

# ---- the recorded bundle, widened --------------------------------------------------------
run(0 "rule: ${wk}.mm_kernel autotuner 0: M=nearest\n"
      "wrote ${WIDENED}: 5 kernels, [0-9]+ entries \\([0-9]+ added, [0-9]+ bytes of code\\), "
  ARGS widen -o "${WIDENED}" --python-path "${KERNELS}"
       --rule "${wk}:mm_kernel=M=nearest"
       --values "${wk}:rope_kernel:BATCH=1,3,8"
       --values "${wk}:rope_heur_kernel:HEADS=4,12" "${RECORDED}")
set(wide "${last_out}")
if(wide MATCHES "not added")
  message(FATAL_ERROR "widen left something out:\n${wide}")
endif()
# rows_kernel: recorded at 4096 rows (every integer "D") and 1 row (n_rows a constexpr 1): the
# twin with every integer unspecialised, one per integer alone for each entry, the shared one
# (n_rows's) once.
expect_count("added: cuda:90 ${wk}.rows_kernel: [^\n]*\\(integers unspecialised" "${wide}" 1)
expect_count("added: cuda:90 ${wk}.rows_kernel: [^\n]*\\(n_rows unspecialised" "${wide}" 1)
expect_count("added: cuda:90 ${wk}.rows_kernel: [^\n]*\\(n_cols unspecialised" "${wide}" 2)
expect_count("added: cuda:90 ${wk}.rows_kernel: [^\n]*\\(stride unspecialised" "${wide}" 2)
# rope_kernel: recorded at BATCH 2 and 4 (seq_len 128, "D"): at BATCH 1, 3 and 8 from each
# (the same code: once), and each with seq_len unspecialised; the recorded ones' twins.
expect_count("added: cuda:90 ${wk}.rope_kernel: [^\n]*seq_len: i32 D, BATCH: constexpr = [138],[^\n]*\\(BATCH=[138];"
             "${wide}" 3)
expect_count("added: cuda:90 ${wk}.rope_kernel: [^\n]*seq_len: i32, BATCH: constexpr = [12348],"
             "${wide}" 5)
# rope_heur_kernel: HEADS 4 and 12, its heuristic giving BLOCK_H 4 and 16.
expect_count("added: cuda:90 ${wk}.rope_heur_kernel: [^\n]*HEADS: constexpr = 4, HEAD_DIM: constexpr = 64, BLOCK_H: constexpr = 4\\)"
             "${wide}" 4)
expect_count("added: cuda:90 ${wk}.rope_heur_kernel: [^\n]*HEADS: constexpr = 12, HEAD_DIM: constexpr = 64, BLOCK_H: constexpr = 16\\)"
             "${wide}" 4)
# mm_kernel: each chosen config's inner entry with M unspecialised (and the others' twins).
expect_count("added: cuda:90 ${wk}.mm_kernel: mm_kernel\\(a_ptr: \\*fp16 D, b_ptr: \\*fp16 D, c_ptr: \\*fp16 D, M: i32, N: i32 D, K: i32 D,[^\n]*\\(M unspecialised"
             "${wide}" 2)
run(0 "layer 0 autotune, key \\[M\\], rule for keys nobody tuned: M=nearest\n"
      "layer 0 heuristic 'BLOCK_H': triton.next_power_of_2\\(args\\[\"HEADS\"\\]\\)"
  ARGS list "${WIDENED}")
# Widening again adds nothing: every twin is there.
run(0 "wrote again.teb: 5 kernels, [0-9]+ entries \\(0 added, 0 bytes of code\\)"
  ARGS widen -o again.teb --python-path "${KERNELS}" "${WIDENED}")

# ---- bad options that fail before Python loads ------------------------------------------
run(2 "triton-embed-bundle: widen: --rule 'nearest': expected MODULE:KERNEL=RULE"
  ARGS widen -o bad.teb --rule nearest "${RECORDED}")
run(2 "triton-embed-bundle: widen: --values ${wk}.rope_kernel:BATCH: values: '1,2,x': 'x' is not an integer"
  ARGS widen -o bad.teb --values "${wk}:rope_kernel:BATCH=1,2,x" "${RECORDED}")
run(2 "triton-embed-bundle: widen: give the bundle to widen" ARGS widen -o bad.teb)

# A sanitizer build (SANITIZED) stops here: the parts below load Python and compile again, some
# 30 times slower under the sanitizers' runtime, through the same code as above (the default
# build runs them).
if(SANITIZED)
  return()
endif()
# ---- two targets, and a kernel whose source changed ----------------------------------------
file(MAKE_DIRECTORY "${WORK_DIR}/edit")
file(WRITE "${WORK_DIR}/edit/te_widen_edit.py" "import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
")
file(WRITE "${WORK_DIR}/edit.calls"
     "te_widen_edit:scale_kernel *fp32 *fp32 i32:16 128 @cuda:80 @cuda:90\n"
     "${wk}:rows_kernel *fp32 *fp32 *fp32 i32:16 i32:16 i32:16 1e-6 BLOCK=1024 @cuda:90\n")
run(0 "wrote two.teb: 2 kernels, 3 entries"
  ARGS build -o two.teb --python-path "${WORK_DIR}/edit" --python-path "${KERNELS}" edit.calls)
run(0 "added: cuda:80 te_widen_edit.scale_kernel: scale_kernel\\(x_ptr: \\*fp32 D, out_ptr: \\*fp32 D, n: i32, BLOCK: constexpr = 128\\) \\(integers unspecialised;"
      "added: cuda:90 te_widen_edit.scale_kernel: scale_kernel\\(x_ptr: \\*fp32 D, out_ptr: \\*fp32 D, n: i32, BLOCK: constexpr = 128\\) \\(integers unspecialised;"
  ARGS widen -o two_wide.teb --python-path "${WORK_DIR}/edit" --python-path "${KERNELS}" two.teb)
file(WRITE "${WORK_DIR}/edit/te_widen_edit.py" "import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)
")
run(0 "not added: te_widen_edit.scale_kernel its entries: its source has changed since the bundle was made \\(source hash [0-9a-f]+ there, [0-9a-f]+ now\\)"
      "added: cuda:90 ${wk}.rows_kernel: [^\n]*\\(integers unspecialised"
      "wrote edited.teb: 2 kernels, [0-9]+ entries \\([0-9]+ added, [0-9]+ bytes of code\\), [^\n]*; 1 not added\n"
  ARGS widen -o edited.teb --python-path "${WORK_DIR}/edit" --python-path "${KERNELS}" two.teb)

# ---- bad options found with Python -----------------------------------------------------------
run(1 "triton-embed-bundle: widen: values of ${wk}.rows_kernel.n_rows: not a tl.constexpr parameter \\(runtime integers are unspecialised without values\\)"
  ARGS widen -o bad.teb --python-path "${KERNELS}" --values "${wk}:rows_kernel:n_rows=1,2"
       "${RECORDED}")
run(1 "triton-embed-bundle: widen: values of ${wk}.rope_heur_kernel.BLOCK_H: the kernel's heuristics set it"
  ARGS widen -o bad.teb --python-path "${KERNELS}" --values "${wk}:rope_heur_kernel:BLOCK_H=4,8"
       "${RECORDED}")
run(1 "triton-embed-bundle: widen: values of ${wk}.mm_kernel.BLOCK_M: the kernel's autotune configs set it"
  ARGS widen -o bad.teb --python-path "${KERNELS}" --values "${wk}:mm_kernel:BLOCK_M=16,32"
       "${RECORDED}")
run(1 "triton-embed-bundle: widen: a rule for ${wk}.nope, which bundle [^\n]* does not hold"
  ARGS widen -o bad.teb --python-path "${KERNELS}" --rule "${wk}:nope=nearest" "${RECORDED}")
run(1 "triton-embed-bundle: widen: the rule 'closest' for ${wk}.mm_kernel: 'closest' is not a rule"
  ARGS widen -o bad.teb --python-path "${KERNELS}" --rule "${wk}:mm_kernel=closest" "${RECORDED}")
file(GLOB left "${WORK_DIR}/bad.teb*")
if(left)
  message(FATAL_ERROR "a failed widen left ${left} behind")
endif()
# A rule that names no key argument: reported, the rest written.
run(0 "not added: ${wk}.mm_kernel the rule 'q=nearest': it names 'q', which is no key argument of the autotuner \\(its key: M\\)"
  ARGS widen -o q.teb --python-path "${KERNELS}" --no-generic --rule "${wk}:mm_kernel=q=nearest"
       "${RECORDED}")
