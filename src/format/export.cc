#include "src/format/export.h"

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

base::StatusOr<ExportFormat> ParseExportFormat(std::string_view name) {
  if (name == "json" || name == "chrome") return ExportFormat::kChromeJson;
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
