// Test helper: runs a scenario in a forked child that is not root, and directories such a
// child may not enter. CI runs the tests as root, where permission checks never fail; the
// runtime's "an unwritable save path costs one warning" contract is about ordinary users.
//
//   const std::string locked = MakeForbiddenDir(FreshDir("x") + "/locked");
//   ChildResult r = RunUnprivileged([&] { return Scenario(locked + "/out"); });
//   EXPECT_EQ(r.exit_code(), 0);
//   EXPECT_EQ(CountLines(r.err, "rlprof: warning"), 1u);
//
// As root the child drops to uid/gid 65534 (nobody) before the scenario; as any other user
// it already is unprivileged. The child's stderr is returned. Test-only (gtest).
#ifndef RLPROF_SRC_BASE_UNPRIVILEGED_TEST_UTIL_H_
#define RLPROF_SRC_BASE_UNPRIVILEGED_TEST_UTIL_H_

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace rlprof::base::testing_util {

inline constexpr uid_t kUnprivilegedId = 65534;  // nobody / nogroup

struct ChildResult {
  int status = -1;  // as from waitpid
  std::string err;  // everything the child wrote to stderr
  // The exit code, or 128 + signal for a child killed by a signal (an abort shows as 134).
  int exit_code() const {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
  }
};

// Runs `body` in a forked child as a user that is not root; its return value is the exit code.
// Exit code 97 means the child could not drop its privileges.
inline ChildResult RunUnprivileged(const std::function<int()>& body) {
  ChildResult r;
  int fds[2];
  if (pipe(fds) != 0) return r;
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    if (geteuid() == 0) {
      if (setgroups(0, nullptr) != 0 || setresgid(kUnprivilegedId, kUnprivilegedId, kUnprivilegedId) != 0 ||
          setresuid(kUnprivilegedId, kUnprivilegedId, kUnprivilegedId) != 0 || geteuid() == 0)
        _exit(97);
    }
    const int code = body();
    std::fflush(nullptr);
    _exit(code);
  }
  close(fds[1]);
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    r.err.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  waitpid(pid, &r.status, 0);
  return r;
}

// Creates `path` (and its parents) so that an unprivileged child can neither enter nor list it:
// mode 0700 owned by root when running as root, else mode 0000.
inline std::string MakeForbiddenDir(const std::string& path) {
  std::filesystem::create_directories(path);
  chmod(path.c_str(), geteuid() == 0 ? 0700 : 0000);
  return path;
}

// Makes `path` writable by the unprivileged child (owned by it when running as root).
inline void GiveToUnprivileged(const std::string& path) {
  if (geteuid() == 0) {
    [[maybe_unused]] const int rc = chown(path.c_str(), kUnprivilegedId, kUnprivilegedId);
  }
  chmod(path.c_str(), 0755);
}

// Undoes MakeForbiddenDir so that the test can remove the tree.
inline void AllowAgain(const std::string& path) { chmod(path.c_str(), 0700); }

inline size_t CountLines(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    if (text.substr(pos, end - pos).find(needle) != std::string_view::npos) ++n;
    pos = end + 1;
  }
  return n;
}

}  // namespace rlprof::base::testing_util

#endif  // RLPROF_SRC_BASE_UNPRIVILEGED_TEST_UTIL_H_
