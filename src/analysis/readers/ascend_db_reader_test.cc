// The Ascend profiler database reader over the fixtures of test/data/ascend_db (built by its
// make_fixtures.py to msprof-analyze's schema). Expected values are computed here straight from
// the databases with SQL (an independent path), not copied from the reader.
#include "src/analysis/readers/ascend_db_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/passes/views.h"

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;

std::string Db(const std::string& rel) { return std::string(RLPROF_SOURCE_DIR) + "/test/data/ascend_db/" + rel; }
const std::string kOneRank = "one_rank/msprof_20251126094000.db";
const std::string kRank0 = "multi_rank/node-a_41000_20251126094000123_ascend_pt";
const std::string kRank1 = "multi_rank/node-a_41001_20251126094000123_ascend_pt";
const std::string kSteps = "steps/ascend_pytorch_profiler_0.db";

// Rows of an SQL query (integers), read with SQLite directly.
std::vector<std::vector<int64_t>> Query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::vector<std::vector<int64_t>> out;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::vector<int64_t> row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) row.push_back(sqlite3_column_int64(st, i));
    out.push_back(std::move(row));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

int64_t UnionLength(std::vector<std::vector<int64_t>> iv) {
  std::sort(iv.begin(), iv.end());
  int64_t total = 0, s = INT64_MIN, e = INT64_MIN;
  for (const auto& r : iv) {
    if (r[0] > e) {
      if (e > s) total += e - s;
      s = r[0];
      e = r[1];
    } else {
      e = std::max(e, r[1]);
    }
  }
  if (e > s) total += e - s;
  return total;
}

size_t CountCategory(const Trace& t, const std::string& cat) {
  size_t n = 0;
  for (size_t i = 0; i < t.size(); ++i) n += t.str(t.category[i]) == cat;
  return n;
}

TEST(AscendDbReader, ReadsAnMsprofDatabaseOfOneRank) {
  const std::string path = Db(kOneRank);
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format, "ascend-db");
  EXPECT_EQ(t->rank, 0);  // RANK_DEVICE_MAP
  EXPECT_EQ(t->world_size, 1);
  EXPECT_EQ(t->host, "node-a");
  EXPECT_TRUE(t->steps.empty());
  EXPECT_TRUE(t->diagnostics.counts.empty()) << t->diagnostics.counts.begin()->first;
  const auto tasks = Query(path, "SELECT COUNT(*) FROM TASK")[0][0];
  const auto ops = Query(path, "SELECT COUNT(*) FROM COMMUNICATION_OP")[0][0];
  const auto apis = Query(path, "SELECT COUNT(*) FROM CANN_API")[0][0];
  EXPECT_EQ(static_cast<int64_t>(t->size()), tasks + ops + apis);
  EXPECT_EQ(static_cast<int64_t>(CountCategory(*t, "communication")), ops);
  EXPECT_EQ(static_cast<int64_t>(CountCategory(*t, "hccl_task")),
            Query(path, "SELECT COUNT(*) FROM COMMUNICATION_TASK_INFO")[0][0]);

  // The msprof view of the whole trace, against unions computed from the tables.
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), AnalysisOptions{});
  ASSERT_EQ(a.steps.size(), 1u);
  const MsprofRow m = MsprofFromStep(a.steps[0]);
  const auto compute = Query(path, "SELECT TASK.startNs, TASK.endNs FROM COMPUTE_TASK_INFO JOIN TASK "
                                   "ON TASK.globalTaskId = COMPUTE_TASK_INFO.globalTaskId");
  const auto comm = Query(path, "SELECT startNs, endNs FROM COMMUNICATION_OP");
  auto both = compute;
  both.insert(both.end(), comm.begin(), comm.end());
  EXPECT_EQ(m.computing, UnionLength(compute));
  EXPECT_EQ(m.communication, UnionLength(comm));
  EXPECT_EQ(m.overlapped, UnionLength(compute) + UnionLength(comm) - UnionLength(both));
  // The whole-trace step spans the compute and communication work (msprof's E2E), so Free is
  // the gaps between them.
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& r : both) lo = std::min(lo, r[0]), hi = std::max(hi, r[1]);
  EXPECT_EQ(a.steps[0].window.end - a.steps[0].window.start, hi - lo);
  EXPECT_EQ(m.free, hi - lo - UnionLength(both));
  EXPECT_EQ(m.bubble, 0);
}

