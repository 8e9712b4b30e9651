# ctest driver: cpp_pipeline run by a user that is not root, with its save_path under a
# directory that user cannot enter, must finish (exit 0) with exactly one warning line and no
# capture (docs/reliability.md). As root (CI) the program runs through
# `setpriv --reuid=65534 --regid=65534 --clear-groups` from a world-readable copy; as another
# user the directory is made mode 0000.
# The program's librlprof.so.0 travels with it (the other user may not enter the build tree;
# the program finds it beside itself, $ORIGIN).
#   cmake -DEXE=… -DLIB=… -DCONFIG=… -DOUT=… -P check_unwritable.cmake
string(RANDOM LENGTH 10 tag)
set(tmp "/tmp/rlprof-unwritable-${tag}")  # OUT may sit under a 0700 home directory
file(MAKE_DIRECTORY "${tmp}/locked")
file(COPY "${EXE}" "${CONFIG}" "${LIB}" DESTINATION "${tmp}")
get_filename_component(exe_name "${EXE}" NAME)
get_filename_component(config_name "${CONFIG}" NAME)
file(CHMOD "${tmp}" "${tmp}/${config_name}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
     GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
get_filename_component(lib_name "${LIB}" NAME)
file(CHMOD "${tmp}/${lib_name}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
     GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
file(CHMOD "${tmp}/${exe_name}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
     GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
if(uid STREQUAL "0")
  file(CHMOD "${tmp}/locked" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)  # 0700, root's
  set(as_user setpriv --reuid=65534 --regid=65534 --clear-groups --)
else()
  file(CHMOD "${tmp}/locked" PERMISSIONS)  # 0000
  set(as_user)
endif()
execute_process(
  COMMAND ${as_user} "${tmp}/${exe_name}" --config "${tmp}/${config_name}"
          --override "rlprof.save_path=${tmp}/locked/sub/out" --run-id ctest
          --steps 3 --workers 2 --size 16
  WORKING_DIRECTORY "${tmp}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(CHMOD "${tmp}/locked" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
file(GLOB_RECURSE manifests "${tmp}/locked/*manifest.json")
file(REMOVE_RECURSE "${tmp}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpp_pipeline failed (${rc}):\n${out}\n${err}")
endif()
string(REPLACE ";" "," err_items "${err}")  # the warning has a ';', a CMake list separator
string(REGEX MATCHALL "rlprof: warning[^\n]*" warnings "${err_items}")
list(LENGTH warnings n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected exactly one warning, found ${n}:\n${err}")
endif()
if(NOT err MATCHES "cannot write captures under .*profiling is disabled, the program continues")
  message(FATAL_ERROR "unexpected warning:\n${err}")
endif()
if(NOT out MATCHES "step 3 done \\(profiling off\\)")
  message(FATAL_ERROR "the training loop did not finish unprofiled:\n${out}")
endif()
if(manifests)
  message(FATAL_ERROR "captures were written: ${manifests}")
endif()
message(STATUS "cpp_pipeline as an unprivileged user: one warning, the program went on\n${err}")
