# triton_embed_embed_bundle(<target> <bundle-file> [NAME <name>])
#
# Embeds the kernel bundle <bundle-file> (.teb) into <target>, an executable or a shared or
# module library, so that it carries its kernels: no bundle file to ship beside it, no
# TRITON_EMBED_BUNDLE to set.
#
#   add_executable(my_server main.cc)
#   target_link_libraries(my_server PRIVATE triton_embed::runtime)   # no Python
#   triton_embed_embed_bundle(my_server ${CMAKE_CURRENT_SOURCE_DIR}/kernels.teb)
#
# What it does: it adds to <target> a generated C++ source that holds the bundle's bytes
# (assembler .incbin, in a read-only section, 4096-byte aligned, so cubins keep the 256-byte
# alignment the format gives them) and hands them to triton_embed::load_bundle_from_memory
# from a static initialiser, before main() and before the target's own static objects (a
# static JitFunction finds its kernel). The bytes are not copied. It links <target> to
# triton_embed::runtime with target_link_libraries(<target> PRIVATE ...), so the target's
# other target_link_libraries calls must use the keyword form too.
#
#   <bundle-file>  a path (relative: to the current source directory); <target> is rebuilt
#                  when it changes. It must exist when CMake runs, or be the OUTPUT (or
#                  BYPRODUCT) of an add_custom_command called before this function: a custom
#                  command of this directory then runs as part of <target>; one of another
#                  directory needs add_dependencies(<target> <its target>).
#   NAME <name>    what errors call the bundle (NotInBundleError lists entries by it);
#                  default "<file name> embedded in <target>".
#
# Several bundles can be embedded in one target, and the same bundle in several targets
# (each embedding's symbols are hidden and named after its target and bundle).
#
# Order: bundles are searched in the order they were loaded, and the first entry that
# matches a launch is used. Embedded bundles load before main(): those of shared libraries
# before the executable's (their initialisers run first), several in one target in the
# order of these calls. TRITON_EMBED_BUNDLE's files load later, on the first kernel load, and
# load_bundle() calls when they are made. An embedded bundle therefore wins over a
# TRITON_EMBED_BUNDLE file for a specialisation both hold; the file adds what it lacks. A
# shared library's static objects are initialised before the executable's bundles load: embed
# the bundle into the library whose static JitFunction objects need it.
#
# A bundle the runtime refuses (damaged, or in a format newer than the linked
# libtriton_embed_runtime reads) cannot be reported to a caller before main(): the program
# prints the BundleError to stderr, naming the target and the file embedded, and aborts:
#   triton_embed: cannot load the kernel bundle embedded in my_server from /src/kernels.teb:
#   bundle kernels.teb embedded in my_server: corrupt: ...
# Linux (ELF), GCC or Clang. Not for static libraries: a linker keeps an object of a static
# library only when something refers to it, and nothing refers to this one; embed the bundle
# into the executable or shared library that links it.

include_guard(GLOBAL)

