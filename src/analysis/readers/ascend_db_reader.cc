#include "src/analysis/readers/ascend_db_reader.h"

#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <map>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <unordered_map>
#include <vector>

#include "src/analysis/readers/ascend_text_reader.h"
#include "src/analysis/readers/chrome_builder.h"
#include "src/base/time_math.h"
#include "src/base/files.h"
#include "src/format/bounded_json.h"

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;

constexpr char kSqliteMagic[] = "SQLite format 3";  // + its NUL: 16 bytes

// HCCL operators have no stream: each communication group gets its own lane on the device,
// numbered past any real stream id.
constexpr int64_t kHcclGroupLaneBase = int64_t{1} << 40;

// Task types of COMPUTE_TASK_INFO that the default classification rules know as compute
// (classify.cc, rule 5); any other compute task is written with category "kernel".
bool IsKnownComputeCategory(std::string_view s) {
  return s == "AI_CORE" || s == "AI_VECTOR_CORE" || s == "AI_CPU" || s == "MIX_AIC" ||
         s == "MIX_AIV" || s == "FFTS_PLUS";
}

int HcclDtypeBytes(std::string_view d) {
  if (d == "INT8" || d == "UINT8" || d == "HIF8" || d == "FP8E4M3" || d == "FP8E5M2") return 1;
  if (d == "INT16" || d == "UINT16" || d == "FP16" || d == "BFP16") return 2;
  if (d == "INT32" || d == "UINT32" || d == "FP32") return 4;
  if (d == "INT64" || d == "UINT64" || d == "FP64") return 8;
  if (d == "INT128") return 16;
  return 0;
}

// One read-only connection and the bookkeeping of a read.
class DbReader {
 public:
  DbReader(sqlite3* db, Trace* t) : db_(db), t_(t) {}

  // Table (or view: a view that fails to read is counted as ascend_db_corrupt when selected)
  // → its columns; empty when the table is absent (or sqlite_master is unreadable).
  base::Status LoadSchema() {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db_, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')", -1, &st, nullptr);
    if (rc != SQLITE_OK) return base::InvalidArgument(std::string("not a readable SQLite database: ") + sqlite3_errmsg(db_));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      const unsigned char* n = sqlite3_column_text(st, 0);
      if (n != nullptr) tables_[reinterpret_cast<const char*>(n)];
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
      if (tables_.empty())
        return base::InvalidArgument(std::string("not a readable SQLite database: ") + sqlite3_errmsg(db_));
      t_->diagnostics.Note("ascend_db_corrupt", t_->source + ": sqlite_master: " + sqlite3_errmsg(db_));
    }
    for (auto& [name, cols] : tables_) {
      std::string q = "PRAGMA table_info(\"" + name + "\")";
      if (sqlite3_prepare_v2(db_, q.c_str(), -1, &st, nullptr) != SQLITE_OK) continue;
      while (sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char* c = sqlite3_column_text(st, 1);
        if (c != nullptr) cols.insert(reinterpret_cast<const char*>(c));
      }
      sqlite3_finalize(st);
    }
    return base::Status::Ok();
  }

  bool Has(const std::string& table) const { return tables_.count(table) > 0; }

  // SELECT of `cols` from `table`; a column the table lacks reads as NULL (older schemas).
  // Calls `fn` per row; a read that stops early (damaged pages) is counted, the rows before kept.
  void Select(const std::string& table, const std::vector<std::string>& cols,
              const std::function<void(sqlite3_stmt*)>& fn) {
    auto it = tables_.find(table);
    if (it == tables_.end()) return;
    std::string q = "SELECT ";
    for (size_t i = 0; i < cols.size(); ++i) {
      if (i) q += ", ";
      q += it->second.count(cols[i]) ? "\"" + cols[i] + "\"" : std::string("NULL");
    }
    q += " FROM \"" + table + "\"";
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, q.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      t_->diagnostics.Note("ascend_db_corrupt", t_->source + ": " + table + ": " + sqlite3_errmsg(db_));
      return;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) fn(st);
    if (rc != SQLITE_DONE)
      t_->diagnostics.Note("ascend_db_corrupt", t_->source + ": " + table + ": " + sqlite3_errmsg(db_));
    sqlite3_finalize(st);
  }

 private:
  sqlite3* db_;
  Trace* t_;
  std::map<std::string, std::set<std::string>> tables_;
};

