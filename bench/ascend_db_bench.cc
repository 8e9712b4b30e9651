// Ascend profiler database reader throughput: writes a synthetic ascend_pytorch_profiler_0.db
// (the schema of test/data/ascend_db: PYTORCH_API operators, CONNECTION_IDS, CANN_API launches,
// TASK with COMPUTE_TASK_INFO, HCCL operators with their tasks, STEP_TIME) of
// RLPROF_BENCH_TASKS device tasks (default 1 000 000), then measures in the same run
//   - the baseline: one plain SQLite scan of every column the reader reads (a SELECT per table,
//     every value fetched) — what any reader of the file must at least pay;
//   - rlprof::analysis::ReadTrace (the database → Trace), and ReadTrace + AnalyseTrace
//     (ingest + breakdown);
// as CPU seconds of this one thread, MB/s and tasks/s per core, and the ratio to the baseline;
// and, where the peers environment exists (.venv-peers, scripts/setup), msprof-analyze 26.2.0
// computing step_trace_time of the same file (python/tests/peers/msprof_driver.py whole: its
// MsprofStepTraceTimeDBAdapter), CPU seconds of the child, against ReadTrace + AnalyseTrace.
#include <sqlite3.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/readers/readers.h"

namespace {

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "sqlite: %s\n", err ? err : "?");
    std::exit(1);
  }
}

// Writes the database; returns the number of device tasks.
size_t Generate(const std::string& path, size_t tasks) {
  std::filesystem::remove(path);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) std::exit(1);
  Exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"
           "CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);"
           "CREATE TABLE PYTORCH_API (startNs INTEGER, endNs INTEGER, globalTid INTEGER, connectionId INTEGER, "
           "name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, "
           "callchainId INTEGER, type INTEGER);"
           "CREATE TABLE CONNECTION_IDS (id INTEGER, connectionId INTEGER);"
           "CREATE TABLE CANN_API (startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER, "
           "connectionId INTEGER PRIMARY KEY, name INTEGER);"
           "CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, "
           "globalTaskId INTEGER PRIMARY KEY, globalPid INTEGER, taskType INTEGER, contextId INTEGER, "
           "streamId INTEGER, taskId INTEGER, modelId INTEGER);"
           "CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockDim INTEGER, "
           "mixBlockDim INTEGER, taskType INTEGER, opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER, "
           "inputShapes INTEGER, outputFormats INTEGER, outputDataTypes INTEGER, outputShapes INTEGER, "
           "attrInfo INTEGER, opState INTEGER, hf32Eligible INTEGER);"
           "CREATE TABLE COMMUNICATION_OP (opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER, "
           "groupName INTEGER, opId INTEGER PRIMARY KEY, relay INTEGER, retry INTEGER, dataType INTEGER, "
           "algType INTEGER, count NUMERIC, opType INTEGER, waitNs INTEGER);"
           "CREATE TABLE STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER);");
  const char* strings[] = {"aten::mm", "aclnnMm", "MatMulV2", "AI_CORE", "aten::add", "aclnnAdd", "Add",
                           "AI_VECTOR_CORE", "4096,4096;4096,4096", "hcom_allReduce__1", "hcom_allReduce_",
                           "10.0.0.1%eth0_60000_0_1", "HcclAllReduce", "ND", "DT_BF16"};
  for (int i = 0; i < 15; ++i) {
    std::string q = "INSERT INTO STRING_IDS VALUES (" + std::to_string(i) + ", '" + strings[i] + "')";
    Exec(db, q.c_str());
  }
  sqlite3_stmt *op, *link, *api, *task, *info, *comm, *step;
  sqlite3_prepare_v2(db, "INSERT INTO PYTORCH_API VALUES (?,?,?,?,?,?,0,14,8,NULL,50001)", -1, &op, nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO CONNECTION_IDS VALUES (?,?)", -1, &link, nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO CANN_API VALUES (?,?,?,?,?,?)", -1, &api, nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO TASK VALUES (?,?,0,?,?,4100,?,0,?,?,4294967295)", -1, &task, nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO COMPUTE_TASK_INFO VALUES (?,?,24,0,?,?,13,14,8,13,14,8,NULL,NULL,0)", -1,
                     &info, nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO COMMUNICATION_OP VALUES (9,?,?,?,11,?,0,0,11,NULL,8388608,10,0)", -1, &comm,
                     nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO STEP_TIME VALUES (?,?,?)", -1, &step, nullptr);
  auto run = [](sqlite3_stmt* s, std::initializer_list<int64_t> v) {
    int i = 1;
    for (int64_t x : v) sqlite3_bind_int64(s, i++, x);
    sqlite3_step(s);
    sqlite3_reset(s);
  };
  const int64_t gtid = (int64_t{4100} << 32) | 4107;
  int64_t host = 1764150000000000000, dev = host + 50000, step_start = host;
  int64_t step_no = 1;
  for (size_t i = 1; i <= tasks; ++i) {
    const bool mm = i % 3 == 0;
    const int64_t s = host;
    host += 4000;
    run(api, {host, host + 6000, 10000, gtid, static_cast<int64_t>(i), mm ? 1 : 5});
    const int64_t ds = std::max(dev, host + 5000), de = ds + (mm ? 18000 : 3500);
    run(task, {ds, de, static_cast<int64_t>(i), static_cast<int64_t>(i), mm ? 3 : 7, 2,
               static_cast<int64_t>(i % 65536)});
    run(info, {mm ? 2 : 6, static_cast<int64_t>(i), mm ? 3 : 7, mm ? 2 : 6});
    dev = de + 500;
    host += 9000;
    run(link, {static_cast<int64_t>(i), static_cast<int64_t>(i)});
    run(op, {s, host, gtid, static_cast<int64_t>(i), mm ? 0 : 4, static_cast<int64_t>(i)});
    if (i % 1000 == 0) {  // an all-reduce every 1000 tasks, beside the compute
      run(comm, {dev - 20000, dev + 60000, static_cast<int64_t>(i), static_cast<int64_t>(i)});
    }
    if (i % 4000 == 0) {
      run(step, {step_no++, step_start, host});
      host += 20000;
      step_start = host;
    }
  }
  for (sqlite3_stmt* s : {op, link, api, task, info, comm, step}) sqlite3_finalize(s);
  Exec(db, "COMMIT;");
  sqlite3_close(db);
  return tasks;
}

