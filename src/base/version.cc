#include "src/base/version.h"

#ifndef RLPROF_VERSION
#error "RLPROF_VERSION is set by src/base/CMakeLists.txt from project(VERSION)"
#endif

namespace rlprof::base {

const char* Version() { return RLPROF_VERSION; }

}  // namespace rlprof::base
