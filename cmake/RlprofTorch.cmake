# rlprof_find_libtorch(): the libtorch the operator hook (src/sources/torch_ops.h) builds against,
# as the target rlprof::libtorch; RLPROF_HAVE_LIBTORCH says whether one was found.
#
# The hook needs only ATen's RecordFunction and c10 (headers, libtorch_cpu, libc10): no CUDA.
# So where RLPROF_TORCH_PREFIX names a PyTorch (the Python's torch/share/cmake, or an unpacked
# libtorch's share/cmake), the target is made from that tree's include/ and lib/ directly, not by
# find_package(Torch): TorchConfig of a CUDA build of PyTorch (the default `pip install torch` on
# Linux) stops the whole configure with a FATAL_ERROR when no CUDA toolkit is installed ("Your
# installed Caffe2 version uses CUDA but I cannot find the CUDA libraries"), which QUIET does not
# silence — a GPU node with the driver and the CUDA wheels but no toolkit could not build rlprof
# at all. Without such a prefix (Debian's libtorch-dev), find_package(Torch QUIET) as before.
function(rlprof_find_libtorch)
  set(RLPROF_HAVE_LIBTORCH OFF PARENT_SCOPE)
  if(RLPROF_TORCH_PREFIX)
    get_filename_component(root "${RLPROF_TORCH_PREFIX}/../.." ABSOLUTE)
    set(inc "${root}/include")
    set(lib "${root}/lib")
    if(EXISTS "${inc}/ATen/record_function.h" AND EXISTS "${lib}/libtorch_cpu.so" AND EXISTS "${lib}/libc10.so")
      add_library(rlprof_libtorch INTERFACE IMPORTED GLOBAL)
      target_include_directories(rlprof_libtorch SYSTEM INTERFACE "${inc}")
      target_link_libraries(rlprof_libtorch INTERFACE "${lib}/libtorch_cpu.so" "${lib}/libc10.so")
      # A PyTorch built with the old libstdc++ string ABI (wheels before 2.7) says so in its
      # TorchConfig; the hook must match it.
      file(STRINGS "${RLPROF_TORCH_PREFIX}/Torch/TorchConfig.cmake" abi
           REGEX "_GLIBCXX_USE_CXX11_ABI=[01]" LIMIT_COUNT 1)
      if(abi MATCHES "_GLIBCXX_USE_CXX11_ABI=([01])")
        target_compile_definitions(rlprof_libtorch INTERFACE _GLIBCXX_USE_CXX11_ABI=${CMAKE_MATCH_1})
      endif()
      add_library(rlprof::libtorch ALIAS rlprof_libtorch)
      set(RLPROF_HAVE_LIBTORCH ON PARENT_SCOPE)
      message(STATUS "rlprof: operator hook against libtorch in ${root}")
      return()
    endif()
    message(STATUS "rlprof: ${root} has no ATen headers, libtorch_cpu and libc10; trying find_package(Torch)")
  endif()
  find_package(Torch QUIET GLOBAL)  # GLOBAL: the Python extension links its targets
  if(Torch_FOUND)
    add_library(rlprof_libtorch INTERFACE IMPORTED GLOBAL)
    target_link_libraries(rlprof_libtorch INTERFACE ${TORCH_LIBRARIES})
    add_library(rlprof::libtorch ALIAS rlprof_libtorch)
    set(RLPROF_HAVE_LIBTORCH ON PARENT_SCOPE)
  endif()
endfunction()