bool Int(sqlite3_stmt* st, int col, int64_t* out) {
  switch (sqlite3_column_type(st, col)) {
    case SQLITE_INTEGER: *out = sqlite3_column_int64(st, col); return true;
    case SQLITE_FLOAT: {
      const double v = sqlite3_column_double(st, col);
      if (!(v > -9.2e18 && v < 9.2e18)) return false;
      *out = static_cast<int64_t>(v);
      return true;
    }
    case SQLITE_TEXT: {
      const char* s = reinterpret_cast<const char*>(sqlite3_column_text(st, col));
      if (s == nullptr || *s == '\0') return false;
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(s, &end, 10);
      if (errno != 0 || *end != '\0') return false;
      *out = v;
      return true;
    }
    default: return false;
  }
}

int64_t IntOr(sqlite3_stmt* st, int col, int64_t dflt) {
  int64_t v;
  return Int(st, col, &v) ? v : dflt;
}

std::string Text(sqlite3_stmt* st, int col) {
  const unsigned char* s = sqlite3_column_text(st, col);
  return s == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(s),
                                                    static_cast<size_t>(sqlite3_column_bytes(st, col)));
}

// Builds the trace from an open database.
class Builder {
 public:
  Builder(sqlite3* db, Trace* t, const ReadOptions& opts) : r_(db, t), t_(t), opts_(opts) {}

  base::Status Run() {
    RLPROF_RETURN_IF_ERROR(r_.LoadSchema());
    if (!r_.Has("TASK") && !r_.Has("COMMUNICATION_OP") && !r_.Has("PYTORCH_API") && !r_.Has("CANN_API"))
      return base::InvalidArgument(t_->source +
                                   ": an SQLite database without Ascend profiler tables (TASK, "
                                   "COMMUNICATION_OP, PYTORCH_API, CANN_API)");
    t_->format = "ascend-db";
    // The whole-trace step of a database without steps spans the device work, as msprof's
    // step_trace_time does (docs/definitions.md §2).
    t_->whole_trace_is_work_span = true;
    if (!r_.Has("STRING_IDS")) t_->diagnostics.Note("ascend_db_missing_table", t_->source + ": STRING_IDS (names unknown)");
    if (!r_.Has("TASK"))
      t_->diagnostics.Note("ascend_db_missing_table", t_->source + ": TASK (no device tasks: kernels and their times unknown)");
    if (r_.Has("TASK") && !r_.Has("CANN_API"))
      t_->diagnostics.Note("ascend_db_missing_table", t_->source + ": CANN_API (launches unknown)");
    Identity();
    Strings();
    Connections();
    PytorchApi();
    CannApi();
    Tasks();
    CommunicationOps();
    Mstx();
    Steps();
    t_->Finalize();
    return base::Status::Ok();
  }

 private:
  uint32_t S(int64_t id) {
    // STRING_IDS ids are dense from 0 in every writer seen: a vector first, a map for the rest.
    if (id >= 0 && static_cast<uint64_t>(id) < dense_.size() && dense_[id] != UINT32_MAX) return dense_[id];
    auto it = strings_.find(id);
    if (it != strings_.end()) return it->second;
    t_->diagnostics.Add("ascend_db_unknown_string");
    return strings_.emplace(id, t_->Intern("<string " + std::to_string(id) + ">")).first->second;
  }
  uint32_t SOrEmpty(sqlite3_stmt* st, int col) {
    int64_t id;
    return Int(st, col, &id) ? S(id) : 0;
  }
  // Start and end of a row; false (counted) when either is missing or outside ±2^62 ns (the
  // trace's time range), so that end − start never overflows.
  bool Times(sqlite3_stmt* st, int c0, int c1, int64_t* s, int64_t* e) {
    constexpr int64_t k = base::kMaxTimeNs;
    if (Int(st, c0, s) && Int(st, c1, e) && *s >= -k && *s <= k && *e >= -k && *e <= k)
      return true;
    t_->diagnostics.Add("ascend_db_bad_row");
    return false;
  }
  uint32_t HostTrack(int64_t global_tid) {
    if (global_tid == last_tid_ && last_host_track_ != UINT32_MAX) return last_host_track_;
    last_tid_ = global_tid;
    last_host_track_ = HostTrackOf(global_tid);
    return last_host_track_;
  }
  uint32_t StreamTrack(int64_t dev, int64_t stream) {
    if (dev == last_dev_ && stream == last_stream_ && last_stream_track_ != UINT32_MAX) return last_stream_track_;
    last_dev_ = dev;
    last_stream_ = stream;
    last_stream_track_ = t_->StreamTrack(static_cast<int32_t>(dev), stream);
    return last_stream_track_;
  }
  uint32_t HostTrackOf(int64_t global_tid) {
    const int64_t pid = static_cast<int64_t>(static_cast<uint64_t>(global_tid) >> 32);
    const int64_t tid = global_tid & 0xffffffff;
    if (t_->pid < 0 && pid > 0) t_->pid = pid;
    return t_->ThreadTrack(pid, tid);
  }

