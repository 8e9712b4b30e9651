// AReaL session traces (issue 33): the JSONL that AReaL's SessionTracer writes, one finished
// rollout session (one generated sample) a line, at <fileroot>/logs/<user>/<experiment>/<trial>/
// session_tracer[/<role>]/sessions-r<rank>.jsonl (areal/utils/perf_tracer.py):
//
//   {"task_id": 3, "session_id": 7, "rank": 0, "status": "accepted", "submit_ts": 1763000000.25,
//    "finalized_ts": 1763000004.5, "total_s": 4.25, "generate_s": 3.5, "reward_s": 0.25,
//    "phases": {"generate": [{"start_ts": …, "end_ts": …}], "reward": [{…}]}}
//
// Read into a Trace of format "areal" with samples (one per session) and sample_uses (the
// session's status), and no slices. docs/samples.md ("AReaL session traces") lists what maps
// to what. A line that is not a session record is counted (areal_bad_line,
// areal_not_session) and skipped; a cut last line is truncated_input.
//
//   if (LooksLikeArealSessions(head)) RLPROF_ASSIGN_OR_RETURN(Trace t, ReadArealFile(path));
//
// Thread-safety: reentrant.
#ifndef RLPROF_SRC_ANALYSIS_READERS_AREAL_READER_H_
#define RLPROF_SRC_ANALYSIS_READERS_AREAL_READER_H_

#include <string>
#include <string_view>

#include "src/analysis/model/trace.h"
#include "src/base/status.h"

namespace rlprof::analysis {

// Bytes of a file's (decompressed) head the detection looks at.
inline constexpr size_t kArealHeadBytes = 64 << 10;

// True when `head` (the first bytes of a text, decompressed) is JSON Lines whose first
// object record (within the first lines) is an AReaL session record: an object with
// "session_id" (integer), "submit_ts" (number) and "status" (string) at its top level. A head
// that starts with anything but '{', or whose first readable object lacks them (a Kineto trace
// on one line, AReaL's perf-tracer traces-r*.jsonl), is not.
bool LooksLikeArealSessions(std::string_view head);

// The same for a file (gzip transparent; only its head is read). False for anything that is
// not a readable regular file.
bool IsArealSessionsFile(const std::string& path);
// The same for bytes in memory (gzip transparent; only the head is inflated).
bool IsArealSessionsBytes(std::string_view bytes);

// Reads the text of a session-trace file (decompressed) into `t` (source = name, format =
// "areal"; finalized). InvalidArgument when it holds no session record at all.
base::Status ReadArealSessions(std::string_view text, const std::string& name, Trace* t);

// Reads a file (gzip transparent; within the input limits of ReadInputFile) or bytes.
base::StatusOr<Trace> ReadArealFile(const std::string& path);
base::StatusOr<Trace> ReadArealBytes(std::string_view bytes, const std::string& name);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_AREAL_READER_H_
