// SQLite export (.db): the captures as tables anyone can query with `sqlite3`. The schema is
// declared once, in SqliteSchema() (docs/formats.md prints it):
//   meta(key, value)                     format, schema_version, clock, producer
//   captures(id, label, rank, host, pid, run_id, scope, stage, role, …, diagnostics)
//   strings(id, value)                   every name, deduplicated over all captures (UTF-8)
//   tracks(id, kind, os_id, pid, name, capture_id, raw_id)
//   events(ts_ns, dur_ns, kind, category, name_id, track_id, arg0, arg1, value)
//   categories / event_kinds / track_kinds(id, name)   the enums of event.h
//   views: slices (complete events with names joined), counters, instants
// Times are ns on CLOCK_MONOTONIC aligned to rank 0. String-valued args (stage role,
// operator shapes, communication group, memcpy direction) are remapped to `strings` ids.
//
//   RLPROF_ASSIGN_OR_RETURN(ExportStats s, WriteSqliteFile(captures, "trace.db"));
//   $ sqlite3 trace.db "SELECT name, SUM(dur_ns) FROM slices GROUP BY name"
//
// Thread-safety: reentrant.
#ifndef RLPROF_SRC_FORMAT_SQLITE_EXPORT_H_
#define RLPROF_SRC_FORMAT_SQLITE_EXPORT_H_

#include <span>
#include <string>

#include "src/format/capture.h"
#include "src/format/export.h"

namespace rlprof::format {

inline constexpr int kSqliteSchemaVersion = 1;

// The CREATE statements of the export, in order.
const char* SqliteSchema();

// Writes a new database at `path` (replacing an existing file only once complete).
base::StatusOr<ExportStats> WriteSqliteFile(std::span<const Capture> captures,
                                            const std::string& path);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_SQLITE_EXPORT_H_
