#include "src/analysis/readers/readers.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>

#include "src/analysis/readers/areal_reader.h"
#include "src/analysis/readers/ascend_db_reader.h"
#include "src/analysis/readers/ascend_text_reader.h"
#include "src/analysis/readers/capture_reader.h"
#include "src/analysis/readers/chrome_json_reader.h"
#include "src/base/files.h"
#include "src/analysis/readers/input_buffer.h"
#include "src/format/capture.h"
#include "src/format/raw.h"

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;

bool HasRawMagic(const std::string& path) {
  if (!base::CheckRegularFile(path).ok()) return false;  // a FIFO would block the open
  std::ifstream f(path, std::ios::binary);
  char buf[sizeof(format::kRawMagic)] = {};
  if (!f.read(buf, sizeof buf)) return false;
  return std::memcmp(buf, format::kRawMagic, sizeof buf) == 0;
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A *.json(.gz) file whose head looks like a Chrome trace (an object with "traceEvents", or an
// array of events): keeps manifests, Ascend summaries and configs out of directory expansion.
bool LooksLikeTraceFile(const std::string& path) {
  if (!base::CheckRegularFile(path).ok()) return false;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  std::string head(256 << 10, '\0');
  int n = gzread(f, head.data(), static_cast<unsigned>(head.size()));
  gzclose(f);
  if (n <= 0) return false;
  head.resize(static_cast<size_t>(n));
  size_t i = head.find_first_not_of(" \t\r\n");
  if (i == std::string::npos) return false;
  if (head[i] == '{') return head.find("\"traceEvents\"") != std::string::npos;
  if (head[i] == '[') return head.find("\"ph\"") != std::string::npos;
  return false;
}

// Stage markers that lack a step take the step marker that encloses their start.
void AssignStageSteps(Trace* t) {
  if (t->steps.empty()) return;
  for (Marker& s : t->stages) {
    if (s.step != 0) continue;
    for (const Marker& st : t->steps) {
      if (st.start_ns <= s.start_ns && s.start_ns < st.end_ns) {
        s.step = st.step;
        break;
      }
    }
  }
}

base::StatusOr<Trace> ReadCapture(const std::string& path, const ReadOptions& opts) {
  RLPROF_ASSIGN_OR_RETURN(format::Capture c, format::LoadCapture(path));
  Trace t = TraceFromCapture(c, opts);
  AssignStageSteps(&t);
  return t;
}

// A JSON trace already in memory (decompressed): ReadChromeJson plus the bookkeeping of a file.
base::StatusOr<Trace> ReadJsonInput(InputBuffer& in, const std::string& name,
                                    const ReadOptions& opts) {
  Trace t;
  t.source = name;
  t.diagnostics.Merge(in.diagnostics);
  if (in.diagnostics.Get("truncated_gzip")) t.diagnostics.Add("truncated_input");
  if (in.size() == 0) return base::InvalidArgument(name + ": empty file");
  RLPROF_RETURN_IF_ERROR(ReadChromeJson(in, opts, &t));
  // The raw "truncated_input" of a cut gzip and of the JSON it held are one problem.
  if (t.diagnostics.Get("truncated_input") > 1) t.diagnostics.counts["truncated_input"] = 1;
  AssignStageSteps(&t);
  return t;
}

base::StatusOr<Trace> ReadDb(const std::string& path, const ReadOptions& opts) {
  Trace t;
  RLPROF_RETURN_IF_ERROR(ReadAscendDb(path, opts, &t));
  AssignStageSteps(&t);
  return t;
}

// A torch_npu output folder: its database, else its trace_view.json; the folder's rank.
base::StatusOr<Trace> ReadAscendFolder(const std::string& dir, const AscendFolder& f,
                                       const ReadOptions& opts) {
  if (f.file.empty() && f.text_dir.empty())
    return base::InvalidArgument(dir +
                                 ": an Ascend profiler folder without ascend_pytorch_profiler*.db, "
                                 "trace_view.json, kernel_details.csv or communication.json in "
                                 "ASCEND_PROFILER_OUTPUT");
  Trace t;
  if (!f.text_dir.empty()) {
    AscendTextFiles files = LoadAscendTextFiles(f.text_dir, &t);
    RLPROF_RETURN_IF_ERROR(ReadAscendText(files, f.text_dir, opts, &t));
    AssignStageSteps(&t);
  } else if (HasSqliteMagic(f.file)) {
    RLPROF_ASSIGN_OR_RETURN(t, ReadDb(f.file, opts));
  } else {
    RLPROF_ASSIGN_OR_RETURN(InputBuffer in, ReadInputFile(f.file));
    RLPROF_ASSIGN_OR_RETURN(t, ReadJsonInput(in, f.file, opts));
  }
  if (t.rank < 0) t.rank = f.rank;
  return t;
}

}  // namespace

// ---- The registry: every format once, in the order they are tried (magic bytes before names;
// the JSON reader last, as the fallback). To add a format: a reader file and one entry here.

namespace {

struct FormatReader {
  const char* name;
  bool (*claims_dir)(const std::string& path);  // a folder it reads (null: none)
  // A regular file it reads, by content first, name second (null: none).
  bool (*claims_file)(const std::string& path);
  bool (*claims_bytes)(std::string_view bytes);  // bytes in memory (null: none)
  base::StatusOr<Trace> (*read_dir)(const std::string& path, const ReadOptions& opts);
  base::StatusOr<Trace> (*read_file)(const std::string& path, const ReadOptions& opts);
  base::StatusOr<Trace> (*read_bytes)(std::string_view bytes, const std::string& name, const ReadOptions& opts);
};

bool IsCaptureDir(const std::string& path) {
  return fs::exists(fs::path(path) / "manifest.json") || fs::exists(fs::path(path) / "events.rlp");
}
bool IsCaptureFile(const std::string& path) {
  return HasRawMagic(path) ||
         (fs::path(path).filename() == "manifest.json" && fs::exists(fs::path(path).parent_path() / "events.rlp"));
}
bool HasRawMagicBytes(std::string_view bytes) {
  return bytes.size() >= sizeof(format::kRawMagic) &&
         std::memcmp(bytes.data(), format::kRawMagic, sizeof(format::kRawMagic)) == 0;
}
base::StatusOr<Trace> ReadCaptureFile(const std::string& path, const ReadOptions& opts) {
  // A capture's manifest.json stands for its folder.
  return ReadCapture(HasRawMagic(path) ? path : fs::path(path).parent_path().string(), opts);
}
base::StatusOr<Trace> ReadCaptureBytes(std::string_view bytes, const std::string& name, const ReadOptions& opts) {
  RLPROF_ASSIGN_OR_RETURN(format::Capture c, format::LoadCaptureBytes(bytes, name));
  Trace t = TraceFromCapture(c, opts);
  AssignStageSteps(&t);
  return t;
}

bool IsAscendDir(const std::string& path) { return FindAscendFolder(path).has_value(); }
base::StatusOr<Trace> ReadAscendDir(const std::string& path, const ReadOptions& opts) {
  return ReadAscendFolder(path, *FindAscendFolder(path), opts);
}

bool IsDbFile(const std::string& path) {
  return HasSqliteMagic(path) || IsAscendDbName(fs::path(path).filename().string());
}
base::StatusOr<Trace> ReadDbFile(const std::string& path, const ReadOptions& opts) {
  if (!HasSqliteMagic(path))
    return base::InvalidArgument(path + ": named like an Ascend profiler database but not an SQLite file "
                                        "(its header is damaged or it is not a database)");
  return ReadDb(path, opts);
}
base::StatusOr<Trace> ReadDbBytes(std::string_view bytes, const std::string& name, const ReadOptions& opts) {
  Trace t;
  RLPROF_RETURN_IF_ERROR(ReadAscendDbBytes(bytes, name, opts, &t));
  AssignStageSteps(&t);
  return t;
}

base::StatusOr<Trace> ReadArealInput(const std::string& path, const ReadOptions&) { return ReadArealFile(path); }
base::StatusOr<Trace> ReadArealInputBytes(std::string_view bytes, const std::string& name, const ReadOptions&) {
  return ReadArealBytes(bytes, name);
}

bool Anything(const std::string&) { return true; }
bool AnyBytes(std::string_view) { return true; }
base::StatusOr<Trace> ReadJsonFile(const std::string& path, const ReadOptions& opts) {
  RLPROF_ASSIGN_OR_RETURN(InputBuffer in, ReadInputFile(path));
  return ReadJsonInput(in, path, opts);
}
base::StatusOr<Trace> ReadJsonBytes(std::string_view bytes, const std::string& name, const ReadOptions& opts) {
  InputBuffer in = InputFromBytes(bytes);
  return ReadJsonInput(in, name, opts);
}

constexpr FormatReader kReaders[] = {
    {"rlprof capture", IsCaptureDir, IsCaptureFile, HasRawMagicBytes, ReadCapture, ReadCaptureFile,
     ReadCaptureBytes},
    {"Ascend profiler folder", IsAscendDir, nullptr, nullptr, ReadAscendDir, nullptr, nullptr},
    {"Ascend profiler database", nullptr, IsDbFile, HasSqliteMagicBytes, nullptr, ReadDbFile, ReadDbBytes},
    // AReaL session traces (sessions-r*.jsonl): JSON Lines of session records, by content.
    {"AReaL session trace", nullptr, IsArealSessionsFile, IsArealSessionsBytes, nullptr, ReadArealInput,
     ReadArealInputBytes},
    // Kineto / torch.profiler JSON, legacy torch JSON, Ascend trace_view.json (gzip transparent).
    {"Chrome trace JSON", nullptr, Anything, AnyBytes, nullptr, ReadJsonFile, ReadJsonBytes},
};

}  // namespace

base::StatusOr<Trace> ReadTrace(const std::string& path, const ReadOptions& opts) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return base::NotFound(path + ": no such file or directory");
  if (fs::is_directory(st)) {
    for (const FormatReader& r : kReaders)
      if (r.claims_dir != nullptr && r.claims_dir(path)) return r.read_dir(path, opts);
    return base::InvalidArgument(path +
                                 ": a directory that is not a capture (no manifest.json or "
                                 "events.rlp) nor an Ascend profiler folder; expand it with "
                                 "FindTraceInputs");
  }
  RLPROF_RETURN_IF_ERROR(base::CheckRegularFile(path));  // FIFOs, devices: refused, never opened
  for (const FormatReader& r : kReaders)
    if (r.claims_file != nullptr && r.claims_file(path)) return r.read_file(path, opts);
  return base::InvalidArgument(path + ": no reader claims it");  // unreachable: JSON claims anything
}

