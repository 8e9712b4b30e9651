# ctest driver: cpp_pipeline whose files may not grow past 6 KiB (`prlimit --fsize`, SIGXFSZ
# ignored: every write past it fails with EFBIG, as a full disk fails with ENOSPC). The limit
# sits between the manifest (≈ 3.3 KB) and what the events file would hold (≈ 11-12 KB at 3.4 B an
# event, less when a loaded machine flushes fewer, larger chunks: at 12 KiB it once held it all). The program
# must finish (exit 0) with exactly one warning line; the capture's final manifest must count
# the lost events (counts.dropped_write_error) and `rlprof summary` must report them
# (events_lost_write_error). See docs/reliability.md.
#   cmake -DEXE=… -DCLI=… -DCONFIG=… -DOUT=… -P check_full_disk.cmake
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
set(steps "")
foreach(s RANGE 1 40)
  list(APPEND steps ${s})
endforeach()
string(REPLACE ";" "," steps "${steps}")
execute_process(
  COMMAND sh -c "trap '' XFSZ; exec prlimit --fsize=6144 \"$@\"" sh
          "${EXE}" --config "${CONFIG}" --override "rlprof.save_path=${OUT}"
          --override "rlprof.steps=[${steps}]" --override "+rlprof.continuous_steps=true"
          --run-id ctest --steps 40 --workers 2 --size 8
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpp_pipeline failed (${rc}):\n${out}\n${err}")
endif()
string(REPLACE ";" "," err_items "${err}")  # the warning has a ';', a CMake list separator
string(REGEX MATCHALL "rlprof: warning[^\n]*" warnings "${err_items}")
list(LENGTH warnings n)
if(NOT n EQUAL 1 OR NOT err MATCHES "File too large")
  message(FATAL_ERROR "expected exactly one warning about the full file, found ${n}:\n${err}")
endif()
file(GLOB_RECURSE manifests "${OUT}/ctest/*manifest.json")
list(LENGTH manifests n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected 1 capture, found ${n}: ${manifests}\n${err}")
endif()
file(READ "${manifests}" json)
string(JSON complete GET "${json}" complete)
string(JSON lost GET "${json}" counts dropped_write_error)
string(JSON reason GET "${json}" window close_reason)
# close_reason: `error` when the disk filled up mid-window, `step_end` when it was the last
# flush at the window's close; either way the final manifest (not the open-time one).
if(complete OR lost LESS 1 OR NOT reason MATCHES "^(error|step_end)$")
  message(FATAL_ERROR "bad final manifest: complete=${complete} dropped_write_error=${lost} "
                      "close_reason=${reason}\n${json}")
endif()
get_filename_component(dir "${manifests}" DIRECTORY)
execute_process(COMMAND "${CLI}" summary "${dir}" --json
                RESULT_VARIABLE rc OUTPUT_VARIABLE summary ERROR_VARIABLE summary_err)
if(NOT summary MATCHES "\"events_lost_write_error\": *${lost}[,}\n ]")
  message(FATAL_ERROR "rlprof summary does not report ${lost} events lost (${rc}):\n"
                      "${summary}\n${summary_err}")
endif()
message(STATUS "cpp_pipeline on a full disk: one warning, ${lost} events lost, reported\n${err}")
