#include "src/format/sqlite_export.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "src/format/json_escape.h"
#include "src/format/sample_capture.h"
#include "src/format/test_util.h"

namespace rlprof::format {
namespace {

// Runs a query with the plain sqlite3 API and returns rows of text cells ("NULL" for NULL).
std::vector<std::vector<std::string>> Query(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::vector<std::vector<std::string>> rows;
  while (st != nullptr && sqlite3_step(st) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
      row.push_back(t == nullptr ? "NULL" : std::string(t, sqlite3_column_bytes(st, i)));
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

TEST(SqliteExportTest, SampleRowsMatchTheCaptures) {
  auto caps = SampleCaptures();
  std::string path = TestDir() + "/t.db";
  auto stats = WriteSqliteFile(caps, path);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->events, caps[0].raw.events.size() + caps[1].raw.events.size());
  EXPECT_GT(stats->bytes, 0u);
  EXPECT_EQ(Query(path, "SELECT value FROM meta WHERE key='schema_version'")[0][0], "1");
  EXPECT_EQ(Query(path, "SELECT COUNT(*) FROM events")[0][0], "17");
  EXPECT_EQ(Query(path, "SELECT COUNT(*) FROM slices")[0][0], "12");
  // Names joined, string args remapped, times aligned to rank 0.
  auto stage = Query(path,
                     "SELECT ts_ns, dur_ns, category, track, rank, arg1_text FROM slices "
                     "WHERE name='actor_update' ORDER BY rank");
  ASSERT_EQ(stage.size(), 2u);
  EXPECT_EQ(stage[0], (std::vector<std::string>{"5000110000", "600000", "stage", "main", "0", "actor"}));
  EXPECT_EQ(stage[1], (std::vector<std::string>{"5000111000", "590000", "stage", "main", "1", "actor"}));
  auto counters = Query(path, "SELECT name, value FROM counters ORDER BY ts_ns");
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_EQ(counters[1][0], "gpu_mem_allocated");
  EXPECT_EQ(std::stod(counters[1][1]), 1610612736.5);
  auto async = Query(path, "SELECT kind, value FROM events WHERE kind IN (2, 3) ORDER BY ts_ns");
  ASSERT_EQ(async.size(), 2u);
  EXPECT_EQ(async[0], (std::vector<std::string>{"2", "77"}));
  auto shapes = Query(path, "SELECT arg0, arg1_text FROM slices WHERE category='operator'");
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0], (std::vector<std::string>{"17", "[[8, 16], [16, 32]]"}));
  auto tracks = Query(path, "SELECT k.name, t.os_id FROM tracks t JOIN track_kinds k ON k.id=t.kind "
                            "WHERE t.capture_id=1 ORDER BY t.id");
  ASSERT_EQ(tracks.size(), 5u);
  EXPECT_EQ(tracks[2], (std::vector<std::string>{"device_stream", "7"}));
  // Strings are deduplicated across captures.
  EXPECT_EQ(Query(path, "SELECT COUNT(*) FROM strings WHERE value='rl/step'")[0][0], "1");
}

TEST(SqliteExportTest, HostileNamesRoundTripAsText) {
  Capture c;
  c.manifest.rank = 0;
  c.manifest.pid = 9;
  c.manifest.host = "h'; DROP TABLE events; --";
  auto names = HostileNames();
  c.raw.strings.push_back("");
  for (auto& n : names) c.raw.strings.push_back(n);
  c.raw.tracks.push_back({1, TrackKind::kThread, 9, 9, names[3]});
  for (uint32_t i = 0; i < names.size(); ++i) {
    Event e{};
    e.ts_ns = 100 + i;
    e.payload = 1;
    e.name = i + 1;
    e.track = 1;
    e.kind = EventKind::kComplete;
    e.category = Category::kStage;
    e.arg1 = static_cast<uint32_t>(names.size() - i);
    c.raw.events.push_back(e);
  }
  std::vector<Capture> caps = {c};
  std::string path = TestDir() + "/h.db";
  ASSERT_TRUE(WriteSqliteFile(caps, path).ok());
  auto rows = Query(path, "SELECT name, arg1_text, track FROM slices ORDER BY ts_ns");
  ASSERT_EQ(rows.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(rows[i][0], SanitizeUtf8(names[i])) << i;
    EXPECT_EQ(rows[i][1], SanitizeUtf8(names[names.size() - 1 - i])) << i;
    EXPECT_EQ(rows[i][2], SanitizeUtf8(names[3]));
  }
  EXPECT_EQ(Query(path, "SELECT host FROM captures")[0][0], c.manifest.host);
}

TEST(SqliteExportTest, ReplacesAnExistingFileAndFailsCleanlyWhenUnwritable) {
  auto caps = SampleCaptures();
  std::string path = TestDir() + "/t.db";
  ASSERT_TRUE(WriteSqliteFile(caps, path).ok());
  ASSERT_TRUE(WriteSqliteFile(caps, path).ok());  // no "table already exists"
  EXPECT_EQ(Query(path, "SELECT COUNT(*) FROM events")[0][0], "17");
  auto bad = WriteSqliteFile(caps, "/nonexistent-dir/t.db");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), base::StatusCode::kIoError);
}

}  // namespace
}  // namespace rlprof::format
