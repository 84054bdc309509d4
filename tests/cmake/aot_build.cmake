# `triton-embed-bundle build` end to end, without a GPU. Each step checks the exit status and
# the whole output (stdout and stderr; WORK_DIR reads DIR, BUILD_DIR reads BUILD).
#   PART=build   builds tests/aot/calls.txt for cuda:80, cuda:90 and cuda:100 into
#                WORK_DIR/aot.teb and tests/aot/te_calls.txt (through --python-path KERNELS)
#                into WORK_DIR/te_calls.teb, lists both and merges them
#   PART=errors  bad calls files and calls: the message, and no output file
#   PART=fallback  builds tests/aot/fallback_calls.txt (generic `:any` entries next to
#                specialised ones) for cuda:90 into WORK_DIR/fallback.teb
#   PART=tune    tunes tests/aot/tune_calls.txt (fake-timing autotuners, value lists, #rule
#                and --rule) compile-only for cuda:90 into WORK_DIR/tune.teb and lists it
# Inputs: TOOL, PART, SOURCE_DIR, BUILD_DIR, WORK_DIR, KERNELS (tests/kernels).

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(COPY "${SOURCE_DIR}/tests/aot/calls.txt" "${SOURCE_DIR}/tests/aot/te_calls.txt"
     "${SOURCE_DIR}/tests/aot/fallback_calls.txt" "${SOURCE_DIR}/tests/aot/tune_calls.txt"
     DESTINATION "${WORK_DIR}")
# Only --python-path may put tests/kernels on sys.path here.
unset(ENV{TRITON_EMBED_PYTHONPATH})

