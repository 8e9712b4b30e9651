#include "src/format/capture.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "src/base/files.h"
#include "src/base/time_math.h"
#include "src/format/bounded_json.h"

namespace rlprof::format {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr char kManifestName[] = "manifest.json";
constexpr char kEventsName[] = "events.rlp";

}  // namespace

void SortEventsByTime(std::vector<Event>* events) {
  std::stable_sort(events->begin(), events->end(), [](const Event& a, const Event& b) {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    int64_t da = a.kind == EventKind::kComplete ? a.payload : -1;
    int64_t db = b.kind == EventKind::kComplete ? b.payload : -1;
    return da > db;
  });
}

std::string Capture::Label() const {
  std::string s = manifest.rank >= 0 ? "rank " + std::to_string(manifest.rank) : "process";
  std::string role = manifest.role;
  if (role.empty() && !manifest.roles.empty()) {
    for (const auto& r : manifest.roles) role += (role.empty() ? "" : ",") + r;
  }
  if (!role.empty()) s += " [" + role + "]";
  if (!manifest.host.empty()) s += " " + manifest.host;
  if (manifest.pid != 0) s += " (pid " + std::to_string(manifest.pid) + ")";
  return s;
}

void AddRawDiagnostics(const RawDiagnostics& d, Diagnostics* out) {
  if (d.file_bytes == 0) {
    out->Add("raw_empty_file");
  } else if (!d.header_ok && d.truncated_tail_bytes != d.file_bytes) {
    out->Add("raw_bad_header");  // (a file cut inside its header is counted as truncated only)
  }
  out->Add("raw_bad_checksum_chunks", d.bad_checksum_chunks);
  out->Add("raw_truncated_tail_bytes", d.truncated_tail_bytes);
  out->Add("raw_unknown_chunk_types", d.unknown_chunk_types);
  out->Add("raw_undefined_string_refs", d.undefined_string_refs);
  out->Add("raw_undefined_track_refs", d.undefined_track_refs);
  out->Add("raw_bad_payload_chunks", d.bad_payload_chunks);
  out->Add("raw_bad_records", d.bad_records);
  out->Add("raw_skipped_bytes", d.skipped_bytes);
  out->Add("name_truncated", d.truncated_strings);
}

void AddCaptureLossDiagnostics(const Capture& c, Diagnostics* out) {
  const Manifest& m = c.manifest;
  if (c.raw.diagnostics.truncated_tail_bytes) out->Add("truncated_input");
  if (c.has_manifest && !m.complete) out->Add("capture_incomplete");
  if (m.dropped_events > 0) out->Add("dropped_events", static_cast<uint64_t>(m.dropped_events));
  // Of those, the ones a full disk (or another write error) cost: "N events lost to a write error".
  if (m.dropped_write_error > 0) out->Add("events_lost_write_error", static_cast<uint64_t>(m.dropped_write_error));
}

void SanitizeCaptureTimes(Capture* c) {
  c->times_checked = true;
  Manifest& m = c->manifest;
  Diagnostics& d = c->diagnostics;
  for (int64_t* v : {&m.offset_to_rank0_ns, &m.monotonic_anchor_ns, &m.realtime_anchor_ns}) {
    if (!base::IsValidTime(*v)) {
      d.Add("clock_offset_out_of_range");
      *v = 0;
    }
  }
  if (!base::IsValidTime(m.window_open_ns) || !base::IsValidTime(m.window_close_ns)) {
    d.Add("time_out_of_range");
    m.window_open_ns = m.window_close_ns = 0;
  } else if (m.window_close_ns == 0 && m.close_reason.empty() && m.window_open_ns > 0 && !m.complete) {
    // Never closed (the process was killed with the window open: capture_incomplete says so):
    // the window ends at the last event the file holds, not "before it opens".
    int64_t last = m.window_open_ns;
    for (const Event& e : c->raw.events)
      if (base::IsValidTime(e.ts_ns))
        last = std::max(last, e.kind == EventKind::kComplete ? base::SatAdd(e.ts_ns, std::max<int64_t>(e.payload, 0))
                                                             : e.ts_ns);
    m.window_close_ns = last;
  } else if (m.window_close_ns < m.window_open_ns) {
    d.Note("window_inverted", (c->dir.empty() ? c->events_path : c->dir) +
                                  ": window closes (" + std::to_string(m.window_close_ns) +
                                  " ns) before it opens (" + std::to_string(m.window_open_ns) +
                                  " ns); window ignored");
    m.window_open_ns = m.window_close_ns = 0;
  }
  // Every time is checked where it will be used: aligned to rank 0. The offset is valid, so
  // ts + offset cannot overflow once ts is valid.
  const int64_t off = m.offset_to_rank0_ns;
  uint64_t out_of_range = 0, clamped = 0;
  std::erase_if(c->raw.events, [&](Event& e) {
    if (!base::IsValidTime(e.ts_ns) || !base::IsValidTime(e.ts_ns + off)) {
      ++out_of_range;
      return true;
    }
    if (e.kind == EventKind::kComplete && e.payload > 0) {
      const int64_t lo = std::min(e.ts_ns, e.ts_ns + off);
      const int64_t hi = std::max(e.ts_ns, e.ts_ns + off);
      int64_t dur = e.payload;
      // Valid both before and after alignment (exporters use either).
      const bool cut = base::ClampDuration(hi, &dur);
      if (base::ClampDuration(lo, &dur) || cut) ++clamped;
      e.payload = dur;
    }
    return false;
  });
  d.Add("time_out_of_range", out_of_range);
  d.Add("duration_clamped", clamped);
}

