# Unity builds (CMAKE_UNITY_BUILD=ON; scripts/test turns them on under CI=true): a target's
# sources are compiled a batch at a time, one translation unit each, which halves a 2-core
# build (the CLI's commands: 40 s of compile separately, 17 s together; most of a file's time
# is the same headers and template instantiations). Files listed here define helpers of the
# same name in an anonymous namespace as an earlier file of their target (kMs, Us, NoEnv,
# Builder, ...) or rely on name lookup another file's namespaces change; they are compiled
# on their own. A plain build (the default) compiles every file on its own anyway.
function(rlprof_unity_alone dir)
  get_filename_component(stage ${dir} NAME)
  if(NOT TARGET rlprof_${stage} AND NOT TARGET rlprof_${stage}_readers)  # a stage left out (the fuzz build)
    return()
  endif()
  list(TRANSFORM ARGN PREPEND ${PROJECT_SOURCE_DIR}/${dir}/ OUTPUT_VARIABLE files)
  set_source_files_properties(${files} DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}
                              PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

rlprof_unity_alone(src/config yaml_scan.cc)
rlprof_unity_alone(src/format capture.cc perfetto_trace.cc)
rlprof_unity_alone(src/runtime c_api_test.cc capture_controller_sampling_test.cc crash_test.cc
                   fault_test.cc source_test.cc)
rlprof_unity_alone(src/sources torch_modules.cc)
rlprof_unity_alone(src/analysis advise/advise_test.cc advise/rules_memory.cc golden_test.cc
                   passes/async_pools_test.cc passes/tb_steps.cc readers/areal_reader.cc
                   readers/ascend_text_reader.cc readers/ascend_text_reader_test.cc
                   readers/readers_test.cc run/async_run.cc run/async_syncs.cc run/cluster.cc
                   run/cluster_test.cc run/compare.cc run/input_codec_test.cc run/run_view.cc run/samples_run.cc
                   run/samples_run_test.cc run/to_capture_test.cc peers_test.cc
                   readers/areal_reader_test.cc)
rlprof_unity_alone(src/cli summary_command.cc)
rlprof_unity_alone(src/report otlp_export.cc)
