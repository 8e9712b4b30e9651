// Registers the CUPTI source with the process's SourceRegistry when the program starts. Built
// as an object library (rlprof::cupti_source) so that linking it is enough: the Python core
// extension and C++ programs that want device capture link it; nothing is loaded until a
// session's plan asks for device data (the source dlopens libcupti in Configure).
#include <memory>

#include "src/runtime/source.h"
#include "src/sources/cupti_source.h"

namespace rlprof::sources {
namespace {

const bool kRegistered = [] {
  runtime::SourceRegistry::Get().Register(std::make_shared<CuptiSource>());
  return true;
}();

}  // namespace
}  // namespace rlprof::sources