namespace {

// The files the manifest lists against the directory: a missing one, or one shorter or longer
// than when the manifest was written (the writer records sizes after closing the file).
void CheckListedFiles(Capture* c) {
  for (const Manifest::File& f : c->manifest.files) {
    if (f.name.find('/') != std::string::npos || f.name == "..") continue;  // not ours to check
    const fs::path p = fs::path(c->dir) / f.name;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      c->diagnostics.Note("manifest_listed_file_missing", p.string() + ": listed in the manifest, missing");
      continue;
    }
    const auto size = fs::file_size(p, ec);
    if (!ec && f.bytes > 0 && size != static_cast<uintmax_t>(f.bytes)) {
      c->diagnostics.Note("manifest_file_size_mismatch", p.string() + ": " + std::to_string(size) +
                                                              " bytes, the manifest says " +
                                                              std::to_string(f.bytes));
    }
  }
}

}  // namespace

base::StatusOr<Capture> LoadCapture(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return base::NotFound(path + ": no such file or directory");
  Capture c;
  // An events.rlp inside a capture directory loads with its directory's manifest.
  fs::path parent = fs::path(path).parent_path();
  bool in_capture_dir = !fs::is_directory(path, ec) && fs::path(path).filename() == kEventsName &&
                        fs::exists((parent.empty() ? fs::path(".") : parent) / kManifestName, ec);
  bool manifest_read = false;
  if (fs::is_directory(path, ec) || in_capture_dir) {
    c.dir = in_capture_dir ? (parent.empty() ? std::string(".") : parent.string()) : path;
    c.events_path = (fs::path(c.dir) / kEventsName).string();
    std::string manifest_path = (fs::path(c.dir) / kManifestName).string();
    bool has_events = fs::exists(c.events_path, ec);
    c.has_manifest = fs::exists(manifest_path, ec);
    if (!has_events && !c.has_manifest) {
      return base::NotFound(path + ": not a capture directory (no manifest.json or events.rlp)");
    }
    if (c.has_manifest) {
      auto text = fs::is_directory(manifest_path, ec)
                      ? base::StatusOr<std::string>(base::IoError(manifest_path + ": is a directory"))
                      : base::ReadFile(manifest_path, base::kMaxManifestBytes);
      if (text.ok()) {
        std::vector<std::string> problems;
        c.manifest = ParseManifest(*text, &problems);
        for (auto& p : problems) c.diagnostics.Note("manifest_problems", c.dir + ": " + p);
        manifest_read = true;
      } else {
        c.has_manifest = false;
        c.diagnostics.Note("manifest_unreadable", text.status().message());
      }
    } else {
      c.diagnostics.Note("manifest_missing", c.dir + ": manifest.json missing; identity taken from events.rlp");
    }
    if (!has_events) {
      c.diagnostics.Note("capture_events_missing", c.dir + ": events.rlp missing; the capture has no events");
      SanitizeCaptureTimes(&c);
      return c;
    }
  } else {
    c.events_path = path;
  }
  auto raw = ReadRaw(c.events_path);
  if (!raw.ok()) {
    // Nothing at all could be read: an error. Otherwise the manifest is the partial result.
    if (!manifest_read) return raw.status();
    c.diagnostics.Note("raw_events_unreadable", raw.status().message());
  } else {
    c.raw = std::move(*raw);
  }
  // The manifest wins; the events header fills what it lacks.
  if (c.manifest.rank < 0) c.manifest.rank = c.raw.info.rank;
  if (c.manifest.pid == 0) c.manifest.pid = c.raw.info.pid;
  if (c.manifest.host.empty()) c.manifest.host = c.raw.info.host;
  if (raw.ok()) {
    AddRawDiagnostics(c.raw.diagnostics, &c.diagnostics);
    if (!c.raw.diagnostics.clean())
      c.diagnostics.details.push_back(c.events_path + ": " + c.raw.diagnostics.ToString());
    // The manifest's count of events written against what the file holds.
    if (manifest_read && c.manifest.event_count > 0) {
      const auto n = static_cast<int64_t>(c.raw.events.size());
      if (n != c.manifest.event_count) {
        const uint64_t diff = static_cast<uint64_t>(n > c.manifest.event_count ? n - c.manifest.event_count
                                                                               : c.manifest.event_count - n);
        c.diagnostics.Note("manifest_event_count_mismatch",
                           c.events_path + ": the manifest counts " + std::to_string(c.manifest.event_count) +
                               " events, the file holds " + std::to_string(n),
                           diff);
      }
    }
  }
  if (manifest_read) CheckListedFiles(&c);
  SanitizeCaptureTimes(&c);
  SortEventsByTime(&c.raw.events);
  return c;
}

