// rlprof's version: one source, CMakeLists.txt's project(VERSION) (the Python package's
// version is read from the same line by python/setup.py).
#pragma once

namespace rlprof::base {

// "MAJOR.MINOR.PATCH".
const char* Version();

}  // namespace rlprof::base
