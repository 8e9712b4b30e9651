# rlprof_stage(NAME SOURCES... DEPS... TESTS...)
#
# Declares the library of one stage as target `rlprof_<name>` with alias `rlprof::<name>`,
# and, when tests are built, one gtest binary `<name>_test` from the TESTS sources.
# Every stage shares the same warnings and root-anchored include paths.
function(rlprof_stage name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS;TESTS;TEST_DEPS" ${ARGN})
  set(target rlprof_${name})
  if(ARG_SOURCES)
    add_library(${target} STATIC ${ARG_SOURCES})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${target} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
    rlprof_warnings(${target})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  add_library(rlprof::${name} ALIAS ${target})
  if(RLPROF_BUILD_TESTS AND ARG_TESTS)
    add_executable(${name}_test ${ARG_TESTS})
    target_link_libraries(${name}_test PRIVATE ${target} ${ARG_TEST_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
    target_compile_definitions(${name}_test PRIVATE
      RLPROF_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
      RLPROF_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/test/data/fixtures")
    rlprof_test_binary(${name}_test)
    gtest_discover_tests(${name}_test DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${name})
  endif()
endfunction()

# A gtest binary: the warnings, and -O0 for its own sources with RLPROF_TESTS_O0 (the last -O
# on the command line wins; the libraries it links are compiled as the build says).
function(rlprof_test_binary target)
  rlprof_warnings(${target})
  if(RLPROF_TESTS_O0)
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()

function(rlprof_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(RLPROF_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
