// The formats rlprof exports captures to: the one enum, shared by a config's `export:` list
// (config::Plan::exports), `rlprof export` and `rlprof analyse --export`.
//
//   ExportFormat f = ExportFormat::kSqlite;
//   ExportFormatName(f);        // "db"  (`rlprof export --format`)
//   ExportFormatConfigWord(f);  // "db"  (a config's `export:` word; kChromeJson is "text")
//   ExportFileName(f);          // "trace.db"
//
// Parsing (by name or from a path's extension) is in src/format/export.h.
// Thread-safety: plain data and pure functions.
#ifndef RLPROF_INCLUDE_RLPROF_FORMAT_EXPORT_FORMAT_H_
#define RLPROF_INCLUDE_RLPROF_FORMAT_EXPORT_FORMAT_H_

namespace rlprof::format {

enum class ExportFormat { kChromeJson, kPftrace, kSqlite };

const char* ExportFormatName(ExportFormat f);        // "json", "pftrace", "db"
const char* ExportFormatConfigWord(ExportFormat f);  // "text", "pftrace", "db" (verl's, MindSpeed-RL's)
const char* ExportFileName(ExportFormat f);          // "trace.json.gz", "trace.pftrace", "trace.db"

}  // namespace rlprof::format

#endif  // RLPROF_INCLUDE_RLPROF_FORMAT_EXPORT_FORMAT_H_
