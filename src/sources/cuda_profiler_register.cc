// Registers the CUDA profiler API source (cuda_profiler.h) when the program starts; linked by
// the Python core extension and the NVTX injection library (an object library: never dropped).
// It acts only in sessions whose config says `tool: nsys`.
#include <memory>

#include "src/runtime/source.h"
#include "src/sources/cuda_profiler.h"

namespace rlprof::sources {
namespace {

const bool kRegistered = [] {
  runtime::SourceRegistry::Get().Register(std::make_shared<CudaProfilerSource>());
  return true;
}();

}  // namespace
}  // namespace rlprof::sources
