// The runs under a save path, for `rlprof serve`: each immediate sub-directory that holds
// captures (manifest.json / events.rlp below it) is a run; its captures, identity summary and
// size come from the manifests. Paths come only from listing the save path, never from a
// request: a request names a run by its listed id and a capture by its index, so nothing
// outside the save path can be reached. Folders that resolve outside the save path (links)
// are left out and counted.
//
//   RunIndex idx = ListRuns("outputs/profile");
//   for (const RunInfo& r : idx.runs) { … r.id, r.captures.size(), r.bytes … }
//   const RunInfo* r = FindRun(idx, "20261126-120129-c0639e");
//   std::optional<RunInfo> one = LoadRun("outputs/profile", "20261126-120129-c0639e");
//
// Also the HTML of the pages `rlprof serve` shows (every name escaped).
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_REPORT_RUN_INDEX_H_
#define RLPROF_SRC_REPORT_RUN_INDEX_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "src/format/diagnostics.h"

namespace rlprof::report {

struct RunInfo {
  std::string id;                     // the folder's name under the save path
  std::string path;                   // the folder (canonical)
  std::vector<std::string> captures;  // capture directories, sorted
  int64_t newest_ns = 0;              // newest manifest / events file modification (ns since epoch)
  uint64_t bytes = 0;                 // Σ file sizes below the folder
  std::set<int64_t> ranks, steps;
  std::set<std::string> roles, scopes, modes, contents, tools;
};

struct RunIndex {
  std::string root;           // the save path (canonical)
  std::vector<RunInfo> runs;  // newest first
  format::Diagnostics diagnostics;
};

// Every run, newest first. With `only_id`, just the listed folder of that name (its `bytes`
// left 0): what a request for one run needs, without reading every other run's manifests.
RunIndex ListRuns(const std::string& save_path, std::string_view only_id = {});
// The run listed under `id`, or nullopt (no such folder, no captures, or outside the save path).
std::optional<RunInfo> LoadRun(const std::string& save_path, std::string_view id);
const RunInfo* FindRun(const RunIndex& index, std::string_view id);

// Text safe inside HTML element content and attribute values.
std::string HtmlEscape(std::string_view s);
// Percent-encodes everything but unreserved characters (a URL path segment or query value).
std::string UrlEncode(std::string_view s);

// The pages. `query` ("" or "?token=…") is appended to every link.
std::string RunListPage(const RunIndex& index, const std::string& query);
std::string CaptureListPage(const RunInfo& run, const std::string& query);
std::string ErrorPage(int status, std::string_view message);

}  // namespace rlprof::report

#endif  // RLPROF_SRC_REPORT_RUN_INDEX_H_
