# gtest_suites_in_processes: the suites each process of a gtest executable run in parts names
# (TABLE, which tests/CMakeLists.txt writes from the lists it registers the tests with: one
# gtest_processes(<executable> <file> <kind>:<who>:<item>,...) per executable) against the
# suites and tests the executable has (--gtest_list_tests: it runs no test). Fails when a named
# suite or test does not exist, when two processes that should be disjoint run one suite, or
# when no process runs a suite.

cmake_minimum_required(VERSION 3.22)

set_property(GLOBAL PROPERTY failures "")
function(fail)
  string(CONCAT text ${ARGV})
  set_property(GLOBAL APPEND PROPERTY failures "${text}")
endfunction()

function(gtest_processes exe file)
  # --gtest_filter=*: the sanitizer builds' GTEST_FILTER would list only part of it.
  execute_process(COMMAND "${file}" --gtest_list_tests "--gtest_filter=*"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    fail("${exe}: --gtest_list_tests: exit status ${rc}: ${err}")
    return()
  endif()
  # "Suite." then "  Test" lines (a parameterised one's comment after "  #"); brackets and
  # semicolons would cut CMake's list in other places than the lines.
  string(REGEX REPLACE "[][;]" "_" out "${out}")
  string(REPLACE "\n" ";" lines "${out}")
  set(suites "")
  set(tests "")
  set(suite "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^  ([^ ]+)")
      list(APPEND tests "${suite}.${CMAKE_MATCH_1}")
    elseif(line MATCHES "^([^ ]+)[.]( .*)?$")
      set(suite "${CMAKE_MATCH_1}")
      list(APPEND suites "${suite}")
    endif()
  endforeach()
  if(suites STREQUAL "")
    fail("${exe}: --gtest_list_tests lists no suite: ${out}")
    return()
  endif()

  set(whole "")
  set(processes 0)
  foreach(row IN LISTS ARGN)
    string(REPLACE ":" ";" fields "${row}")
    list(GET fields 0 kind)
    list(GET fields 1 who)
    if(kind STREQUAL "whole")
      list(APPEND whole "${who}")
      continue()
    endif()
    list(GET fields 2 items)
    string(REPLACE "," ";" items "${items}")
    if(kind STREQUAL "part" OR kind STREQUAL "rerun")
      math(EXPR processes "${processes} + 1")
    endif()
    foreach(item IN LISTS items)
      if(kind STREQUAL "tests")
        if(NOT item IN_LIST tests)
          fail("${exe}: ${who} runs the test ${item}, which ${exe} does not have")
        endif()
        continue()
      endif()
      if(NOT item IN_LIST suites)
        fail("${exe}: ${who} names the suite ${item}, which ${exe} does not have")
      endif()
      if(kind STREQUAL "rerun")
        continue()
      endif()
      if(DEFINED run_${item})
        fail("${exe}: the suite ${item} is run by both ${run_${item}} and ${who}: a suite is one "
             "process's (mark a run in another environment RERUN)")
      else()
        set(run_${item} "${who}")
      endif()
    endforeach()
  endforeach()

  foreach(s IN LISTS suites)
    if(whole AND DEFINED run_${s})
      fail("${exe}: ${whole} runs every suite, and ${run_${s}} runs ${s} too")
    elseif(NOT whole AND NOT DEFINED run_${s})
      fail("${exe}: no process runs the suite ${s}: name it in a test's GTEST ${exe} SUITES "
           "(or in te_gtest_not_run) in tests/CMakeLists.txt")
    endif()
  endforeach()
  list(LENGTH suites n)
  message(STATUS "${exe}: ${n} suites; tests that run parts of it: ${processes}")
endfunction()

include("${TABLE}")

get_property(failures GLOBAL PROPERTY failures)
if(failures)
  list(JOIN failures "\n" text)
  message(FATAL_ERROR "${text}")
endif()
