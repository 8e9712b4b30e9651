#include "src/format/export.h"

#include <algorithm>
#include <unordered_set>

#include "src/base/strings.h"
#include "src/format/chrome_json.h"
#include "src/format/perfetto_trace.h"
#include "src/format/sqlite_export.h"

namespace rlprof::format {

const char* ExportFormatName(ExportFormat f) {
  switch (f) {
    case ExportFormat::kChromeJson: return "json";
    case ExportFormat::kPftrace: return "pftrace";
    case ExportFormat::kSqlite: return "db";
  }
  return "unknown";
}

const char* ExportFormatConfigWord(ExportFormat f) {
  return f == ExportFormat::kChromeJson ? "text" : ExportFormatName(f);
}

const char* ExportFileName(ExportFormat f) {
  switch (f) {
    case ExportFormat::kChromeJson: return "trace.json.gz";
    case ExportFormat::kPftrace: return "trace.pftrace";
    case ExportFormat::kSqlite: return "trace.db";
  }
  return "trace";
}

base::StatusOr<ExportFormat> ParseExportFormat(std::string_view name) {
  if (name == "json" || name == "chrome" || name == "text") return ExportFormat::kChromeJson;
  if (name == "pftrace" || name == "perfetto") return ExportFormat::kPftrace;
  if (name == "db" || name == "sqlite") return ExportFormat::kSqlite;
  return base::InvalidArgument("unknown export format '" + std::string(name) +
                               "' (expected json, pftrace or db)");
}

base::StatusOr<ExportFormat> ExportFormatFromPath(std::string_view path) {
  using base::EndsWith;
  if (EndsWith(path, ".json") || EndsWith(path, ".json.gz")) return ExportFormat::kChromeJson;
  if (EndsWith(path, ".pftrace") || EndsWith(path, ".pftrace.gz") ||
      EndsWith(path, ".perfetto-trace") || EndsWith(path, ".pb")) {
    return ExportFormat::kPftrace;
  }
  if (EndsWith(path, ".db") || EndsWith(path, ".sqlite") || EndsWith(path, ".sqlite3")) {
    return ExportFormat::kSqlite;
  }
  return base::InvalidArgument("cannot tell the export format from '" + std::string(path) +
                               "': use a .json, .json.gz, .pftrace or .db name, or --format");
}

namespace {

bool IsStageLevel(const Event& e) {
  switch (e.category) {
    case Category::kStep:
    case Category::kStage:
    case Category::kSubStep:
    case Category::kCapture:
      return e.kind != EventKind::kCounter;
    default:
      return false;
  }
}

bool Has(const std::vector<int64_t>& v, int64_t x) {
  return v.empty() || std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

uint64_t ApplyLevelOfDetail(const LevelOfDetail& lod, std::vector<Capture>* captures) {
  if (!lod.active()) return 0;
  uint64_t left_out = 0;
  for (Capture& c : *captures) {
    const bool rank_detailed = !lod.stages_only && Has(lod.ranks, c.manifest.rank);
    // The capture's step ranges, to tell each event's step.
    struct Range {
      int64_t start, end, step;
    };
    std::vector<Range> steps;
    for (const Event& e : c.raw.events)
      if (e.category == Category::kStep && e.kind == EventKind::kComplete)
        steps.push_back({e.ts_ns, e.ts_ns + std::max<int64_t>(e.payload, 0), static_cast<int64_t>(e.arg0)});
    const int64_t default_step = c.manifest.steps.empty() ? -1 : c.manifest.steps.front();
    auto step_of = [&](int64_t ts) {
      for (const Range& r : steps)
        if (ts >= r.start && ts < r.end) return r.step;
      return default_step;
    };
    auto keep = [&](const Event& e) {
      if (IsStageLevel(e)) return true;
      if (!rank_detailed) return false;
      return lod.steps.empty() || Has(lod.steps, step_of(e.ts_ns));
    };
    std::vector<Event> kept;
    kept.reserve(c.raw.events.size());
    std::unordered_set<uint16_t> used;
    for (const Event& e : c.raw.events) {
      if (!keep(e)) {
        ++left_out;
        continue;
      }
      used.insert(e.track);
      kept.push_back(e);
    }
    c.raw.events = std::move(kept);
    std::erase_if(c.raw.tracks, [&](const TrackEntry& t) { return !used.count(t.id); });
  }
  return left_out;
}

base::StatusOr<ExportStats> ExportCaptures(std::span<const Capture> captures, ExportFormat format,
                                           const std::string& path) {
  switch (format) {
    case ExportFormat::kChromeJson: return WriteChromeJsonFile(captures, path);
    case ExportFormat::kPftrace: return WritePerfettoFile(captures, path);
    case ExportFormat::kSqlite: return WriteSqliteFile(captures, path);
  }
  return base::InvalidArgument("unknown export format");
}

}  // namespace rlprof::format
