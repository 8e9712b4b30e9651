// librlprof.so is made of the runtime's archives (src/librlprof/CMakeLists.txt); this file only
// gives the shared library a translation unit of its own and checks, at compile time, that the
// C ABI header stands alone.
#include "rlprof/rlprof.h"

static_assert(sizeof(rlprof_event) == 32, "rlprof_event is the 32-byte record of the format");
