# Runs the probe (COMMAND) and checks the Triton its embedded interpreter imported: the version
# in $TE_EXPECT_TRITON when set (./dev.sh versions sets it for each environment it tests).
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "triton=([0-9.a-z+]+) ")
  message(FATAL_ERROR "the probe failed (exit status ${rc}):\n${out}${err}")
endif()
set(triton "${CMAKE_MATCH_1}")
if(DEFINED ENV{TE_EXPECT_TRITON} AND NOT triton STREQUAL "$ENV{TE_EXPECT_TRITON}")
  message(FATAL_ERROR "the embedded interpreter imported Triton ${triton}, expected "
                      "$ENV{TE_EXPECT_TRITON} (TRITON_EMBED_PYTHON=$ENV{TRITON_EMBED_PYTHON})")
endif()
