// File helpers: whole-file reads, atomic writes, directory creation (std only).
// Thread-safety: pure functions over the file system.
#ifndef RLPROF_SRC_BASE_FILES_H_
#define RLPROF_SRC_BASE_FILES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace rlprof::base {

StatusOr<std::string> ReadFile(const std::string& path);
// Writes via a temporary file in the same directory and rename(): readers never see half a file.
Status WriteFileAtomic(const std::string& path, std::string_view data);
// mkdir -p; ok if it exists already.
Status MakeDirs(const std::string& path);
bool PathExists(const std::string& path);
std::string AbsolutePath(const std::string& path);
// This process's resident set size in bytes (/proc/self/statm), or -1 where it cannot be read.
int64_t ResidentSetBytes();

}  // namespace rlprof::base

#endif  // RLPROF_SRC_BASE_FILES_H_
