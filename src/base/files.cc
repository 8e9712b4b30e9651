#include "src/base/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace rlprof::base {

// Everything here reports failures as Status and never throws for a file-system reason: the
// capture runtime calls these inside training processes, where an EACCES from a directory
// the process may not read (a non-root user, a 0700 parent) must turn into one warning, not
// a std::filesystem_error. Only the error_code overloads of std::filesystem are used.
namespace fs = std::filesystem;

namespace {

std::string Errno(int e) { return std::strerror(e); }

Status WriteAllFd(int fd, const char* p, size_t n, off_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t w = offset >= 0 ? ::pwrite(fd, p, n, offset) : ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return IoError(path + ": write failed: " + Errno(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
    if (offset >= 0) offset += w;
  }
  return Status::Ok();
}

}  // namespace

const char* FileKindName(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Status CheckRegularFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + Errno(e));
  }
  if (!S_ISREG(st.st_mode))
    return InvalidArgument(path + ": " + FileKindName(st.st_mode) + ", not a regular file: not read");
  return Status::Ok();
}

bool ResolvesInside(const std::string& path, const std::string& root) {
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(path, ec), top(root);
  if (ec) return false;
  auto r = top.begin(), c = real.begin();
  for (; r != top.end(); ++r, ++c)
    if (c == real.end() || *r != *c) return false;
  return true;
}

StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + Errno(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return IoError(path + ": cannot open: " + Errno(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": " + FileKindName(st.st_mode) + ", not a regular file: not read");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return FailedPrecondition(path + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                              std::to_string(max_bytes) + " this file may hold: not read");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[64 << 10];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return IoError(path + ": read error: " + Errno(e));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {  // it grew while being read
      ::close(fd);
      return FailedPrecondition(path + ": more than the " + std::to_string(max_bytes) +
                                " bytes this file may hold: not read");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Status WriteFileAtomic(const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path + ": cannot write: " + Errno(errno));
  Status s = WriteAllFd(fd, data.data(), data.size(), -1, path);
  // close() can be where a full disk (or NFS quota) reports itself.
  if (::close(fd) != 0 && s.ok()) s = IoError(path + ": write failed: " + Errno(errno));
  if (s.ok()) {
    // Replacing a file by rename() makes ext4 (auto_da_alloc) write the new file's blocks out
    // there and then, on the caller's thread: a third of the writer thread's time per window
    // went to it (the capture's final manifest replacing the open-time one). Exchanging the two
    // names is as atomic for readers and leaves the blocks to the kernel's usual writeback;
    // the old content, now under the temporary name, is removed. Where exchange is not
    // supported (no such file yet, an older kernel, a file system without it): rename().
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) == 0) {
      ::unlink(tmp.c_str());
      return s;
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) s = IoError(path + ": rename failed: " + Errno(errno));
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

Status WriteNewFile(const std::string& path, std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path + ": cannot write: " + Errno(errno));
  Status s = WriteAllFd(fd, data.data(), data.size(), -1, path);
  if (::close(fd) != 0 && s.ok()) s = IoError(path + ": write failed: " + Errno(errno));
  if (!s.ok()) ::unlink(path.c_str());
  return s;
}

Status OverwriteFileInPlace(const std::string& path, std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);  // never creates
  if (fd < 0) return IoError(path + ": cannot open for writing: " + Errno(errno));
  Status s = WriteAllFd(fd, data.data(), data.size(), 0, path);
  if (s.ok() && ::ftruncate(fd, static_cast<off_t>(data.size())) != 0)
    s = IoError(path + ": truncate failed: " + Errno(errno));
  if (::close(fd) != 0 && s.ok()) s = IoError(path + ": write failed: " + Errno(errno));
  return s;
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (!ec) return Status::Ok();
  std::error_code ec2;
  if (fs::is_directory(path, ec2)) return Status::Ok();
  return IoError(path + ": cannot create directory: " + ec.message());
}

bool PathExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  auto p = fs::absolute(path, ec);
  if (ec) return path;
  return p.lexically_normal().string();
}

int64_t ResidentSetBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long size = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : -1;
}

namespace {
// The first number in `path` after `key` (a /proc/meminfo line: "MemTotal: 16318412 kB"), or a
// file holding just a number ("max" and the like: -1).
int64_t NumberIn(const std::string& path, const char* key, int64_t unit) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t v = -1;
  const size_t klen = std::strlen(key);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, key, klen) != 0) continue;
    char* end = nullptr;
    const long long n = std::strtoll(line + klen, &end, 10);
    if (end != line + klen && n > 0) v = static_cast<int64_t>(n) * unit;
    break;
  }
  std::fclose(f);
  return v;
}
}  // namespace

int64_t MemoryLimitBytes(const std::string& root) {
  int64_t limit = NumberIn(root + "/proc/meminfo", "MemTotal:", 1024);
  // cgroup v2 (the process's own group, named in /proc/self/cgroup as "0::/path", and the
  // namespace root a container sees), then v1 (whose "no limit" is a huge number: above MemTotal).
  std::vector<std::string> files = {root + "/sys/fs/cgroup/memory.max",
                                    root + "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
  if (std::FILE* f = std::fopen((root + "/proc/self/cgroup").c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      std::string l(line);
      while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
      if (l.starts_with("0::/") && l.size() > 4) {
        files.push_back(root + "/sys/fs/cgroup" + l.substr(3) + "/memory.max");
      } else if (const size_t at = l.find(":memory:/"); at != std::string::npos && l.size() > at + 9) {
        files.push_back(root + "/sys/fs/cgroup/memory" + l.substr(at + 8) + "/memory.limit_in_bytes");
      }
    }
    std::fclose(f);
  }
  for (const std::string& p : files) {
    const int64_t c = NumberIn(p, "", 1);
    if (c > 0 && (limit < 0 || c < limit)) limit = c;
  }
  return limit;
}

}  // namespace rlprof::base
