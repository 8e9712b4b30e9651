#include "src/analysis/readers/ascend_text_reader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "src/analysis/readers/chrome_builder.h"
#include "src/analysis/readers/decimal.h"
#include "src/base/time_math.h"
#include "src/base/files.h"

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;

// As the database reader (ascend_db_reader.cc): HCCL operators have no stream, each group gets
// a lane numbered past any real stream id.
constexpr int64_t kHcclGroupLaneBase = int64_t{1} << 40;

bool IsKnownComputeCategory(std::string_view s) {
  return s == "AI_CORE" || s == "AI_VECTOR_CORE" || s == "AI_CPU" || s == "MIX_AIC" ||
         s == "MIX_AIV" || s == "FFTS_PLUS";
}

// One CSV record of one line (torch_npu never writes a newline inside a field): fields split
// at commas outside double quotes, "" inside quotes is a quote. False on an unterminated quote.
bool SplitCsvLine(std::string_view line, std::vector<std::string>* out) {
  out->clear();
  std::string f;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c != '"') {
        f += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        f += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out->push_back(std::move(f));
      f.clear();
    } else {
      f += c;
    }
  }
  out->push_back(std::move(f));
  return !quoted;
}

// "1,32" written as """1,32""" keeps one pair of quotes after unquoting: drop it.
std::string_view Unquote(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

// Milliseconds as decimal text → ns, exact for up to six decimals.
bool ParseMillisToNanos(std::string_view text, int64_t* ns) {
  if (text.find_first_of("eE") == std::string_view::npos) {
    std::string us(text);
    const size_t dot = us.find('.');
    // ms → µs: move the point three places right.
    std::string ip = dot == std::string::npos ? us : us.substr(0, dot);
    std::string fp = dot == std::string::npos ? std::string() : us.substr(dot + 1);
    while (fp.size() < 3) fp += '0';
    return ParseMicrosToNanos(ip + fp.substr(0, 3) + "." + fp.substr(3), ns);
  }
  double v;
  if (!ParseDouble(text, &v) || !(v > -9e9 && v < 9e9)) return false;
  *ns = static_cast<int64_t>(v * 1e6 + (v < 0 ? -0.5 : 0.5));
  return true;
}

class Builder {
 public:
  explicit Builder(Trace* t) : t_(t) {}

  void Kernels(std::string_view text) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      t_->diagnostics.Note("ascend_text_missing_column", t_->source + "/" + kKernelDetailsCsv + ": empty, no header");
      return;
    }
    size_t pos = 0, line_no = 0;
    std::vector<std::string> f;
    std::unordered_map<std::string, size_t> col;
    auto idx = [&](std::initializer_list<const char*> names) -> int {
      for (const char* n : names) {
        auto it = col.find(n);
        if (it != col.end()) return static_cast<int>(it->second);
      }
      return -1;
    };
    int c_start = -1, c_dur = -1, c_stream = -1, c_name = -1, c_core = -1, c_shapes = -1, c_step = -1, c_dev = -1;
    const uint32_t cat_kernel = t_->Intern("kernel");
    size_t header_fields = 0, rows = 0;
    while (pos < text.size()) {
      // Lines end in "\n", "\r\n" or a lone "\r" (old Mac-style files, a CSV saved by some
      // spreadsheet tools): each is one line end.
      size_t nl = text.find_first_of("\r\n", pos);
      if (nl == std::string_view::npos) nl = text.size();
      std::string_view line = text.substr(pos, nl - pos);
      pos = nl + 1;
      if (nl < text.size() && text[nl] == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
      if (line_no++ == 0) {
        if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);  // a BOM (Excel-saved files)
        SplitCsvLine(line, &f);
        header_fields = f.size();
        for (size_t i = 0; i < f.size(); ++i) col.emplace(std::string(f[i]), i);
        // Older op_summary-style headers (msprof-analyze's advisor CsvTitle) name them "Task …".
        c_start = idx({"Start Time(us)", "Task Start Time(us)"});
        c_dur = idx({"Duration(us)", "Task Duration(us)"});
        c_stream = idx({"Stream ID"});
        c_name = idx({"Name", "Op Name"});
        c_core = idx({"Accelerator Core", "Task Type"});
        c_shapes = idx({"Input Shapes"});
        c_step = idx({"Step Id", "Step ID"});
        c_dev = idx({"Device_id", "Device ID"});
        if (c_start < 0 || c_dur < 0) {
          t_->diagnostics.Note("ascend_text_missing_column",
                               t_->source + "/" + kKernelDetailsCsv + ": no Start Time(us) / Duration(us) column");
          return;
        }
        continue;
      }
      if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
      ++rows;
      const int need = std::max(c_start, c_dur);
      int64_t s, d;
      // A row with fewer fields than the header was cut (a killed writer, a copy cut short):
      // its last field may be a cut number, so the row is not trusted.
      if (!SplitCsvLine(line, &f) || static_cast<int>(f.size()) <= need || f.size() < header_fields ||
          !ParseMicrosToNanos(f[c_start], &s) ||
          !ParseMicrosToNanos(f[c_dur], &d) || !base::IsValidTime(s) || d > base::kMaxTimeNs ||
          d < -base::kMaxTimeNs) {
        t_->diagnostics.Note("ascend_text_bad_row",
                             t_->source + "/" + kKernelDetailsCsv + ": line " + std::to_string(line_no));
        continue;
      }
      auto field = [&](int c) -> std::string_view {
        return c >= 0 && static_cast<size_t>(c) < f.size() ? std::string_view(f[c]) : std::string_view();
      };
      int64_t stream = -1, dev = 0, step = -1;
      if (!ParseInteger(field(c_stream), &stream)) stream = -1;
      if (!ParseInteger(field(c_dev), &dev) || dev < 0 || dev > INT32_MAX) dev = 0;
      if (device_ < 0) device_ = dev;
      const std::string_view core = field(c_core);
      if (ParseInteger(field(c_step), &step)) Extend(step, s, s + std::max<int64_t>(d, 0));
      if (core == "COMMUNICATION" || core == "HCCL") {
        // An HCCL operator (torch_npu lists them too, without stream, group or size): kept for
        // when communication.json, which has all three, gives none (FlushKernelComm).
        kernel_comm_.push_back({s, d, std::string(field(c_name))});
        continue;
      }
      const uint32_t cat = IsKnownComputeCategory(core) ? t_->Intern(core) : cat_kernel;
      const uint32_t tr = t_->StreamTrack(static_cast<int32_t>(dev), stream);
      const size_t row = t_->AddSlice(s, d, t_->Intern(TruncateName(field(c_name), &t_->diagnostics)),
                                      cat, tr);
      t_->shapes[row] = t_->Intern(Unquote(field(c_shapes)));
    }
    if (rows == 0)
      t_->diagnostics.Note("ascend_text_empty", t_->source + "/" + kKernelDetailsCsv + ": a header and no rows");
  }

  // The HCCL operators of kernel_details.csv become the communication when communication.json
  // gave none (absent, or unreadable before its first operator); else they are its duplicates.
  // Without a group, each "hcom_<op>__<id>_…" id (the group's hash tail) gets its own lane.
  void FlushKernelComm() {
    if (comm_ops_ > 0) return;
    for (const KernelComm& k : kernel_comm_) {
      const std::string tail = k.name.find("__") == std::string::npos ? "" : k.name.substr(k.name.find("__") + 2);
      AddComm(k.s, k.d, k.name, "", "#" + tail.substr(0, tail.find('_')), -1);
    }
  }

  // One HCCL operator on its group's lane.
  void AddComm(int64_t s, int64_t d, const std::string& name, const std::string& group, const std::string& lane,
               int64_t bytes) {
    auto [it, fresh] = lane_of_group_.try_emplace(lane, 0);
    if (fresh) {
      const int32_t dev = static_cast<int32_t>(device_ >= 0 ? device_ : 0);
      it->second = t_->StreamTrack(dev, kHcclGroupLaneBase + static_cast<int64_t>(lane_of_group_.size()) - 1);
      t_->tracks[it->second].name = "HCCL " + lane;
    }
    const size_t row = t_->AddSlice(s, d, t_->Intern(TruncateName(name, &t_->diagnostics)), cat_comm_, it->second);
    t_->group[row] = t_->Intern(group);
    // "hcom_allReduce__1_0_1" → collective "allReduce" ("receive" marks p2p receives).
    std::string coll = name.starts_with("hcom_") ? name.substr(5) : name;
    coll = coll.substr(0, coll.find("__"));
    while (!coll.empty() && coll.back() == '_') coll.pop_back();
    t_->collective[row] = t_->Intern(coll);
    t_->bytes[row] = bytes;
  }

  void Communication(const std::string& text);

  void Steps() {
    if (windows_.empty()) return;
    const uint32_t track = t_->ThreadTrack(t_->pid >= 0 ? t_->pid : 0, 0);
    for (const auto& [step, w] : windows_) {
      Marker m;
      m.step = step;
      m.start_ns = w.first;
      m.end_ns = w.second;
      m.track = track;
      m.name = "ProfilerStep#" + std::to_string(step);
      t_->steps.push_back(std::move(m));
    }
  }

  // Device work of step `step` covers [s, e).
  void Extend(int64_t step, int64_t s, int64_t e) {
    auto [it, fresh] = windows_.try_emplace(step, s, e);
    if (!fresh) {
      it->second.first = std::min(it->second.first, s);
      it->second.second = std::max(it->second.second, e);
    }
  }

  struct KernelComm {
    int64_t s, d;
    std::string name;
  };
  Trace* t_;
  int64_t device_ = -1;
  size_t comm_ops_ = 0;  // operators read from communication.json
  uint32_t cat_comm_ = t_->Intern("communication");
  std::vector<KernelComm> kernel_comm_;
  std::unordered_map<std::string, uint32_t> lane_of_group_;
  std::map<int64_t, std::pair<int64_t, int64_t>> windows_;
};