base::StatusOr<Capture> LoadCaptureBytes(std::string_view events_rlp, const std::string& name) {
  Capture c;
  c.events_path = name;
  RLPROF_ASSIGN_OR_RETURN(c.raw, ReadRawBytes(events_rlp, name));
  c.manifest.rank = c.raw.info.rank;
  c.manifest.pid = c.raw.info.pid;
  c.manifest.host = c.raw.info.host;
  AddRawDiagnostics(c.raw.diagnostics, &c.diagnostics);
  if (!c.raw.diagnostics.clean())
    c.diagnostics.details.push_back(c.events_path + ": " + c.raw.diagnostics.ToString());
  SanitizeCaptureTimes(&c);
  SortEventsByTime(&c.raw.events);
  return c;
}

namespace {

bool IsCaptureDir(const fs::path& d) {
  std::error_code ec;
  return fs::exists(d / kManifestName, ec) || fs::exists(d / kEventsName, ec);
}

// Depth-first; a folder that cannot be listed is counted and skipped, the walk goes on.
void WalkCaptureDirs(const fs::path& dir, std::vector<std::string>* dirs, Diagnostics* diag) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) {
    if (diag) diag->Note("input_unreadable_dir", dir.string() + ": cannot list: " + ec.message());
    return;
  }
  for (; it != end; it.increment(ec)) {
    std::error_code e2;
    if (!it->is_directory(e2) || it->is_symlink(e2)) continue;  // links: no endless loops
    if (IsCaptureDir(it->path())) dirs->push_back(it->path().string());
    WalkCaptureDirs(it->path(), dirs, diag);
  }
  if (ec && diag) diag->Note("input_unreadable_dir", dir.string() + ": listing stopped: " + ec.message());
}

}  // namespace

bool ResolvesInsideWithCaptureFiles(const std::string& path, const std::string& root) {
  if (!base::ResolvesInside(path, root)) return false;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return true;
  for (const char* f : {kManifestName, kEventsName}) {
    const fs::path file = fs::path(path) / f;
    if (fs::exists(fs::symlink_status(file, ec)) && !base::ResolvesInside(file.string(), root)) return false;
  }
  return true;
}

std::vector<std::string> FindCaptureDirs(const std::string& root, Diagnostics* diag) {
  std::vector<std::string> dirs;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return dirs;
  if (IsCaptureDir(root)) dirs.push_back(fs::path(root).string());
  WalkCaptureDirs(root, &dirs, diag);
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

base::StatusOr<CaptureSet> LoadCaptureTree(const std::string& root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) return base::NotFound(root + ": no such file or directory");
  CaptureSet set;
  for (const auto& dir : FindCaptureDirs(root, &set.diagnostics)) {
    auto c = LoadCapture(dir);
    if (c.ok()) set.captures.push_back(std::move(*c));
    else set.diagnostics.Note("unreadable_inputs", c.status().message());
  }
  if (set.captures.empty()) {
    std::string why = set.diagnostics.details.empty() ? "" : ": " + set.diagnostics.details.front();
    return base::NotFound(root + ": no readable capture below this directory" + why);
  }
  std::stable_sort(set.captures.begin(), set.captures.end(),
                   [](const Capture& a, const Capture& b) {
                     return a.manifest.rank < b.manifest.rank;
                   });
  return set;
}

}  // namespace rlprof::format