  void Identity() {
    static const std::regex kRankName(R"(ascend_pytorch_profiler_([0-9]{1,9})\.db$)");
    std::smatch m;
    const std::string base = fs::path(t_->source).filename().string();
    if (std::regex_search(base, m, kRankName)) t_->rank = std::stoll(m[1].str());
    r_.Select("RANK_DEVICE_MAP", {"rankId", "deviceId"}, [&](sqlite3_stmt* st) {
      int64_t rank, dev;
      if (t_->rank < 0 && Int(st, 0, &rank) && rank >= 0) t_->rank = rank;
      if (device_ < 0 && Int(st, 1, &dev) && dev >= 0) device_ = dev;
    });
    r_.Select("HOST_INFO", {"hostName"}, [&](sqlite3_stmt* st) {
      if (t_->host.empty()) t_->host = Text(st, 0);
    });
    r_.Select("META_DATA", {"name", "value"}, [&](sqlite3_stmt* st) {
      if (Text(st, 0) != "distributed_args") return;
      nlohmann::json j = format::ParseJsonBounded(Text(st, 1));
      if (!j.is_object()) return;
      auto ws = j.find("world_size");
      if (ws != j.end() && ws->is_number_integer() && ws->get<int64_t>() > 0) t_->world_size = ws->get<int64_t>();
      auto rk = j.find("rank");
      if (t_->rank < 0 && rk != j.end() && rk->is_number_integer() && rk->get<int64_t>() >= 0)
        t_->rank = rk->get<int64_t>();
    });
  }

  void Strings() {
    r_.Select("STRING_IDS", {"id", "value"}, [&](sqlite3_stmt* st) {
      int64_t id;
      if (!Int(st, 0, &id)) return;
      const uint32_t v = t_->Intern(TruncateName(Text(st, 1), &t_->diagnostics));
      if (id >= 0 && id < (int64_t{1} << 24)) {
        if (static_cast<uint64_t>(id) >= dense_.size()) dense_.resize(static_cast<size_t>(id) + 1, UINT32_MAX);
        dense_[static_cast<size_t>(id)] = v;
      } else {
        strings_[id] = v;
      }
    });
    r_.Select("ENUM_HCCL_DATA_TYPE", {"id", "name"}, [&](sqlite3_stmt* st) {
      int64_t id;
      if (Int(st, 0, &id)) dtype_bytes_[id] = HcclDtypeBytes(Text(st, 1));
    });
  }

  // CONNECTION_IDS: a PyTorch operator's id → the CANN connection ids of what it launched.
  void Connections() {
    r_.Select("CONNECTION_IDS", {"id", "connectionId"}, [&](sqlite3_stmt* st) {
      int64_t id, conn;
      if (Int(st, 0, &id) && Int(st, 1, &conn)) op_of_connection_.emplace(conn, id);
    });
  }
  int64_t OperatorOf(int64_t connection) const {
    auto it = op_of_connection_.find(connection);
    return it == op_of_connection_.end() ? -1 : it->second;
  }

  void Marker(const std::string& name, int64_t s, int64_t e, uint32_t track, bool steps_from_names) {
    MarkerName m = ClassifyMarkerName(name, "");
    if (m.kind == MarkerName::kNone) return;
    analysis::Marker mk;
    mk.start_ns = s;
    mk.end_ns = std::max(s, e);
    mk.track = track;
    if (m.kind == MarkerName::kStage) {
      mk.name = m.stage;
      t_->stages.push_back(std::move(mk));
    } else if (steps_from_names) {
      mk.name = name;
      mk.step = m.step >= 0 ? m.step : ++name_steps_;
      name_step_markers_.push_back(std::move(mk));
    }
  }

