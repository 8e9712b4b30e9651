#include "src/format/sqlite_export.h"

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <unordered_map>

#include "src/base/time_math.h"
#include "src/format/event_schema.h"
#include "src/format/json_escape.h"
#include "src/format/sqlite_file.h"

namespace rlprof::format {
namespace {

namespace fs = std::filesystem;

constexpr char kSchema[] = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE captures(
  id INTEGER PRIMARY KEY, label TEXT, rank INTEGER, host TEXT, pid INTEGER, run_id TEXT,
  scope TEXT, stage TEXT, role TEXT, dir TEXT, offset_to_rank0_ns INTEGER,
  monotonic_anchor_ns INTEGER, realtime_anchor_ns INTEGER, events INTEGER,
  dropped_events INTEGER, complete INTEGER, diagnostics TEXT);
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tracks(
  id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, os_id INTEGER, pid INTEGER, name TEXT,
  capture_id INTEGER REFERENCES captures(id), raw_id INTEGER);
CREATE TABLE events(
  ts_ns INTEGER NOT NULL, dur_ns INTEGER, kind INTEGER NOT NULL, category INTEGER NOT NULL,
  name_id INTEGER REFERENCES strings(id), track_id INTEGER REFERENCES tracks(id),
  arg0 INTEGER, arg1 INTEGER, value);
CREATE TABLE categories(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE event_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE track_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE VIEW slices AS
  SELECT e.rowid AS id, e.ts_ns, e.dur_ns, e.ts_ns + e.dur_ns AS end_ns, s.value AS name,
         c.name AS category, t.name AS track, t.os_id AS tid, t.pid AS pid,
         cap.rank AS rank, e.track_id, e.arg0, e.arg1, a.value AS arg1_text
  FROM events e
  LEFT JOIN strings s ON s.id = e.name_id
  LEFT JOIN categories c ON c.id = e.category
  LEFT JOIN tracks t ON t.id = e.track_id
  LEFT JOIN captures cap ON cap.id = t.capture_id
  LEFT JOIN strings a ON a.id = e.arg1 AND e.category IN (2, 4, 5, 7)
  WHERE e.kind = 1;
CREATE VIEW counters AS
  SELECT e.ts_ns, COALESCE(NULLIF(s.value, ''), t.name) AS name, e.value, t.pid AS pid,
         cap.rank AS rank, e.track_id
  FROM events e
  LEFT JOIN strings s ON s.id = e.name_id
  LEFT JOIN tracks t ON t.id = e.track_id
  LEFT JOIN captures cap ON cap.id = t.capture_id
  WHERE e.kind = 5;
CREATE VIEW instants AS
  SELECT e.ts_ns, s.value AS name, c.name AS category, t.name AS track, cap.rank AS rank
  FROM events e
  LEFT JOIN strings s ON s.id = e.name_id
  LEFT JOIN categories c ON c.id = e.category
  LEFT JOIN tracks t ON t.id = e.track_id
  LEFT JOIN captures cap ON cap.id = t.capture_id
  WHERE e.kind = 4;
)sql";

constexpr char kIndexes[] = R"sql(
CREATE INDEX events_by_time ON events(ts_ns);
CREATE INDEX events_by_track ON events(track_id, ts_ns);
)sql";

void BindText(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

class Exporter {
 public:
  Exporter(SqliteFile* db, std::span<const Capture> captures, ExportStats* stats)
      : db_(db), captures_(captures), stats_(stats) {}

  base::Status Run() {
    RLPROF_RETURN_IF_ERROR(db_->Exec(kSchema, "sqlite"));
    RLPROF_RETURN_IF_ERROR(Enums());
    RLPROF_ASSIGN_OR_RETURN(strings_, db_->Prepare("INSERT INTO strings VALUES(?,?)", "sqlite"));
    RLPROF_ASSIGN_OR_RETURN(tracks_, db_->Prepare("INSERT INTO tracks VALUES(?,?,?,?,?,?,?)", "sqlite"));
    RLPROF_ASSIGN_OR_RETURN(events_, db_->Prepare("INSERT INTO events VALUES(?,?,?,?,?,?,?,?,?)", "sqlite"));
    RLPROF_ASSIGN_OR_RETURN(uint32_t empty, StringId(""));
    (void)empty;  // id 0 is always the empty string
    for (size_t i = 0; i < captures_.size(); ++i) RLPROF_RETURN_IF_ERROR(CaptureRows(i));
    return db_->Exec(kIndexes, "sqlite");
  }

 private:
  base::Status Enums() {
    RLPROF_ASSIGN_OR_RETURN(sqlite3_stmt * meta, db_->Prepare("INSERT INTO meta VALUES(?,?)", "sqlite"));
    std::pair<const char*, std::string> rows[] = {
        {"format", "rlprof-export"},
        {"schema_version", std::to_string(kSqliteSchemaVersion)},
        {"time_unit", "ns"},
        {"clock", "CLOCK_MONOTONIC, aligned to rank 0 (offset_to_rank0_ns)"},
        {"producer", "rlprof"},
        {"captures", std::to_string(captures_.size())}};
    for (auto& [k, v] : rows) {
      sqlite3_bind_text(meta, 1, k, -1, SQLITE_STATIC);
      BindText(meta, 2, v);
      RLPROF_RETURN_IF_ERROR(db_->Step(meta, "sqlite"));
    }
    db_->Finalize(meta);
    auto fill = [&](const char* table, int n, const char* (*name)(int)) -> base::Status {
      std::string sql = std::string("INSERT INTO ") + table + " VALUES(?,?)";
      RLPROF_ASSIGN_OR_RETURN(sqlite3_stmt * s, db_->Prepare(sql, "sqlite"));
      for (int i = 0; i < n; ++i) {
        sqlite3_bind_int(s, 1, i);
        sqlite3_bind_text(s, 2, name(i), -1, SQLITE_STATIC);
        RLPROF_RETURN_IF_ERROR(db_->Step(s, "sqlite"));
      }
      db_->Finalize(s);
      return base::Status::Ok();
    };
    RLPROF_RETURN_IF_ERROR(fill("categories", kCategoryCount,
                                [](int i) { return CategoryName(static_cast<Category>(i)); }));
    RLPROF_RETURN_IF_ERROR(fill("event_kinds", kEventKindCount,
                                [](int i) { return EventKindName(static_cast<EventKind>(i)); }));
    return fill("track_kinds", kTrackKindCount,
                [](int i) { return TrackKindName(static_cast<TrackKind>(i)); });
  }

  base::StatusOr<uint32_t> StringId(std::string_view raw) {
    std::string value = SanitizeUtf8(raw);
    auto it = string_ids_.find(value);
    if (it != string_ids_.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(string_ids_.size());
    sqlite3_bind_int64(strings_, 1, id);
    BindText(strings_, 2, value);
    RLPROF_RETURN_IF_ERROR(db_->Step(strings_, "sqlite"));
    string_ids_.emplace(std::move(value), id);
    return id;
  }

  base::Status CaptureRow(size_t ci) {
    const Capture& c = captures_[ci];
    const Manifest& m = c.manifest;
    RLPROF_ASSIGN_OR_RETURN(
        sqlite3_stmt * st, db_->Prepare("INSERT INTO captures VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", "sqlite"));
    std::string diag;
    for (const auto& d : c.diagnostics.Lines()) diag += (diag.empty() ? "" : "\n") + d;
    sqlite3_bind_int64(st, 1, static_cast<int64_t>(ci + 1));
    BindText(st, 2, SanitizeUtf8(c.Label()));
    sqlite3_bind_int64(st, 3, m.rank);
    BindText(st, 4, SanitizeUtf8(m.host));
    sqlite3_bind_int64(st, 5, m.pid);
    BindText(st, 6, SanitizeUtf8(m.run_id));
    BindText(st, 7, SanitizeUtf8(m.scope));
    BindText(st, 8, SanitizeUtf8(m.stage));
    BindText(st, 9, SanitizeUtf8(m.role));
    BindText(st, 10, SanitizeUtf8(c.dir));
    sqlite3_bind_int64(st, 11, m.offset_to_rank0_ns);
    sqlite3_bind_int64(st, 12, m.monotonic_anchor_ns);
    sqlite3_bind_int64(st, 13, m.realtime_anchor_ns);
    sqlite3_bind_int64(st, 14, static_cast<int64_t>(c.raw.events.size()));
    sqlite3_bind_int64(st, 15, m.dropped_events);
    sqlite3_bind_int(st, 16, m.complete ? 1 : 0);
    BindText(st, 17, SanitizeUtf8(diag));
    RLPROF_RETURN_IF_ERROR(db_->Step(st, "sqlite"));
    db_->Finalize(st);
    return base::Status::Ok();
  }

  base::StatusOr<int64_t> TrackRow(size_t ci, const TrackEntry& t, bool defined) {
    int64_t id = ++last_track_id_;
    sqlite3_stmt* s = tracks_;
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int(s, 2, static_cast<int>(t.kind));
    sqlite3_bind_int64(s, 3, static_cast<int64_t>(t.os_id));
    sqlite3_bind_int64(s, 4, t.pid != 0 ? t.pid : captures_[ci].manifest.pid);
    BindText(s, 5, SanitizeUtf8(t.name));
    sqlite3_bind_int64(s, 6, static_cast<int64_t>(ci + 1));
    if (defined) sqlite3_bind_int64(s, 7, t.id);
    else sqlite3_bind_null(s, 7);  // an id the capture used but never defined
    RLPROF_RETURN_IF_ERROR(db_->Step(s, "sqlite"));
    return id;
  }

  base::Status CaptureRows(size_t ci) {
    const Capture& c = captures_[ci];
    RLPROF_RETURN_IF_ERROR(CaptureRow(ci));
    int64_t offset = c.manifest.offset_to_rank0_ns;
    std::vector<int64_t> track_ids(65536, 0);
    for (const TrackEntry& t : c.raw.tracks) {
      RLPROF_ASSIGN_OR_RETURN(track_ids[t.id], TrackRow(ci, t, true));
    }
    std::vector<int64_t> string_ids(c.raw.strings.size(), -1);
    auto remap = [&](uint32_t id) -> base::StatusOr<int64_t> {
      if (id >= string_ids.size()) return int64_t{0};  // undefined: the empty string
      if (string_ids[id] < 0) {
        RLPROF_ASSIGN_OR_RETURN(uint32_t g, StringId(c.raw.strings[id]));
        string_ids[id] = g;
      }
      return string_ids[id];
    };
    sqlite3_stmt* s = events_;
    for (const Event& e : c.raw.events) {
      if (track_ids[e.track] == 0) {
        TrackEntry t{e.track, TrackKind::kThread, e.track, 0, "track " + std::to_string(e.track)};
        RLPROF_ASSIGN_OR_RETURN(track_ids[e.track], TrackRow(ci, t, false));
      }
      RLPROF_ASSIGN_OR_RETURN(int64_t name, remap(e.name));
      sqlite3_bind_int64(s, 1, base::SatAdd(e.ts_ns, offset));
      if (e.kind == EventKind::kComplete) sqlite3_bind_int64(s, 2, e.payload);
      sqlite3_bind_int(s, 3, static_cast<int>(e.kind));
      sqlite3_bind_int(s, 4, static_cast<int>(e.category));
      sqlite3_bind_int64(s, 5, name);
      sqlite3_bind_int64(s, 6, track_ids[e.track]);
      if (ArgSpecFor(e.category).arg0_is_string && e.arg0 != 0) {
        RLPROF_ASSIGN_OR_RETURN(int64_t a0, remap(e.arg0));
        sqlite3_bind_int64(s, 7, a0);
      } else {
        sqlite3_bind_int64(s, 7, e.arg0);
      }
      if (ArgSpecFor(e.category).arg1_is_string && e.arg1 != 0) {
        RLPROF_ASSIGN_OR_RETURN(int64_t a1, remap(e.arg1));
        sqlite3_bind_int64(s, 8, a1);
      } else {
        sqlite3_bind_int64(s, 8, e.arg1);
      }
      if (e.kind == EventKind::kCounter) {
        double v = e.counter_value();
        if (std::isfinite(v)) sqlite3_bind_double(s, 9, v);
        else ++stats_->skipped_events;  // stored as NULL
      } else if (e.kind == EventKind::kBegin || e.kind == EventKind::kEnd) {
        sqlite3_bind_int64(s, 9, e.payload);  // the async range id
      }
      RLPROF_RETURN_IF_ERROR(db_->Step(s, "sqlite"));
      ++stats_->events;
    }
    return base::Status::Ok();
  }

  SqliteFile* db_;
  std::span<const Capture> captures_;
  ExportStats* stats_;
  sqlite3_stmt* strings_ = nullptr;  // statements owned by db_
  sqlite3_stmt* tracks_ = nullptr;
  sqlite3_stmt* events_ = nullptr;
  std::unordered_map<std::string, uint32_t> string_ids_;
  int64_t last_track_id_ = 0;
};

}  // namespace

const char* SqliteSchema() { return kSchema; }

base::StatusOr<ExportStats> WriteSqliteFile(std::span<const Capture> captures,
                                            const std::string& path) {
  ExportStats stats;
  RLPROF_ASSIGN_OR_RETURN(std::unique_ptr<SqliteFile> db, SqliteFile::Create(path));
  RLPROF_RETURN_IF_ERROR(Exporter(db.get(), captures, &stats).Run());
  RLPROF_RETURN_IF_ERROR(db->Commit());
  std::error_code ec;
  stats.bytes = fs::file_size(path, ec);
  stats.diagnostics.Add("export_null_counter_values", stats.skipped_events);
  return stats;
}

}  // namespace rlprof::format
