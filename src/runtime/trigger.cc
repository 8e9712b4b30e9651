// Trigger requests: files in a private per-user directory (see the header).
#include "src/runtime/trigger.h"
#include "src/format/bounded_json.h"
#include "src/base/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>

#include <nlohmann/json.hpp>

namespace rlprof::runtime {
namespace {

constexpr int64_t kMaxTriggerSteps = 1'000'000;
constexpr const char* kSuffix = ".trigger";

bool SafeName(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

std::string NewId() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof buf, "t%08x%08x", static_cast<unsigned>(rd()), static_cast<unsigned>(rd()));
  return buf;
}

}  // namespace

std::string ChooseTriggerDir(const char* env_dir, const char* xdg, const std::string& tmp_base,
                             const char* home, unsigned uid) {
  if (env_dir != nullptr && *env_dir) return env_dir;
  if (xdg != nullptr && *xdg) return std::string(xdg) + "/rlprof";
  const std::string tmp = tmp_base + "/rlprof-" + std::to_string(uid);
  struct stat st {};
  if (::lstat(tmp.c_str(), &st) != 0) return tmp;  // not there yet: made 0700 at first use
  const bool mine = S_ISDIR(st.st_mode) && st.st_uid == uid && (st.st_mode & 077) == 0;
  if (mine || home == nullptr || !*home) return tmp;  // (a foreign one is then refused, said why)
  return std::string(home) + "/.cache/rlprof/trigger";
}

std::string TriggerDir() {
  return ChooseTriggerDir(std::getenv("RLPROF_TRIGGER_DIR"), std::getenv("XDG_RUNTIME_DIR"), "/tmp",
                          std::getenv("HOME"), ::geteuid());
}