// communication.json through nlohmann's SAX parser: numbers keep their text (exact), a parse
// error stops the read and keeps every operator completed before it.
class CommSax {
 public:
  struct Op {
    std::string step, name;
    std::string start, elapse;                // number texts
    std::map<std::string, double> size_mb;    // transport → Transit Size(MB)
  };
  explicit CommSax(std::vector<Op>* ops) : ops_(ops) {}

  // What the document's top-level value is (communication.json holds an object of steps).
  enum class Top { kNone, kObject, kArray, kNull, kScalar };
  Top top() const { return top_; }
  std::string TopName() const {
    switch (top_) {
      case Top::kNone: return "nothing";
      case Top::kObject: return "an object";
      case Top::kArray: return "a list";
      case Top::kNull: return "null";
      case Top::kScalar: return "a string, number or boolean";
    }
    return "?";
  }

  bool null() { return Seen(Top::kNull) && Value("null"); }
  bool boolean(bool) { return Seen(Top::kScalar) && Value(""); }
  bool number_integer(int64_t v) { return Seen(Top::kScalar) && Value(std::to_string(v)); }
  bool number_unsigned(uint64_t v) { return Seen(Top::kScalar) && Value(std::to_string(v)); }
  bool number_float(double, const std::string& s) { return Seen(Top::kScalar) && Value(s); }
  bool string(std::string&) { return Seen(Top::kScalar) && Value(""); }
  bool binary(nlohmann::json::binary_t&) { return Seen(Top::kScalar) && Value(""); }
  bool start_object(size_t) {
    Seen(Top::kObject);
    path_.push_back(key_);
    key_.clear();
    if (path_.size() == 4) op_ = Op{path_[1], path_[3], "", "", {}};  // {root, step, kind, op}
    return path_.size() < 64;
  }
  bool end_object() {
    if (path_.size() == 4 && path_[3] != "Total Op Info" && !path_[3].starts_with("Total Op Info@"))
      ops_->push_back(std::move(op_));
    path_.pop_back();
    return true;
  }
  bool start_array(size_t) {
    Seen(Top::kArray);
    path_.push_back(key_);
    return path_.size() < 64;
  }
  bool end_array() {
    path_.pop_back();
    return true;
  }
  bool key(std::string& k) {
    key_ = k;
    return true;
  }
  bool parse_error(size_t at, const std::string&, const nlohmann::detail::exception&) {
    error_at_ = at;
    return false;
  }
  size_t error_at() const { return error_at_; }