# The output with what varies from run to run (hashes, sizes, versions) replaced.
function(normalise var text)
  string(REPLACE "${WORK_DIR}" "DIR" text "${text}")
  string(REPLACE "${BUILD_DIR}" "BUILD" text "${text}")
  string(REGEX REPLACE "hash [0-9a-f]+" "hash H" text "${text}")
  string(REGEX REPLACE "(cubin|ptx|version 2,) [0-9]+ bytes" "\\1 N bytes" text "${text}")
  string(REGEX REPLACE "triton_embed [0-9.]+ \\(Triton [0-9.]+\\)" "triton_embed V (Triton V)"
         text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

# run(<expected status> <expected output> <args>...): the tool's output, stdout and then what it
# wrote to stderr itself, must be <expected output>. The tool's own stderr starts at its first
# line that starts with "triton-embed-bundle: " (a message, then perhaps the usage); what comes
# before it is what the installed Triton printed while compiling (warnings, whose text is
# Triton's), which is left out.
function(run expect_rc expect_out)
  execute_process(COMMAND "${TOOL}" ${ARGN} WORKING_DIRECTORY "${WORK_DIR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(ours "")
  if(err MATCHES "^triton-embed-bundle: ")
    set(ours "${err}")
  else()
    string(FIND "${err}" "\ntriton-embed-bundle: " at)
    if(at GREATER -1)
      math(EXPR at "${at} + 1")
      string(SUBSTRING "${err}" ${at} -1 ours)
    endif()
  endif()
  normalise(got "${out}${ours}")
  if(NOT "${rc}" STREQUAL "${expect_rc}" OR NOT "${got}" STREQUAL "${expect_out}")
    message(FATAL_ERROR "triton-embed-bundle ${ARGN}: exit status ${rc} (expected ${expect_rc}), "
                        "output:\n${got}\nexpected:\n${expect_out}\nstderr:\n${err}")
  endif()
endfunction()

# fails(<calls file text> <expected message>): build refuses it (status 1) and writes nothing.
# same_on_one_worker(<bundle> <output> <tool args>...): the tool run again on one compile
# worker (TRITON_EMBED_COMPILE_WORKERS=1), writing <bundle>'s name with _serial, writes the same
# bytes as <bundle> and prints <output> (naming <bundle>) on stdout.
function(same_on_one_worker bundle output)
  string(REPLACE ".teb" "_serial.teb" serial "${bundle}")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env TRITON_EMBED_COMPILE_WORKERS=1
                          "${TOOL}" ${ARGN} -o "${serial}"
                  WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  string(REPLACE "${serial}" "${bundle}" out "${out}")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${bundle}" "${serial}"
                  WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE same)
  if(NOT rc EQUAL 0 OR NOT same EQUAL 0 OR NOT out STREQUAL output)
    message(FATAL_ERROR "${ARGV2} on one worker: exit status ${rc}, bundles differ: ${same}, "
                        "output:\n${out}\nexpected:\n${output}\n${err}")
  endif()
endfunction()

function(fails text message)
  file(WRITE "${WORK_DIR}/bad.txt" "${text}")
  run(1 "triton-embed-bundle: ${message}\n" build --target cuda:90 -o bad.teb bad.txt)
  file(GLOB left "${WORK_DIR}/bad.teb*")
  if(left)
    message(FATAL_ERROR "a failed build left ${left} behind")
  endif()
endfunction()

set(add "pykernels.vector.add_kernel: add_kernel")
set(fp32x3 "x_ptr: *fp32 D, y_ptr: *fp32 D, out_ptr: *fp32 D")
set(fp16x3 "x_ptr: *fp16, y_ptr: *fp16, out_ptr: *fp16")
set(axpy "axpy_kernel(${fp32x3}, alpha: fp32, n_elements: i32 D, BLOCK: constexpr = 512)")
set(axpy_line "pykernels.vector.axpy_kernel: ${axpy} [num_warps=2]")

include("${CMAKE_CURRENT_LIST_DIR}/tool_usage.cmake")

if(PART STREQUAL "build")
  set(summary "")
  foreach(call
      "6: TARGET ${add}(${fp32x3}, n_elements: i32 D, BLOCK: constexpr = 1024)"
      "7: TARGET ${add}(${fp32x3}, n_elements: i32, BLOCK: constexpr = 1024)"
      "8: TARGET ${add}(${fp16x3}, n_elements: i32 D, BLOCK: constexpr = 1024)"
      "10: TARGET ${add}(${fp32x3}, n_elements: i32 D, BLOCK: constexpr = 1024) [num_warps=8]"
      "13: TARGET ${axpy_line}")
    foreach(target cuda:80 cuda:90 cuda:100)
      string(REPLACE "TARGET" "${target}" line "${call}")
      string(APPEND summary "calls.txt:${line}\n")
    endforeach()
  endforeach()
  string(APPEND summary "wrote aot.teb: 2 kernels, 15 entries, 0 records from 5 calls\n")
  run(0 "${summary}" build --target cuda:80 --target cuda:90 -o aot.teb --target cuda:100 calls.txt)

  # Every entry, in the order built (options as the bundle stores them).
  set(listing "bundle aot.teb: format version 2, N bytes
  written by triton_embed V (Triton V)
  note: built ahead of time by triton-embed-bundle from calls.txt
  2 kernels, 15 entries, 0 records
kernel #0 pykernels.vector.add_kernel: source hash H\n")
  set(i 0)
  foreach(entry
      "'': hash H, key 4 words, signature 'add_kernel(${fp32x3}, n_elements: i32 D, BLOCK: constexpr = 1024)'"
      "'': hash H, key 4 words, signature 'add_kernel(${fp32x3}, n_elements: i32, BLOCK: constexpr = 1024)'"
      "'': hash H, key 4 words, signature 'add_kernel(${fp16x3}, n_elements: i32 D, BLOCK: constexpr = 1024)'"
      "'num_warps=8': hash H, key 4 words, signature 'add_kernel(${fp32x3}, n_elements: i32 D, BLOCK: constexpr = 1024)'"
      "KERNEL1'num_warps=2': hash H, key 4 words, signature '${axpy}'")
    if(entry MATCHES "^KERNEL1")
      string(APPEND listing "kernel #1 pykernels.vector.axpy_kernel: source hash H\n")
      string(REPLACE "KERNEL1" "" entry "${entry}")
    endif()
    foreach(target cuda:80 cuda:90 cuda:100)
      string(APPEND listing "  entry #${i} ${target} ${entry}, cubin N bytes, ptx N bytes\n")
      math(EXPR i "${i} + 1")
    endforeach()
  endforeach()
  run(0 "${listing}" list aot.teb)
  # The calls and targets compile in parallel: one at a time, the same output and bytes.
  same_on_one_worker(aot.teb "${summary}" build --target cuda:80 --target cuda:90
                     --target cuda:100 calls.txt)

  # A module only --python-path finds; a line with a target of its own.
  set(te "te_compile_kernels")
  run(0 "te_calls.txt:4: cuda:90 ${te}.dtype_kernel: dtype_kernel(x_ptr: *fp32 D, out_ptr: *fp16 D, n: i32 D, OUT_DTYPE: constexpr = triton.language.float16, MODE: constexpr = 'double', BLOCK: constexpr = 128)
te_calls.txt:5: cuda:90 ${te}.annotated_kernel: annotated_kernel(x_ptr: *fp32 D, out_ptr: *fp32 D, n: i64, alpha: fp16, flag: u1, BLOCK: constexpr = 256)
te_calls.txt:6: cuda:90 ${te}.flags_kernel: flags_kernel(x_ptr: *fp32, out_ptr: *fp32 D, n: i32, BLOCK: constexpr = 64)
te_calls.txt:7: cuda:80 ${te}.scale_kernel: scale_kernel(x_ptr: *fp32 D, out_ptr: *fp32 D, scale: fp32, n: constexpr = 1, BLOCK: constexpr = 256)
wrote te_calls.teb: 4 kernels, 4 entries, 0 records from 4 calls
" build --target cuda:90 --python-path "${KERNELS}" -o te_calls.teb te_calls.txt)

  run(0 "wrote all.teb: 6 kernels, 19 entries, 0 records from 2 bundles\n"
      merge -o all.teb aot.teb te_calls.teb)

elseif(PART STREQUAL "errors")
  # The calls file: checked whole before Python starts. Line numbers count comments, blank
  # lines and continued lines.
  fails("pykernels.vector:add_kernel *fp32 *fp32 *fp32 i32:8 1024\n"
        "bad.txt:1: argument 4: 'i32:8': unknown specialisation ':8'; expected i32 (not divisible by 16), i32:16 (divisible by 16) or i32:any (no assumption: serves every value)")
  fails("pykernels.vector:add_kernel *fp32:none *fp32 *fp32 i32 1024\n"
        "bad.txt:1: argument 1: '*fp32:none': unknown alignment ':none'; expected *fp32 or *fp32:16 (16-byte aligned), *fp32:unaligned or *fp32:any (no alignment assumption)")
  fails("pykernels.vector:add_kernel *fp32 *fp32 *fp32 fp32:any 1024\n"
        "bad.txt:1: argument 4: 'fp32:any': fp32 takes no ':' suffix; expected fp32")
  fails("# header\n\npykernels.vector:add_kernel *fp32 *fp32 \\\n    *fp32 i32 1024\nadd_kernel *fp32\n"
        "bad.txt:5: 'add_kernel' is not a kernel; expected MODULE:KERNEL or MODULE.KERNEL first (e.g. pykernels.vector:add_kernel)")
  fails("pykernels.vector:add_kernel *fp32 *fp32 *fp32 *fp99 1024\n"
        "bad.txt:1: argument 4: '*fp99': 'fp99' is not an element type; expected a pointer as *DTYPE with a Triton type (e.g. *fp32, *fp16, *bf16, *i64, *u8)")
  fails("pykernels.vector:add_kernel *fp32 *fp32 *fp32 n_elements=16 1024\n"
        "bad.txt:1: the positional argument '1024' follows the named argument 'n_elements=...'; expected positional arguments first, then NAME=VALUE items (as in Python)")
  fails("pykernels.vector:add_kernel *fp32 *fp32 *fp32 16 BLOCK=1024 BLOCK=512\n"
        "bad.txt:1: 'BLOCK' is given twice; expected each NAME=VALUE once")
  fails("\npykernels.vector:add_kernel *fp32 *fp32 *fp32 16 BLOCK=\"1024\n"
        "bad.txt:2: a string opened with \" is not closed on its line; expected a closing \"")
  fails("pykernels.vector:add_kernel *fp32 *fp32 *fp32 16 1024 @gpu\n"
        "bad.txt:1: '@gpu': invalid target 'gpu': expected 'cuda:<arch>' (e.g. cuda:90), 'cuda:<arch>:<warp size>', 'sm_90' or '90'")
  fails("pykernels.vector:add_kernel *fp32 *fp32 *fp32 16 \\\n"
        "bad.txt:1: the last line ends with '\\'; expected another line to continue it")
  run(1 "triton-embed-bundle: calls.txt:6: no target for this call; give --target TARGET (e.g. --target cuda:90) or @TARGET on the line\n"
      build -o x.teb calls.txt)
  run(1 "triton-embed-bundle: calls file missing.txt: cannot open it: No such file or directory; check the path\n"
      build --target cuda:90 -o x.teb missing.txt)
  run(2 "triton-embed-bundle: build: give the output file with -o OUT\n${usage}"
      build --target cuda:90 calls.txt)
  run(2 "triton-embed-bundle: build: --target: invalid target 'gpu': expected 'cuda:<arch>' (e.g. cuda:90), 'cuda:<arch>:<warp size>', 'sm_90' or '90'\n${usage}"
      build --target gpu -o x.teb calls.txt)

  # The calls: the kernels are loaded and the calls bound, with Python.
  fails("pykernels.vector:nope *fp32\n"
        "bad.txt:1: cannot load kernel pykernels.vector.nope: module 'pykernels.vector' (BUILD/python/pykernels/vector.py) has no attribute 'nope'; its kernels are: add_kernel, axpy_kernel")
  fails("pykernels.vector:add_kernel *fp32 *fp32 *fp32 i32:16 i32\n"
        "bad.txt:1: add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): argument #4 'BLOCK': a tl.constexpr parameter takes a value (e.g. 1024, true, \"text\", tl.float16), not the type 'i32'")
  fails("pykernels.vector:add_kernel *fp32 *fp32 *fp32 i32:16\n"
        "bad.txt:1: for cuda:90: add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): expected 5 arguments, got 4")
  # The calls compile at once, but the first error is a loop's: the first line's compile error
  # before the second line's kernel, which does not load.
  fails("pykernels.vector:add_kernel *fp32 *fp32 *fp32 i32:16\npykernels.vector:nope *fp32\n"
        "bad.txt:1: for cuda:90: add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): expected 5 arguments, got 4")
  fails("pykernels.matmul:matmul_kernel *fp16 *fp16 *fp16 i32:16 i32:16 i32:16 i32:16 1 i32:16 1 i32:16 1\n"
        "bad.txt:1: pykernels.matmul.matmul_kernel is wrapped in @triton.autotune, and tuning runs the kernel on a GPU, which `triton-embed-bundle build` does not use; tune it with `triton-embed-bundle tune` on the GPU (or record its bundle from a run there: TRITON_EMBED_RECORD=FILE) and merge that bundle with this one")
  # A @triton.heuristics kernel: its heuristic runs in Python at build time, and the bundle
  # holds the kernel as wrapped, its inner kernel's entry and the heuristic's result (num_warps).
  set(softmax "softmax_fwd_kernel(x_ptr: *fp32 D, y_ptr: *fp32 D, n_cols: i32, x_row_stride: i32, y_row_stride: i32, BLOCK: constexpr = 1024, COMPUTE: constexpr = triton.language.float32)")
  file(WRITE "${WORK_DIR}/heur.txt"
       "pykernels.softmax:softmax_fwd_kernel *fp32 *fp32 i32 i32 i32 BLOCK=1024 COMPUTE=tl.float32\n")
  run(0 "heur.txt:1: cuda:90 pykernels.softmax.softmax_fwd_kernel: ${softmax}
wrote heur.teb: 1 kernel, 1 entry, 1 record from 1 call\n" build --target cuda:90 -o heur.teb heur.txt)
  run(0 "bundle heur.teb: format version 2, N bytes
  written by triton_embed V (Triton V)
  note: built ahead of time by triton-embed-bundle from heur.txt
  1 kernel, 1 entry, 1 record
kernel #0 pykernels.softmax.softmax_fwd_kernel: source hash H, heuristics
  entry #0 cuda:90 'num_warps=4': hash H, key 6 words, signature '${softmax}', cubin N bytes, ptx N bytes
  1 record
kernel #0 pykernels.softmax.softmax_fwd_kernel: layers, outermost first
  layer 0 heuristic 'num_warps': (16 if (args[\"BLOCK\"] >= 4096) else (8 if (args[\"BLOCK\"] >= 2048) else 4))\n" list heur.teb)
  # Without --python-path the module of te_calls.txt is not found.
  execute_process(COMMAND "${TOOL}" build --target cuda:90 -o x.teb te_calls.txt
                  WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "^triton-embed-bundle: te_calls.txt:4: cannot load kernel te_compile_kernels.dtype_kernel: no module named 'te_compile_kernels'")
    message(FATAL_ERROR "build without --python-path: exit status ${rc}, output:\n${err}")
  endif()
  file(GLOB left "${WORK_DIR}/x.teb*")
  if(left)
    message(FATAL_ERROR "a failed build left ${left} behind")
  endif()
elseif(PART STREQUAL "fallback")
  # `:any` compiles the entry with no assumption: no D on the pointer or the integer.
  set(any "*fp32, n_elements: i32, BLOCK: constexpr = 1024)")
  run(0 "fallback_calls.txt:5: cuda:90 ${add}(x_ptr: *fp16 D, y_ptr: *fp16 D, out_ptr: *fp16 D, n_elements: i32 D, BLOCK: constexpr = 1024)
fallback_calls.txt:6: cuda:90 ${add}(${fp32x3}, n_elements: i32, BLOCK: constexpr = 1024)
fallback_calls.txt:7: cuda:90 ${add}(x_ptr: *fp32 D, y_ptr: *fp32, out_ptr: ${any}
fallback_calls.txt:8: cuda:90 ${add}(x_ptr: *fp32, y_ptr: *fp32 D, out_ptr: ${any}
fallback_calls.txt:9: cuda:90 ${add}(x_ptr: *fp32, y_ptr: *fp32, out_ptr: ${any}
wrote fallback.teb: 1 kernel, 5 entries, 0 records from 5 calls
" build --target cuda:90 -o fallback.teb fallback_calls.txt)
elseif(PART STREQUAL "tune")
  # Config strings differ between Triton versions (ir_override): checked by their start.
  set(tune_args tune --target cuda:90 --python-path "${KERNELS}"
                --rule te_tune_kernels:rule_pow2_kernel=bucket:pow2 tune_calls.txt)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env TRITON_EMBED_COMPILE_WORKERS=2
                          "${TOOL}" ${tune_args} -o tune.teb
                  WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  set(sig "(x_ptr: *fp32 D, out_ptr: *fp32 D, n: i32, m: i32, MODE: constexpr = 'mul', BLOCK: constexpr =")
  set(f32 "'torch.float32', 'torch.float32'")
  foreach(want
      "tune_calls.txt:6: cuda:90 te_tune_kernels.rule_nearest_kernel: rule_nearest_kernel${sig} 4096)\n"
      "tune_calls.txt:7: cuda:90 te_tune_kernels.rule_pow2_kernel: rule_pow2_kernel${sig} 128)\n"
      "tune_calls.txt:6: cuda:90 te_tune_kernels.rule_nearest_kernel key (256, ${f32}): BLOCK: 256, num_warps: 4,"
      "tune_calls.txt:7: cuda:90 te_tune_kernels.rule_pow2_kernel key (32, ${f32}): BLOCK: 16, num_warps: 4,"
      "tune_calls.txt:7: cuda:90 te_tune_kernels.rule_pow2_kernel key (64, ${f32}): BLOCK: 128, num_warps: 4,"
      "wrote tune.teb: 2 kernels, 6 entries, 10 records from 8 calls\n")
    string(FIND "${out}" "${want}" at)
    if(NOT rc EQUAL 0 OR at EQUAL -1)
      message(FATAL_ERROR "tune: exit status ${rc}, no line '${want}' in:\n${out}\nstderr:\n${err}")
    endif()
  endforeach()
  # Progress: kernel, key, configs done of total, the best so far, and the time compiling (on
  # the worker processes) apart from the time benchmarking.
  set(want "tune: te_tune_kernels.rule_nearest_kernel key (4096, ${f32}): 4/4 configs, best so far BLOCK: 4096,")
  string(FIND "${err}" "${want}" at)
  if(at EQUAL -1 OR NOT err MATCHES "configs, best so far [^\n]*; compiled in [0-9.e-]+ s on 2 worker processes, benchmarked in [0-9.e-]+ s\n")
    message(FATAL_ERROR "tune: no progress line '${want}' (compile and benchmark times) in:\n${err}")
  endif()
  # Every key's configs compiled in parallel, then tuned one at a time: on one worker, the same
  # choices and the same bundle.
  same_on_one_worker(tune.teb "${out}" ${tune_args})
  execute_process(COMMAND "${TOOL}" list tune.teb WORKING_DIRECTORY "${WORK_DIR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  foreach(want
      "kernel #0 te_tune_kernels.rule_nearest_kernel: layers, outermost first\n  layer 0 autotune, key [n], rule for keys nobody tuned: nearest\n    cuda:90 key (16, ${f32}): BLOCK: 16,"
      "  layer 0 autotune, key [n], rule for keys nobody tuned: bucket:pow2\n")
    string(FIND "${out}" "${want}" at)
    if(NOT rc EQUAL 0 OR at EQUAL -1)
      message(FATAL_ERROR "list tune.teb: exit status ${rc}, no '${want}' in:\n${out}${err}")
    endif()
  endforeach()
  # What tune refuses: a rule that does not parse, a value list that is not one, no target
  # and no GPU (CI has none), and an autotuned kernel given to build.
  file(WRITE "${WORK_DIR}/bad_rule.txt" "#rule te_tune_kernels:rule_exact_kernel bucket:9,3\n")
  run(1 "triton-embed-bundle: bad_rule.txt:1: set_tuning_rule(\"te_tune_kernels.rule_exact_kernel\", \"bucket:9,3\"): 'bucket:9,3': the bounds must ascend\n"
      tune --target cuda:90 -o bad.teb bad_rule.txt)
  run(2 "triton-embed-bundle: tune: --rule 'nearest': expected MODULE:KERNEL=RULE, e.g. --rule pykernels.matmul:matmul_kernel=nearest\n${usage}"
      tune --target cuda:90 -o bad.teb --rule nearest tune_calls.txt)
  file(WRITE "${WORK_DIR}/bad_grid.txt" "#grid te_tune_kernels:rule_exact_kernel cdiv(n, BLOCK\n")
  run(1 "triton-embed-bundle: bad_grid.txt:1: #grid 'cdiv(n, BLOCK': expected ')' at column 14\n"
      tune --target cuda:90 -o bad.teb bad_grid.txt)
  file(WRITE "${WORK_DIR}/bad_list.txt" "te_tune_kernels:rule_exact_kernel *fp32 *fp32 1,2,5,...,64 8 'mul'\n")
  run(1 "triton-embed-bundle: bad_list.txt:1: argument 3: '1,2,5,...,64': the values before '...' have no constant step or ratio; expected a value list of integers, e.g. 16,256,4096 or 1,2,4,...,65536\n"
      tune --target cuda:90 -o bad.teb bad_list.txt)
  file(WRITE "${WORK_DIR}/no_gpu.txt" "te_tune_kernels:rule_exact_kernel *fp32 *fp32 16 8 'mul'\n")
  # (No driver, as on CI, also where the tests run on a GPU.)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env TRITON_EMBED_LIBCUDA=/nonexistent/libcuda.so.1
                          "${TOOL}" tune --python-path "${KERNELS}" -o bad.teb no_gpu.txt
                  WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "no_gpu.txt:1: no target for this call and no GPU to tune on")
    message(FATAL_ERROR "tune without a GPU: exit status ${rc}:\n${err}")
  endif()
  execute_process(COMMAND "${TOOL}" build --target cuda:90 --python-path "${KERNELS}" -o bad.teb no_gpu.txt
                  WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "tune it with `triton-embed-bundle tune` on the GPU")
    message(FATAL_ERROR "build of an autotuned kernel: exit status ${rc}:\n${err}")
  endif()
  file(GLOB left "${WORK_DIR}/bad.teb*")
  if(left)
    message(FATAL_ERROR "a failed tune left ${left} behind")
  endif()
else()
  message(FATAL_ERROR "PART must be build, errors, fallback or tune, not '${PART}'")
endif()
