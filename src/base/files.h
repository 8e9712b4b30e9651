// File helpers: whole-file reads, atomic writes, directory creation (std only).
// Failures are returned as Status, never thrown (the capture runtime calls these inside
// training processes; see docs/reliability.md).
// Thread-safety: pure functions over the file system.
#ifndef RLPROF_SRC_BASE_FILES_H_
#define RLPROF_SRC_BASE_FILES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace rlprof::base {

// Inputs are opened as what they claim to be. A path that is not a regular file (a FIFO, a
// device such as /dev/zero, a socket, a directory) is refused with InvalidArgument naming what
// it is — never blocked on (a FIFO is opened O_NONBLOCK and checked with fstat) — and a file
// larger than `max_bytes` is refused before anything is allocated (FailedPrecondition).
inline constexpr uint64_t kMaxReadBytes = uint64_t{1} << 30;      // configs, rules: 1 GiB
inline constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;  // manifest.json: 64 MiB
StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes = kMaxReadBytes);
// Ok when `path` (symbolic links followed) is a regular file; NotFound when it is absent;
// InvalidArgument, saying what it is, for anything else. For readers that open a file
// themselves (ifstream, gzopen, sqlite): call it first so that a FIFO never blocks them.
Status CheckRegularFile(const std::string& path);
// What a stat mode is, in words ("a named pipe (FIFO)", "a character device", ...).
const char* FileKindName(unsigned mode);
// Writes via a temporary file in the same directory and rename(): readers never see half a file.
Status WriteFileAtomic(const std::string& path, std::string_view data);
// Creates `path`, which must not exist (O_EXCL), and writes `data` with one write(): for the
// first file of a directory made a moment ago, where no reader can be waiting for it, without
// WriteFileAtomic's temporary file and rename. A failed write removes the file.
Status WriteNewFile(const std::string& path, std::string_view data);
// Rewrites the existing file `path` in place (write at offset 0, then truncate to the new
// size) without creating any file: where WriteFileAtomic cannot create its temporary file (a
// full disk, a directory that became read-only), a file that already holds at least
// data.size() bytes can still be rewritten, because no new block is needed. Not atomic.
Status OverwriteFileInPlace(const std::string& path, std::string_view data);
// mkdir -p; ok if it exists already.
Status MakeDirs(const std::string& path);
bool PathExists(const std::string& path);
// Whether `path`, every link resolved (std::filesystem::weakly_canonical), is `root` or lies
// below it; `root` must be canonical. False when it cannot be resolved.
bool ResolvesInside(const std::string& path, const std::string& root);
std::string AbsolutePath(const std::string& path);
// This process's resident set size in bytes (/proc/self/statm), or -1 where it cannot be read.
int64_t ResidentSetBytes();
// The memory this process may use, in bytes: the smallest of the host's (/proc/meminfo
// MemTotal) and its cgroup's limit (v2 memory.max, v1 memory.limit_in_bytes); -1 unknown.
// `root` stands in for "/" (tests).
int64_t MemoryLimitBytes(const std::string& root = "");

}  // namespace rlprof::base

#endif  // RLPROF_SRC_BASE_FILES_H_