 private:
  bool Seen(Top kind) {
    if (path_.empty() && top_ == Top::kNone) top_ = kind;
    return true;
  }
  bool Value(const std::string& text) {
    // {root, step, kind, op, "Communication Time Info"} . key
    if (path_.size() == 5 && path_[4] == "Communication Time Info") {
      if (key_ == "Start Timestamp(us)") op_.start = text;
      if (key_ == "Elapse Time(ms)") op_.elapse = text;
    } else if (path_.size() == 6 && path_[4] == "Communication Bandwidth Info" && key_ == "Transit Size(MB)") {
      double v;
      if (ParseDouble(text, &v)) op_.size_mb[path_[5]] = v;
    }
    return true;
  }

  std::vector<Op>* ops_;
  std::vector<std::string> path_;
  std::string key_;
  Op op_;
  size_t error_at_ = 0;
  Top top_ = Top::kNone;
};

void Builder::Communication(const std::string& text) {
  std::vector<CommSax::Op> ops;
  CommSax sax(&ops);
  const std::string where = t_->source + "/" + kCommunicationJson;
  if (!nlohmann::json::sax_parse(text, &sax, nlohmann::json::input_format_t::json, /*strict=*/true))
    t_->diagnostics.Note("ascend_text_corrupt", where + ": stops parsing at byte " +
                                                    std::to_string(std::min(sax.error_at(), text.size())) + " of " +
                                                    std::to_string(text.size()) + "; " + std::to_string(ops.size()) +
                                                    " operators read before");
  else if (sax.top() != CommSax::Top::kObject)
    // null, a list, a string, a number: valid JSON, but not communication.json's {step: …}.
    t_->diagnostics.Note("ascend_text_corrupt", where + ": " + sax.TopName() +
                                                    " where an object of steps was expected; no communication read");
  else if (ops.empty())
    t_->diagnostics.Note("ascend_text_empty", where + ": no communication operators");
  for (const CommSax::Op& op : ops) {
    int64_t s, d;
    if (!ParseMicrosToNanos(op.start, &s) || !ParseMillisToNanos(op.elapse, &d) || !base::IsValidTime(s) ||
        d < 0 || d > base::kMaxTimeNs) {
      t_->diagnostics.Note("ascend_text_bad_row", where + ": " + op.name + " without a readable start or elapse time");
      continue;
    }
    const size_t at = op.name.rfind('@');
    const std::string group = at == std::string::npos ? std::string() : op.name.substr(at + 1);
    // SDMA already sums the on-chip links (HCCS, PCIE); RDMA is the network.
    auto get = [&](const char* k) { auto i = op.size_mb.find(k); return i == op.size_mb.end() ? 0.0 : i->second; };
    const double mb = op.size_mb.count("SDMA") || op.size_mb.count("RDMA") ? get("SDMA") + get("RDMA")
                                                                            : get("HCCS") + get("PCIE");
    AddComm(s, d, op.name.substr(0, at), group, group, mb > 0 && mb < 1e12 ? static_cast<int64_t>(mb * 1e6 + 0.5) : -1);
    ++comm_ops_;
    int64_t step;
    if (op.step.starts_with("step") && ParseInteger(std::string_view(op.step).substr(4), &step) &&
        op.step.size() > 4)
      Extend(step, s, s + d);
  }
}