  void PytorchApi() {
    const uint32_t cat_op = t_->Intern("cpu_op"), cat_ann = t_->Intern("user_annotation");
    r_.Select("PYTORCH_API", {"startNs", "endNs", "globalTid", "connectionId", "name", "inputShapes"},
              [&](sqlite3_stmt* st) {
      int64_t s, e;
      if (!Times(st, 0, 1, &s, &e)) return;
      const uint32_t tr = HostTrack(IntOr(st, 2, 0));
      const uint32_t name = SOrEmpty(st, 4);
      const std::string n = t_->str(name);  // a copy: interning below may move the table
      const bool structure = n.starts_with("ProfilerStep#") || n.find("::") == std::string::npos;
      const size_t row = t_->AddSlice(s, e - s, name, structure ? cat_ann : cat_op, tr);
      t_->shapes[row] = SOrEmpty(st, 5);
      t_->external[row] = IntOr(st, 3, -1);
      Marker(n, s, e, tr, true);
      if (main_track_ == UINT32_MAX) main_track_ = tr;
    });
  }

  void CannApi() {
    const uint32_t cat = t_->Intern("cann_api");
    r_.Select("CANN_API", {"startNs", "endNs", "globalTid", "connectionId", "name"}, [&](sqlite3_stmt* st) {
      int64_t s, e;
      if (!Times(st, 0, 1, &s, &e)) return;
      const uint32_t tr = HostTrack(IntOr(st, 2, 0));
      const size_t row = t_->AddSlice(s, e - s, SOrEmpty(st, 4), cat, tr);
      const int64_t conn = IntOr(st, 3, -1);
      t_->correlation[row] = conn;
      if (conn >= 0) t_->external[row] = OperatorOf(conn);
    });
  }

  void Tasks() {
    struct Info {
      uint32_t name = 0, type = 0;
      bool comm = false;
    };
    std::unordered_map<int64_t, Info> info;
    r_.Select("COMPUTE_TASK_INFO", {"globalTaskId", "name", "taskType", "inputShapes"}, [&](sqlite3_stmt* st) {
      int64_t g;
      if (Int(st, 0, &g)) info[g] = {SOrEmpty(st, 1), SOrEmpty(st, 2), false};
    });
    r_.Select("COMMUNICATION_TASK_INFO", {"globalTaskId", "name"}, [&](sqlite3_stmt* st) {
      int64_t g;
      if (Int(st, 0, &g)) info[g] = {SOrEmpty(st, 1), 0, true};
    });
    const uint32_t cat_kernel = t_->Intern("kernel"), cat_hccl = t_->Intern("hccl_task"),
                   cat_task = t_->Intern("npu_task");
    r_.Select("TASK", {"startNs", "endNs", "deviceId", "connectionId", "globalTaskId", "taskType", "streamId"},
              [&](sqlite3_stmt* st) {
      int64_t s, e;
      if (!Times(st, 0, 1, &s, &e)) return;
      const int64_t dev = IntOr(st, 2, device_ >= 0 ? device_ : 0);
      if (device_ < 0) device_ = dev;
      const uint32_t tr = StreamTrack(dev, IntOr(st, 6, -1));
      const uint32_t task_type = SOrEmpty(st, 5);
      uint32_t name = task_type, cat = cat_task;
      auto it = info.find(IntOr(st, 4, -1));
      if (it != info.end()) {
        name = it->second.name;
        if (it->second.comm) {
          cat = cat_hccl;  // a part of a COMMUNICATION_OP, which carries the time
        } else {
          const std::string ty = t_->str(it->second.type);  // a copy: Intern may move the table
          cat = IsKnownComputeCategory(ty) ? t_->Intern(ty) : cat_kernel;
        }
      }
      const size_t row = t_->AddSlice(s, e - s, name, cat, tr);
      const int64_t conn = IntOr(st, 3, -1);
      t_->correlation[row] = conn;
      if (conn >= 0) t_->external[row] = OperatorOf(conn);
    });
  }