base::StatusOr<Trace> ReadTraceBytes(std::string_view bytes, const std::string& name,
                                     const ReadOptions& opts) {
  for (const FormatReader& r : kReaders)
    if (r.claims_bytes != nullptr && r.claims_bytes(bytes)) return r.read_bytes(bytes, name, opts);
  return base::InvalidArgument(name + ": no reader claims it");
}

namespace {

// Walks `dir` (not a capture itself) depth-first. Unlike recursive_directory_iterator, an
// unreadable sub-folder is counted and skipped and the walk goes on.
void WalkForInputs(const fs::path& dir, std::set<std::string>* out, Diagnostics* diag) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) {
    diag->Note("input_unreadable_dir", dir.string() + ": cannot list: " + ec.message());
    return;
  }
  std::vector<fs::path> entries;
  for (; it != end; it.increment(ec)) {
    entries.push_back(it->path());
  }
  if (ec) diag->Note("input_unreadable_dir", dir.string() + ": listing stopped: " + ec.message());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& q : entries) {
    std::error_code ec2;
    const fs::file_status st = fs::status(q, ec2);
    if (ec2) {
      // A dangling link or an entry we may not stat.
      diag->Note("input_unreadable_file", q.string() + ": " + ec2.message());
      continue;
    }
    if (fs::is_directory(st)) {
      if (fs::exists(q / "manifest.json", ec2) || FindAscendFolder(q.string())) {
        out->insert(q.string());
        continue;  // a capture or a torch_npu output folder: one input, not searched further
      }
      // Linked folders are not descended into (a link to a parent would never end).
      if (!fs::is_symlink(fs::symlink_status(q, ec2))) WalkForInputs(q, out, diag);
      continue;
    }
    const std::string name = q.filename().string();
    const bool events = name == "events.rlp";
    const bool json = (EndsWith(name, ".json") || EndsWith(name, ".json.gz")) && name != "manifest.json";
    const bool jsonl = EndsWith(name, ".jsonl") || EndsWith(name, ".jsonl.gz");  // AReaL session traces
    const bool db = IsAscendDbName(name);  // taken by name: a damaged header is reported, not skipped
    if (!events && !json && !jsonl && !db) continue;
    if (fs::is_regular_file(st) && fs::file_size(q, ec2) == 0 && !ec2) {
      diag->Note("input_empty_file", q.string() + ": empty file skipped");
      continue;
    }
    if (db) {
      out->insert(q.string());
      continue;
    }
    if (events) {
      // The manifest would have made the folder a capture: read the events on their own.
      diag->Note("input_events_without_manifest",
                 q.string() + ": no manifest.json beside it; identity from the events header");
      out->insert(q.string());
      continue;
    }
    if (base::Status regular = base::CheckRegularFile(q.string()); !regular.ok()) {
      diag->Note("input_unreadable_file", regular.message());  // a FIFO, a device: never opened
      continue;
    }
    if (std::ifstream probe(q, std::ios::binary); !probe) {
      diag->Note("input_unreadable_file", q.string() + ": cannot open");
      continue;
    }
    if (jsonl ? IsArealSessionsFile(q.string()) : LooksLikeTraceFile(q.string()) || IsArealSessionsFile(q.string()))
      out->insert(q.string());
  }
}

}  // namespace

base::StatusOr<std::vector<std::string>> FindTraceInputs(const std::vector<std::string>& paths,
                                                         Diagnostics* diag) {
  Diagnostics local;
  if (diag == nullptr) diag = &local;
  std::set<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) return base::NotFound(p + ": no such file or directory");
    if (!fs::is_directory(st)) {
      out.insert(p);
      continue;
    }
    if (fs::exists(fs::path(p) / "manifest.json", ec) || fs::exists(fs::path(p) / "events.rlp", ec) ||
        FindAscendFolder(p)) {
      out.insert(p);  // a capture directory (ReadTrace notes a missing manifest), an Ascend folder
      continue;
    }
    WalkForInputs(p, &out, diag);
  }
  return std::vector<std::string>(out.begin(), out.end());
}

}  // namespace rlprof::analysis