std::optional<std::string> Slurp(const fs::path& p, Trace* t) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  if (base::Status regular = base::CheckRegularFile(p.string()); !regular.ok()) {
    t->diagnostics.Note("input_unreadable_file", regular.message());  // a FIFO: never opened
    return std::nullopt;
  }
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  if (!f || !(ss << f.rdbuf())) {
    if (f && f.peek() == std::ifstream::traits_type::eof()) return std::string();
    t->diagnostics.Note("input_unreadable_file", p.string() + ": cannot read");
    return std::nullopt;
  }
  return ss.str();
}

}  // namespace

bool HasAscendTextOutputs(const std::string& out_dir) {
  std::error_code ec;
  return fs::exists(fs::path(out_dir) / kKernelDetailsCsv, ec) || fs::exists(fs::path(out_dir) / kCommunicationJson, ec);
}

AscendTextFiles LoadAscendTextFiles(const std::string& out_dir, Trace* trace) {
  AscendTextFiles f;
  f.kernel_details = Slurp(fs::path(out_dir) / kKernelDetailsCsv, trace);
  f.communication = Slurp(fs::path(out_dir) / kCommunicationJson, trace);
  return f;
}

base::Status ReadAscendText(const AscendTextFiles& files, const std::string& name, const ReadOptions&,
                            Trace* trace) {
  trace->source = name;
  if (!files.kernel_details && !files.communication)
    return base::InvalidArgument(name + ": neither kernel_details.csv nor communication.json to read");
  trace->format = "ascend-text";
  trace->whole_trace_is_work_span = true;
  Builder b(trace);
  if (files.kernel_details) {
    b.Kernels(*files.kernel_details);
  } else {
    trace->diagnostics.Note("ascend_text_missing_file", name + "/" + kKernelDetailsCsv + ": absent (no compute work)");
  }
  if (files.communication) {
    b.Communication(*files.communication);
  } else {
    trace->diagnostics.Note("ascend_text_missing_file",
                            name + "/" + kCommunicationJson +
                                (b.kernel_comm_.empty() ? ": absent (no communication)"
                                                        : ": absent (communication from kernel_details.csv's "
                                                          "COMMUNICATION rows: no groups, no sizes)"));
  }
  b.FlushKernelComm();
  b.Steps();
  trace->Finalize();
  return base::Status::Ok();
}

base::Status ReadAscendTextBytes(std::string_view bytes, const std::string& name, const ReadOptions& opts,
                                 Trace* trace) {
  AscendTextFiles f;
  const size_t sep = bytes.find("\n\x1e\n");
  f.kernel_details = std::string(bytes.substr(0, sep));
  if (sep != std::string_view::npos) f.communication = std::string(bytes.substr(sep + 3));
  return ReadAscendText(f, name, opts, trace);
}

}  // namespace rlprof::analysis