TEST(AscendDbReader, ReadsTorchNpuFoldersWithTheirRankAndPipelineReceives) {
  Diagnostics diag;
  auto inputs = FindTraceInputs({Db("multi_rank")}, &diag);
  ASSERT_TRUE(inputs.ok());
  ASSERT_EQ(inputs->size(), 2u);  // one input per *_ascend_pt folder
  EXPECT_EQ((*inputs)[0], Db(kRank0));
  for (int rank = 0; rank < 2; ++rank) {
    auto t = ReadTrace((*inputs)[rank]);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->rank, rank);
    EXPECT_EQ(t->world_size, 2);
    TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), AnalysisOptions{});
    const MsprofRow m = MsprofFromStep(a.steps.at(0));
    const std::string db = (*inputs)[rank] + "/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_" +
                           std::to_string(rank) + ".db";
    const auto recv = Query(db, "SELECT SUM(endNs - startNs) FROM COMMUNICATION_OP JOIN STRING_IDS ON "
                                "STRING_IDS.id = opName WHERE value LIKE 'hcom_receive%'");
    EXPECT_EQ(m.bubble, recv[0][0]) << rank;  // rank 1 receives from rank 0
    EXPECT_EQ(rank == 1, m.bubble > 0);
  }
  // Bytes of a collective: count × the size of its HCCL data type (BFP16: 2).
  auto t = ReadTrace(Db(kRank0));
  ASSERT_TRUE(t.ok());
  bool seen = false;
  for (size_t i = 0; i < t->size(); ++i) {
    if (t->str(t->collective[i]) != "allReduce") continue;
    EXPECT_EQ(t->bytes[i], 8388608 * 2);
    EXPECT_EQ(t->str(t->group[i]).rfind("10.170.22.9%", 0), 0u);
    seen = true;
  }
  EXPECT_TRUE(seen);
}

TEST(AscendDbReader, TakesStepsFromStepTimeAndStagesFromMstx) {
  const std::string path = Db(kSteps);
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const auto steps = Query(path, "SELECT id, startNs, endNs FROM STEP_TIME ORDER BY id");
  ASSERT_EQ(t->steps.size(), steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(t->steps[i].step, steps[i][0]);
    EXPECT_EQ(t->steps[i].start_ns, steps[i][1]);
    EXPECT_EQ(t->steps[i].end_ns, steps[i][2]);
  }
  ASSERT_EQ(t->stages.size(), 3u);  // one mstx range per step
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t->stages[i].name, "actor_update");
    EXPECT_EQ(t->stages[i].step, static_cast<int64_t>(i + 1));
  }
  // A PyTorch operator and the device work it launched share its external id (CONNECTION_IDS).
  size_t linked = 0;
  for (size_t i = 0; i < t->size(); ++i)
    if (t->external[i] >= 0 && t->tracks[t->track[i]].type == TrackType::kDeviceStream) ++linked;
  EXPECT_EQ(static_cast<int64_t>(linked), Query(path, "SELECT COUNT(*) FROM TASK")[0][0] +
                                              Query(path, "SELECT COUNT(*) FROM COMMUNICATION_OP")[0][0]);

  // by_launch: each step holds the compute its host calls launched (msprof-analyze's
  // CANN_API.startNs ∈ STEP_TIME rule), computed here with SQL.
  AnalysisOptions opts;
  opts.assign = AssignMode::kByLaunch;
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), opts);
  ASSERT_EQ(a.steps.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    const auto compute = Query(path, "SELECT TASK.startNs, TASK.endNs FROM COMPUTE_TASK_INFO JOIN TASK ON "
                                     "TASK.globalTaskId = COMPUTE_TASK_INFO.globalTaskId JOIN CANN_API ON "
                                     "CANN_API.connectionId = TASK.connectionId JOIN STEP_TIME ON "
                                     "CANN_API.startNs >= STEP_TIME.startNs AND CANN_API.startNs < "
                                     "STEP_TIME.endNs WHERE STEP_TIME.id = " + std::to_string(k + 1));
    EXPECT_EQ(MsprofFromStep(a.steps[k]).computing, UnionLength(compute)) << k;
  }
}

TEST(AscendDbReader, ATruncatedDatabaseGivesThePartBeforeTheCut) {
  auto t = ReadTrace(Db("corrupt/ascend_pytorch_profiler_2.db"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_GT(t->diagnostics.Get("ascend_db_corrupt"), 0u);
  EXPECT_GT(t->size(), 0u);
  EXPECT_EQ(t->rank, 2);
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), AnalysisOptions{});
  EXPECT_FALSE(a.steps.empty());
}

TEST(AscendDbReader, BrokenRowsAreCountedAndTheRestIsRead) {
  auto t = ReadTrace(Db("corrupt/ascend_pytorch_profiler_3.db"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->diagnostics.Get("ascend_db_bad_row"), 2u);         // TASK without start, op without end
  EXPECT_EQ(t->diagnostics.Get("ascend_db_unknown_string"), 1u);  // name id 999999
  EXPECT_EQ(t->diagnostics.Get("ascend_db_missing_table"), 1u);   // CANN_API dropped
  EXPECT_EQ(t->diagnostics.Get("negative_duration"), 1u);         // ends before it starts
  AnalysisOptions opts;
  opts.assign = AssignMode::kByLaunch;
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), opts);
  EXPECT_EQ(a.steps.size(), 3u);
  EXPECT_GT(a.diagnostics.Get("by_launch_without_launch"), 0u);  // no CANN_API: by start
}