function(triton_embed_embed_bundle target bundle)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "NAME" "")
  set(where "triton_embed_embed_bundle(${target} ${bundle})")
  if(ARG_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "${where}: NAME needs a value (NAME <name>)")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${where}: unknown arguments '${ARG_UNPARSED_ARGUMENTS}'; the only "
                        "option is NAME <name>")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "${where}: no target '${target}'; call it after add_executable() or "
                        "add_library()")
  endif()
  get_target_property(type ${target} TYPE)
  get_target_property(imported ${target} IMPORTED)
  get_target_property(aliased ${target} ALIASED_TARGET)
  if(imported OR aliased)
    message(FATAL_ERROR "${where}: '${target}' is an imported or alias target; give the name of "
                        "an executable or library this project builds")
  endif()
  if(NOT type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY)$")
    message(FATAL_ERROR "${where}: '${target}' is a ${type}; embed a bundle into an executable "
                        "or a shared or module library (an object of a static library is linked "
                        "only when something refers to it, and nothing refers to the bundle)")
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CXX" IN_LIST languages)
    message(FATAL_ERROR "${where}: the bundle's loader is C++; enable CXX (project(... LANGUAGES "
                        "CXX) or enable_language(CXX))")
  endif()
  if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux"
     OR NOT CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$")
    message(FATAL_ERROR "${where}: embedding needs Linux with GCC or Clang (ELF and the GNU "
                        "assembler's .incbin), not ${CMAKE_SYSTEM_NAME} with "
                        "${CMAKE_CXX_COMPILER_ID}")
  endif()

  get_filename_component(file "${bundle}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_source_file_property(generated "${file}" GENERATED)
  if(IS_DIRECTORY "${file}")
    message(FATAL_ERROR "${where}: ${file} is a directory; give a bundle file (.teb)")
  endif()
  if(NOT EXISTS "${file}" AND NOT generated)
    message(FATAL_ERROR "${where}: ${file} does not exist and no custom command makes it; give "
                        "a bundle written by triton_embed (TRITON_EMBED_RECORD, "
                        "triton_embed::write_bundle), or call add_custom_command(OUTPUT "
                        "${file} ...) before this")
  endif()
  # The path goes into an assembler string inside a C++ raw string literal.
  foreach(bad IN ITEMS "\"" "\\" "\n")
    string(FIND "${file}" "${bad}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${where}: the path ${file} has a character .incbin cannot take (\", \\ "
                          "or a newline); move the bundle")
    endif()
  endforeach()

  get_filename_component(file_name "${file}" NAME)
  if(DEFINED ARG_NAME)
    set(name "${ARG_NAME}")
  else()
    set(name "${file_name} embedded in ${target}")
  endif()
  get_target_property(embedded ${target} TRITON_EMBED_EMBEDDED_BUNDLES)
  if(NOT embedded)
    set(embedded "")
  endif()
  if("${file}" IN_LIST embedded)
    message(FATAL_ERROR "${where}: ${target} already embeds ${file}; embed a bundle once")
  endif()
  set_property(TARGET ${target} APPEND PROPERTY TRITON_EMBED_EMBEDDED_BUNDLES "${file}")
  # init_priority: 101 is the earliest a program's own initialisers may run, so the bundles
  # load before the target's static objects in any translation unit (a static JitFunction
  # finds its kernel), and in the order of these calls. The runtime library is another
  # shared object, initialised before this one.
  list(LENGTH embedded priority)
  math(EXPR priority "101 + ${priority}")

  # Symbols: hidden, and unique per target and bundle (two in one target must not clash).
  string(MAKE_C_IDENTIFIER "${target}" id)
  string(SHA256 hash "${target}\n${file}")
  string(SUBSTRING "${hash}" 0 12 hash)
  set(sym "triton_embed_bundle_${id}_${hash}")
  # A C++ string literal of the name and of the messages' text.
  set(literals "")
  foreach(text IN ITEMS "${name}" "${target}" "${file}")
    string(REPLACE "\\" "\\\\" text "${text}")
    string(REPLACE "\"" "\\\"" text "${text}")
    string(REPLACE "\n" "\\n" text "${text}")
    list(APPEND literals "\"${text}\"")
  endforeach()
  list(GET literals 0 name_literal)
  list(GET literals 1 target_literal)
  list(GET literals 2 file_literal)

  set(source "${CMAKE_CURRENT_BINARY_DIR}/triton_embed_bundles/${sym}.cc")
  file(CONFIGURE OUTPUT "${source}" @ONLY CONTENT
"// Generated by triton_embed_embed_bundle() for @target@ from @file@. Do not edit.
#include <triton_embed/bundle.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>

// The bundle's bytes, page-aligned and read-only, then their size.
__asm__(R\"te_asm(
  .pushsection .rodata.@sym@,\"a\",%progbits
  .balign 4096
  .globl @sym@
  .hidden @sym@
  .type @sym@, %object
@sym@:
  .incbin \"@file@\"
.L@sym@_end:
  .size @sym@, .L@sym@_end - @sym@
  .balign 8
  .globl @sym@_size
  .hidden @sym@_size
  .type @sym@_size, %object
@sym@_size:
  .8byte .L@sym@_end - @sym@
  .size @sym@_size, 8
  .popsection
)te_asm\");
extern \"C\" __attribute__((visibility(\"hidden\"))) const unsigned char @sym@[];
extern \"C\" __attribute__((visibility(\"hidden\"))) const std::uint64_t @sym@_size;

namespace {

struct LoadEmbeddedBundle {
  LoadEmbeddedBundle() {
    try {
      triton_embed::load_bundle_from_memory(
          @sym@, static_cast<size_t>(@sym@_size),
          @name_literal@);
    } catch (const std::exception& e) {
      // Before main() there is no caller to throw to: say what failed, and stop.
      std::fprintf(stderr, \"triton_embed: cannot load the kernel bundle embedded in %s from %s: \"
                           \"%s\\n\", @target_literal@, @file_literal@, e.what());
      std::abort();
    }
  }
};

__attribute__((init_priority(@priority@))) const LoadEmbeddedBundle load_embedded_bundle;

}  // namespace
")
  target_sources(${target} PRIVATE "${source}")
  # .incbin is invisible to the compiler's dependency scan: name the file.
  set_source_files_properties("${source}" TARGET_DIRECTORY ${target} PROPERTIES
    OBJECT_DEPENDS "${file}"
    SKIP_UNITY_BUILD_INCLUSION ON
    SKIP_PRECOMPILE_HEADERS ON)
  if(generated)
    # A custom command of this directory that makes the file then runs as part of the target.
    target_sources(${target} PRIVATE "${file}")
  endif()
  target_link_libraries(${target} PRIVATE triton_embed::runtime)
endfunction()