std::string TriggerRequestJson(const TriggerRequest& r) {
  nlohmann::json j{{"rlprof_trigger", kTriggerFormat}, {"id", r.id},       {"run", r.run},
                   {"host", r.host},                   {"pid", r.pid},     {"ranks", r.ranks},
                   {"role", r.role},                   {"steps", r.steps}, {"decode_steps", r.decode_steps},
                   {"created", r.created_s},           {"expires", r.expires_s}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

base::StatusOr<TriggerRequest> ParseTriggerRequest(std::string_view text) {
  nlohmann::json j = format::ParseJsonBounded(text);  // another user's file: bounded nesting
  if (j.is_discarded() || !j.is_object()) return base::InvalidArgument("not a JSON object");
  if (j.value("rlprof_trigger", 0) != kTriggerFormat)
    return base::InvalidArgument("not an rlprof trigger request (format " + std::to_string(kTriggerFormat) + ")");
  TriggerRequest r;
  try {
    r.id = j.at("id").get<std::string>();
    r.run = j.value("run", std::string());
    r.host = j.value("host", std::string());
    r.pid = j.value("pid", int64_t{0});
    r.ranks = j.value("ranks", std::vector<int64_t>{});
    r.role = j.value("role", std::string());
    r.steps = j.value("steps", int64_t{0});
    r.decode_steps = j.value("decode_steps", int64_t{0});
    r.created_s = j.at("created").get<double>();
    r.expires_s = j.at("expires").get<double>();
  } catch (const std::exception& e) {
    return base::InvalidArgument(std::string("bad field: ") + e.what());
  }
  if (!SafeName(r.id)) return base::InvalidArgument("id must be 1-128 of [A-Za-z0-9_-]");
  if ((r.steps > 0) == (r.decode_steps > 0)) return base::InvalidArgument("exactly one of steps, decode_steps > 0");
  if (r.steps < 0 || r.decode_steps < 0 || r.steps > kMaxTriggerSteps || r.decode_steps > kMaxTriggerSteps)
    return base::InvalidArgument("steps out of range");
  if (r.pid < 0) return base::InvalidArgument("pid must be >= 0");
  return r;
}

bool TriggerSelects(const TriggerRequest& r, const Identity& id, const std::string& run_id) {
  if (!r.run.empty() && r.run != run_id) return false;
  if (!r.host.empty() && r.host != id.host) return false;
  if (r.pid != 0 && r.pid != id.pid) return false;
  if (!r.ranks.empty() && std::find(r.ranks.begin(), r.ranks.end(), id.rank) == r.ranks.end()) return false;
  if (!r.role.empty() && std::find(id.roles.begin(), id.roles.end(), r.role) == id.roles.end()) return false;
  return true;
}

base::Status CheckTriggerDir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return base::FailedPrecondition(dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return base::FailedPrecondition(dir + ": not a directory (or a symlink)");
  if (st.st_uid != ::geteuid())
    return base::FailedPrecondition(dir + ": owned by uid " + std::to_string(st.st_uid) + ", not this user");
  if ((st.st_mode & 077) != 0)
    return base::FailedPrecondition(dir + ": group or others have access (chmod 700 it)");
  return base::Status::Ok();
}

base::StatusOr<std::string> WriteTriggerRequest(TriggerRequest* r, const std::string& dir) {
  // The fallback under $HOME/.cache may need its parents (0700 only for the last).
  if (const size_t slash = dir.rfind('/'); slash != std::string::npos && slash > 0)
    (void)base::MakeDirs(dir.substr(0, slash));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return base::IoError(dir + ": " + std::strerror(errno));
  RLPROF_RETURN_IF_ERROR(CheckTriggerDir(dir));
  if (r->id.empty()) r->id = NewId();
  if (!SafeName(r->id)) return base::InvalidArgument("trigger id must be 1-128 of [A-Za-z0-9_-]");
  const std::string path = dir + "/" + r->id + kSuffix, tmp = dir + "/." + r->id + ".tmp";
  const std::string text = TriggerRequestJson(*r);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return base::IoError(tmp + ": " + std::strerror(errno));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return base::IoError(path + ": " + why);
  }
  return path;
}

TriggerInbox::TriggerInbox(std::string dir, double session_start_s, double poll_interval_s)
    : dir_(std::move(dir)), start_s_(session_start_s), interval_s_(poll_interval_s) {}

std::vector<TriggerRequest> TriggerInbox::Poll(const Identity& id, const std::string& run_id, double now_s) {
  std::vector<TriggerRequest> out;
  if (now_s - last_poll_s_ < interval_s_) return out;
  last_poll_s_ = now_s;
  struct stat dst {};
  if (::lstat(dir_.c_str(), &dst) != 0) return out;  // no directory: nobody asked
  const int64_t mtime = static_cast<int64_t>(dst.st_mtim.tv_sec) * 1'000'000'000 + dst.st_mtim.tv_nsec;
  if (mtime == last_mtime_ns_) return out;
  if (!CheckTriggerDir(dir_).ok()) {
    if (last_mtime_ns_ != -2) ++refused_;  // counted once per state, not per poll
    last_mtime_ns_ = -2;
    return out;
  }
  // A directory changed within the file system's timestamp granularity (coarse: a few ms) of
  // this listing may change again without its mtime moving: list it again next time until its
  // mtime is safely in the past (as git does for racy index entries).
  last_mtime_ns_ = now_s - static_cast<double>(dst.st_mtim.tv_sec) > 2.0 ? mtime : -1;
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return out;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > std::strlen(kSuffix) && n.ends_with(kSuffix) && !seen_.count(n)) names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    seen_.insert(n);
    const std::string path = dir_ + "/" + n;
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
        st.st_size > static_cast<off_t>(kMaxTriggerRequestBytes)) {
      if (fd >= 0) ::close(fd);
      ++refused_;
      continue;
    }
    std::string text(static_cast<size_t>(st.st_size), '\0');
    const ssize_t got = ::read(fd, text.data(), text.size());
    ::close(fd);
    text.resize(got > 0 ? static_cast<size_t>(got) : 0);
    auto r = ParseTriggerRequest(text);
    if (!r.ok() || r->id + kSuffix != n) {
      ++malformed_;
      continue;
    }
    if (r->created_s < start_s_ || now_s > r->expires_s || !TriggerSelects(*r, id, run_id)) continue;
    ++accepted_;
    // Acknowledge (best effort): `rlprof trigger --wait` counts these.
    const std::string ack = dir_ + "/" + r->id + "." + std::to_string(id.rank) + "-" + std::to_string(id.pid) + ".ack";
    if (const int a = ::open(ack.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600); a >= 0) {
      const std::string who = id.host + " rank " + std::to_string(id.rank) + " pid " + std::to_string(id.pid) + "\n";
      (void)!::write(a, who.data(), who.size());
      ::close(a);
    }
    out.push_back(std::move(*r));
  }
  return out;
}

}  // namespace rlprof::runtime