TEST(AscendDbReader, OtherSqliteFilesAndDamagedImagesAreErrorsNotCrashes) {
  const fs::path dir = fs::temp_directory_path() / ("rlprof_ascend_db_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string other = (dir / "other.db").string();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto t = ReadTrace(other);
  EXPECT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("without Ascend profiler tables"), std::string::npos);
  // Named like profiler databases below a folder: an empty one is counted, a damaged one is an
  // input whose read fails with its reason (never skipped silently).
  { std::ofstream(dir / "msprof_20250101000000.db"); }
  { std::ofstream(dir / "ascend_pytorch_profiler_9.db") << "not a database at all"; }
  Diagnostics diag;
  auto found = FindTraceInputs({dir.string()}, &diag);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(diag.Get("input_empty_file"), 1u);
  ASSERT_EQ(found->size(), 1u);  // other.db is not named like one
  auto bad = ReadTrace(found->front());
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not an SQLite file"), std::string::npos) << bad.status().message();
  // In memory: the header alone, and every prefix of a real database, read or fail cleanly.
  std::ifstream f(Db(kOneRank), std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  for (size_t n : {size_t{16}, size_t{100}, size_t{4096}, bytes.size() / 2, bytes.size()}) {
    auto r = ReadTraceBytes(std::string_view(bytes).substr(0, n), "mem.db");
    if (n == bytes.size()) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->format, "ascend-db");
    }
  }
  fs::remove_all(dir);
}

// Issue 35: a database without TASK (or with TASK a view that fails) had no device tasks and
// said nothing.
TEST(AscendDbReader, AMissingOrBrokenTaskTableIsNamed) {
  const fs::path dir = fs::temp_directory_path() / ("rlprof_ascend_task_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* how : {"DROP TABLE TASK;", "ALTER TABLE TASK RENAME TO TASK_OLD; "
                                              "CREATE VIEW TASK AS SELECT * FROM NO_SUCH_TABLE;"}) {
    const std::string path = (dir / "msprof_20251126094000.db").string();
    fs::remove(path);
    fs::copy_file(Db(kOneRank), path);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    // A view on a missing table needs legacy_alter_table off and is created unchecked.
    sqlite3_exec(db, how, nullptr, nullptr, &err);
    if (err != nullptr) {
      ADD_FAILURE() << how << ": " << err;
      sqlite3_free(err);
    }
    sqlite3_close(db);
    auto t = ReadTrace(path);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    const bool dropped = std::string(how).starts_with("DROP");
    if (dropped) {
      EXPECT_EQ(t->diagnostics.Get("ascend_db_missing_table"), 1u) << ::testing::PrintToString(t->diagnostics.Lines());
    } else {
      EXPECT_GE(t->diagnostics.Get("ascend_db_corrupt"), 1u) << ::testing::PrintToString(t->diagnostics.Lines());
    }
    bool named = false;
    for (const auto& d : t->diagnostics.details) named = named || d.find("TASK") != std::string::npos;
    EXPECT_TRUE(named) << how;
  }
  fs::remove_all(dir);
}

TEST(AscendDbReader, ATextFolderReadsItsTraceViewWithTheFolderRank) {
  const std::string dir = Db("folder/worker0_12345_20251126094000123_ascend_pt");
  auto f = FindAscendFolder(dir);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rank, 5);
  EXPECT_EQ(fs::path(f->file).filename(), "trace_view.json");
  auto t = ReadTrace(dir);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format, "ascend");
  EXPECT_EQ(t->rank, 5);
  // Also through its ASCEND_PROFILER_OUTPUT folder.
  auto t2 = ReadTrace(dir + "/ASCEND_PROFILER_OUTPUT");
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->rank, 5);
  EXPECT_FALSE(FindAscendFolder(Db("steps")).has_value());
}

}  // namespace
}  // namespace rlprof::analysis

namespace rlprof::analysis {
namespace {

// Issue 35: read-only commands created a -shm file beside an input database in WAL mode. The
// reader opens it immutable (as a URI, so a path with '?', '#' or '%' is still that path).
TEST(AscendDbReader, AWalDatabaseIsReadWithoutAFileBesideIt) {
  const fs::path dir = fs::temp_directory_path() / ("rlprof_wal_" + std::to_string(::getpid())) / "a?b#c%20d";
  fs::remove_all(dir.parent_path());
  fs::create_directories(dir);
  const fs::path db = dir / "ascend_pytorch_profiler_0.db";
  fs::copy_file(std::string(RLPROF_SOURCE_DIR) + "/test/data/ascend_db/steps/ascend_pytorch_profiler_0.db", db);
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h, "PRAGMA journal_mode=WAL;", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(h);
  }
  for (const char* side : {"-shm", "-wal"}) fs::remove(db.string() + side);
  const size_t before = std::distance(fs::directory_iterator(dir), fs::directory_iterator{});
  auto t = ReadTrace(db.string(), ReadOptions{});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_GT(t->size(), 0u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), static_cast<long>(before));
  EXPECT_FALSE(fs::exists(db.string() + "-shm"));
  fs::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace rlprof::analysis