  void CommunicationOps() {
    const uint32_t cat = t_->Intern("communication");
    std::unordered_map<uint32_t, uint32_t> lane_of_group;
    r_.Select("COMMUNICATION_OP", {"opName", "startNs", "endNs", "connectionId", "groupName", "dataType",
                                   "count", "opType"}, [&](sqlite3_stmt* st) {
      int64_t s, e;
      if (!Times(st, 1, 2, &s, &e)) return;
      const uint32_t group = SOrEmpty(st, 4);
      auto [it, fresh] = lane_of_group.try_emplace(group, 0);
      if (fresh) {
        const int32_t dev = static_cast<int32_t>(device_ >= 0 ? device_ : 0);
        it->second = t_->StreamTrack(dev, kHcclGroupLaneBase + static_cast<int64_t>(lane_of_group.size()) - 1);
        t_->tracks[it->second].name = "HCCL " + t_->str(group);
      }
      const size_t row = t_->AddSlice(s, e - s, SOrEmpty(st, 0), cat, it->second);
      const int64_t conn = IntOr(st, 3, -1);
      t_->correlation[row] = conn;
      if (conn >= 0) t_->external[row] = OperatorOf(conn);
      t_->group[row] = group;
      // opType "hcom_allReduce_" → collective "allReduce" ("receive" marks p2p receives).
      std::string op = t_->str(SOrEmpty(st, 7));
      if (op.starts_with("hcom_")) op = op.substr(5);
      while (!op.empty() && op.back() == '_') op.pop_back();
      t_->collective[row] = t_->Intern(op);
      int64_t dtype;
      double count = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 6);
      if (Int(st, 5, &dtype) && count >= 0 && count < 1e15) {
        auto d = dtype_bytes_.find(dtype);
        if (d != dtype_bytes_.end() && d->second > 0) t_->bytes[row] = static_cast<int64_t>(count) * d->second;
      }
    });
  }

  // mstx ranges (MindSpeed-RL marks its stages with them) and marks.
  void Mstx() {
    const uint32_t cat = t_->Intern("user_annotation");
    r_.Select("MSTX_EVENTS", {"startNs", "endNs", "message", "globalTid"}, [&](sqlite3_stmt* st) {
      int64_t s, e;
      if (!Times(st, 0, 1, &s, &e)) return;
      const bool instant = e <= s;
      if (instant && !opts_.keep_instants) return;
      const uint32_t tr = HostTrack(IntOr(st, 3, 0));
      const uint32_t name = SOrEmpty(st, 2);
      t_->AddSlice(s, instant ? 0 : e - s, name, cat, tr, instant ? SliceKind::kInstant : SliceKind::kRange);
      if (!instant) Marker(std::string(t_->str(name)), s, e, tr, true);
    });
  }

  // STEP_TIME (torch_npu's step ranges) when present, else ProfilerStep#N operators.
  void Steps() {
    std::vector<analysis::Marker> table;
    r_.Select("STEP_TIME", {"id", "startNs", "endNs"}, [&](sqlite3_stmt* st) {
      int64_t id, s, e;
      if (!Int(st, 0, &id)) {
        t_->diagnostics.Add("ascend_db_bad_row");
        return;
      }
      if (!Times(st, 1, 2, &s, &e)) return;
      analysis::Marker m;
      m.step = id;
      m.start_ns = s;
      m.end_ns = std::max(s, e);
      m.name = "ProfilerStep#" + std::to_string(id);
      table.push_back(std::move(m));
    });
    std::vector<analysis::Marker>& use = table.empty() ? name_step_markers_ : table;
    if (use.empty()) return;
    if (main_track_ == UINT32_MAX) main_track_ = t_->ThreadTrack(t_->pid >= 0 ? t_->pid : 0, 0);
    for (auto& m : use) {
      if (&use == &table) m.track = main_track_;
      t_->steps.push_back(std::move(m));
    }
  }

  DbReader r_;
  Trace* t_;
  ReadOptions opts_;
  std::vector<uint32_t> dense_;                    // STRING_IDS id → string (dense ids)
  std::unordered_map<int64_t, uint32_t> strings_;  // the rest, and unknown ids
  int64_t last_tid_ = INT64_MIN, last_dev_ = INT64_MIN, last_stream_ = INT64_MIN;
  uint32_t last_host_track_ = UINT32_MAX, last_stream_track_ = UINT32_MAX;
  std::unordered_map<int64_t, int> dtype_bytes_;
  std::unordered_map<int64_t, int64_t> op_of_connection_;
  std::vector<analysis::Marker> name_step_markers_;
  int64_t name_steps_ = 0;
  int64_t device_ = -1;
  uint32_t main_track_ = UINT32_MAX;
};

base::Status ReadOpen(sqlite3* db, const ReadOptions& opts, Trace* trace) {
  // A file cut short (a killed writer) is smaller than its header says; SQLite then refuses
  // the whole file unless the schema may be "written". The connection stays read-only (and
  // query-only): this only lets SQLite trust the file's real length, so every page before the
  // cut is read and the tables it holds come back.
  sqlite3_exec(db, "PRAGMA query_only = ON; PRAGMA writable_schema = ON;", nullptr, nullptr, nullptr);
  Builder b(db, trace, opts);
  base::Status s = b.Run();
  sqlite3_close_v2(db);
  return s;
}

}  // namespace

