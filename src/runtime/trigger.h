// On-demand capture without a restart (`rlprof trigger`, docs/runtime.md "On-demand capture"):
// a request is a small JSON file in a per-user directory that only its owner can write; every
// rlprof session of that user polls the directory on its writer thread (never on the training
// thread's hot path), and a session the request selects (by run, host, pid, rank, role) opens
// a window of N steps, or of N decode steps, at its next step — as dynolog does for Kineto.
//
//   TriggerRequest r{.steps = 2, .ranks = {0, 1}};            // `rlprof trigger --steps 2 --ranks 0,1`
//   RLPROF_ASSIGN_OR_RETURN(std::string file, WriteTriggerRequest(r, TriggerDir()));
//   …
//   TriggerInbox inbox(TriggerDir(), session_start_s);        // in the session, on the writer thread
//   for (const TriggerRequest& r : inbox.Poll(me, now_s)) controller.Trigger(r.steps, r.decode_steps);
//
// Trust: the directory must be a real directory (not a symlink) owned by this user with no
// group/other access (0700), and each request a regular file owned by this user; anything else
// is refused (counted, one warning) — another user cannot open windows in your job. Requests
// that are not valid JSON of the expected shape are counted as malformed and ignored; requests
// older than the session, expired, or already acted on are ignored. Nothing here throws.
// Thread-safety: TriggerInbox is used by one thread (the writer); the free functions are pure.
#ifndef RLPROF_SRC_RUNTIME_TRIGGER_H_
#define RLPROF_SRC_RUNTIME_TRIGGER_H_

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/rlprof.hpp"
#include "src/base/status.h"

namespace rlprof::runtime {

inline constexpr int kTriggerFormat = 1;
inline constexpr size_t kMaxTriggerRequestBytes = 16 * 1024;

struct TriggerRequest {
  std::string id;                  // unique; the file is <id>.trigger
  std::string run;                 // run id ("" = any run)
  std::string host;                // "" = any host
  int64_t pid = 0;                 // 0 = any process
  std::vector<int64_t> ranks;      // empty = every rank
  std::string role;                // "" = any role
  int64_t steps = 0;               // a window of this many steps from the next step …
  int64_t decode_steps = 0;        // … or of this many decode iterations, at the next step
  double created_s = 0;            // CLOCK_REALTIME seconds
  double expires_s = 0;            // ignored after this
};

// $RLPROF_TRIGGER_DIR, else $XDG_RUNTIME_DIR/rlprof, else /tmp/rlprof-<uid> — unless another
// user made that folder first (or it is a link, or open to others): then $HOME/.cache/rlprof/
// trigger, so that a stranger cannot stop this user's `rlprof trigger`. The job and the command
// choose alike, each by the same check.
std::string TriggerDir();
// TriggerDir's choice for given values (tests): `tmp_base` is "/tmp" there; `home` may be null.
std::string ChooseTriggerDir(const char* env_dir, const char* xdg, const std::string& tmp_base,
                             const char* home, unsigned uid);

std::string TriggerRequestJson(const TriggerRequest& r);
// InvalidArgument naming what is wrong (not JSON, a field of the wrong type, no window asked
// for, both steps and decode_steps, a negative or huge count).
base::StatusOr<TriggerRequest> ParseTriggerRequest(std::string_view json);

// Whether `r` selects the process `id` (with roles) of run `run_id`.
bool TriggerSelects(const TriggerRequest& r, const Identity& id, const std::string& run_id);

// Creates `dir` (0700) when missing, checks it is this user's and private, and writes
// <dir>/<id>.trigger atomically (0600). The path, or the reason it cannot be used. Fills
// r.id when empty.
base::StatusOr<std::string> WriteTriggerRequest(TriggerRequest* r, const std::string& dir);

// The directory is usable for requests: this user's, a directory, mode without group/other
// bits. FailedPrecondition saying why not.
base::Status CheckTriggerDir(const std::string& dir);

class TriggerInbox {
 public:
  // Requests created before `session_start_s` (realtime) are for other processes: ignored.
  TriggerInbox(std::string dir, double session_start_s, double poll_interval_s = 0.5);

  // The requests that select this process and were not acted on before. Reads the directory
  // at most once per poll interval, and only when its mtime changed (or is under 2 s old: a
  // coarse mtime may not move for a second change). When acting, writes
  // <id>.<rank>-<pid>.ack next to the request (for `rlprof trigger --wait`).
  std::vector<TriggerRequest> Poll(const Identity& id, const std::string& run_id, double now_s);

  uint64_t malformed() const { return malformed_; }
  uint64_t refused() const { return refused_; }
  uint64_t accepted() const { return accepted_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  double start_s_, interval_s_;
  double last_poll_s_ = -1e300;
  int64_t last_mtime_ns_ = -1;
  std::set<std::string> seen_;  // file names already judged (acted on, malformed, refused, not ours)
  uint64_t malformed_ = 0, refused_ = 0, accepted_ = 0;
};

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_TRIGGER_H_