// Every column the reader reads, every row, fetched once: the floor of any reader.
int64_t Scan(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  const char* queries[] = {
      "SELECT id, value FROM STRING_IDS", "SELECT id, connectionId FROM CONNECTION_IDS",
      "SELECT startNs, endNs, globalTid, connectionId, name, inputShapes FROM PYTORCH_API",
      "SELECT startNs, endNs, globalTid, connectionId, name FROM CANN_API",
      "SELECT globalTaskId, name, taskType FROM COMPUTE_TASK_INFO",
      "SELECT startNs, endNs, deviceId, connectionId, globalTaskId, taskType, streamId FROM TASK",
      "SELECT opName, startNs, endNs, connectionId, groupName, dataType, count, opType FROM COMMUNICATION_OP",
      "SELECT id, startNs, endNs FROM STEP_TIME"};
  int64_t sum = 0;
  for (const char* q : queries) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, q, -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW)
      for (int c = 0; c < sqlite3_column_count(st); ++c) sum += sqlite3_column_int64(st, c);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return sum;
}

double ChildCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

int main() {
  const char* env = std::getenv("RLPROF_BENCH_TASKS");
  const size_t tasks = env ? std::strtoull(env, nullptr, 10) : 1000000;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("rlprof_ascend_db_bench_" + std::to_string(getpid()) + "_ascend_pytorch_profiler_0.db"))
                               .string();
  Generate(path, tasks);
  const double mb = static_cast<double>(std::filesystem::file_size(path)) / (1 << 20);
  double best_scan = 1e30, best_read = 1e30, best_all = 1e30;
  size_t slices = 0, steps = 0;
  int64_t sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = CpuSeconds();
    sink += Scan(path);
    double t1 = CpuSeconds();
    auto t = rlprof::analysis::ReadTrace(path);
    double t2 = CpuSeconds();
    if (!t.ok()) {
      std::fprintf(stderr, "read failed: %s\n", t.status().message().c_str());
      return 1;
    }
    auto a = rlprof::analysis::AnalyseTrace(*t, rlprof::analysis::Classifier::Default(), {});
    double t3 = CpuSeconds();
    slices = t->size();
    steps = a.steps.size();
    best_scan = std::min(best_scan, t1 - t0);
    best_read = std::min(best_read, t2 - t1);
    best_all = std::min(best_all, t3 - t1);
  }
  // The peer, on the same file (best of 2).
  const std::string peers = std::string(RLPROF_SOURCE_DIR) + "/.venv-peers/bin/python";
  const std::string driver = std::string(RLPROF_SOURCE_DIR) + "/python/tests/peers/msprof_driver.py";
  double best_peer = -1;
  if (access(peers.c_str(), X_OK) == 0 && std::getenv("RLPROF_BENCH_NO_PEERS") == nullptr) {
    for (int rep = 0; rep < 2; ++rep) {
      const double c0 = ChildCpuSeconds();
      const std::string cmd = peers + " " + driver + " whole " + path + " > /dev/null 2>&1";
      if (std::system(cmd.c_str()) != 0) break;
      const double c = ChildCpuSeconds() - c0;
      best_peer = best_peer < 0 ? c : std::min(best_peer, c);
    }
  }
  std::filesystem::remove(path);
  std::printf("ascend_db_bench: %zu tasks, %zu slices, %zu steps, %.1f MiB database (checksum %lld)\n", tasks, slices,
              steps, mb, static_cast<long long>(sink % 7));
  std::printf("%-40s %9s %10s %12s %14s\n", "", "CPU s", "MiB/s", "tasks/s", "vs SQLite scan");
  auto line = [&](const char* what, double s) {
    std::printf("%-40s %9.3f %10.1f %12.0f %13.2fx\n", what, s, mb / s, static_cast<double>(tasks) / s,
                best_scan / s);
  };
  line("SQLite scan of the columns (floor)", best_scan);
  line("ReadTrace (database -> Trace)", best_read);
  line("ReadTrace + AnalyseTrace", best_all);
  if (best_peer > 0) {
    line("msprof-analyze step_trace_time (peer)", best_peer);
    std::printf("rlprof ingest + breakdown is %.1fx msprof-analyze's step_trace_time of the same database\n",
                best_peer / best_all);
  } else {
    std::printf("(msprof-analyze: no .venv-peers; scripts/setup makes it)\n");
  }
  return steps == 0 && tasks >= 4000 ? 1 : 0;
}