bool HasSqliteMagicBytes(std::string_view bytes) {
  return bytes.size() >= sizeof kSqliteMagic && std::memcmp(bytes.data(), kSqliteMagic, sizeof kSqliteMagic) == 0;
}

// `path` as an SQLite URI filename ("file:" + the path with %, ?, # and controls escaped).
std::string SqliteUri(const std::string& path) {
  std::string out = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789ABCDEF";
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

bool HasSqliteMagic(const std::string& path) {
  if (!base::CheckRegularFile(path).ok()) return false;  // a FIFO would block the open
  std::ifstream f(path, std::ios::binary);
  char buf[sizeof kSqliteMagic] = {};
  if (!f.read(buf, sizeof buf)) return false;
  return HasSqliteMagicBytes(std::string_view(buf, sizeof buf));
}

bool IsAscendDbName(std::string_view name) {
  if (!name.ends_with(".db")) return false;
  return name.starts_with("ascend_pytorch_profiler") || name.starts_with("msprof_");
}

base::Status ReadAscendDb(const std::string& path, const ReadOptions& opts, Trace* trace) {
  trace->source = path;
  RLPROF_RETURN_IF_ERROR(base::CheckRegularFile(path));  // FIFOs, devices: refused, never opened
  sqlite3* db = nullptr;
  // Read-only, no mutex (one connection per call), and immutable: the file is never written,
  // not even a journal or the -shm file SQLite makes beside a database in WAL mode.
  const std::string uri = SqliteUri(path) + "?immutable=1";
  const int rc = sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                                 nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return base::InvalidArgument(path + ": cannot open as SQLite: " + msg);
  }
  return ReadOpen(db, opts, trace);
}

base::Status ReadAscendDbBytes(std::string_view bytes, const std::string& name, const ReadOptions& opts,
                               Trace* trace) {
  trace->source = name;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    sqlite3_close_v2(db);
    return base::Internal("sqlite: cannot open an in-memory database");
  }
  auto* buf = static_cast<unsigned char*>(sqlite3_malloc64(bytes.size() ? bytes.size() : 1));
  if (buf == nullptr) {
    sqlite3_close_v2(db);
    return base::Internal("sqlite: out of memory");
  }
  if (!bytes.empty()) std::memcpy(buf, bytes.data(), bytes.size());
  const int rc = sqlite3_deserialize(db, "main", buf, static_cast<sqlite3_int64>(bytes.size()),
                                     static_cast<sqlite3_int64>(bytes.size()),
                                     SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY);
  if (rc != SQLITE_OK) {
    sqlite3_close_v2(db);
    return base::InvalidArgument(name + ": not an SQLite database image");
  }
  return ReadOpen(db, opts, trace);
}

std::optional<AscendFolder> FindAscendFolder(const std::string& dir) {
  std::error_code ec;
  fs::path d(dir), out, info;
  if (fs::is_directory(d / "ASCEND_PROFILER_OUTPUT", ec)) {
    out = d / "ASCEND_PROFILER_OUTPUT";
    info = d;
  } else if (d.filename() == "ASCEND_PROFILER_OUTPUT" ||
             (d.filename().empty() && d.parent_path().filename() == "ASCEND_PROFILER_OUTPUT")) {
    out = d;
    info = d.filename().empty() ? d.parent_path().parent_path() : d.parent_path();
  } else {
    return std::nullopt;
  }
  AscendFolder f;
  std::vector<std::string> dbs;
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.starts_with("ascend_pytorch_profiler") && n.ends_with(".db")) dbs.push_back(it->path().string());
  }
  std::sort(dbs.begin(), dbs.end());
  if (!dbs.empty()) {
    f.file = dbs.front();
  } else if (fs::exists(out / "trace_view.json", ec)) {
    f.file = (out / "trace_view.json").string();
  } else if (HasAscendTextOutputs(out.string())) {
    f.text_dir = out.string();
  }
  static const std::regex kInfo(R"(profiler_info_([0-9]{1,9})\.json)");
  std::smatch m;
  for (fs::directory_iterator it(info, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (std::regex_match(n, m, kInfo)) {
      f.rank = std::stoll(m[1].str());
      break;
    }
  }
  return f;
}

}  // namespace rlprof::analysis
