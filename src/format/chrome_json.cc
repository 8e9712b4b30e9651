#include "src/format/chrome_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <unordered_map>
#include <vector>

#include "src/base/time_math.h"
#include "src/format/event_schema.h"
#include "src/format/json_escape.h"
#include "src/format/output_file.h"
#include "src/format/trace_layout.h"

namespace rlprof::format {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

void AppendInt(std::string* out, int64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  out->append(b, r.ptr);
}

void AppendUint(std::string* out, uint64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  out->append(b, r.ptr);
}

void AppendDouble(std::string* out, double v) {
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);  // shortest text that reads back the same
  out->append(b, r.ptr);
}

class Writer {
 public:
  Writer(std::span<const Capture> captures, ByteSink* sink, ExportStats* stats)
      : captures_(captures), layout_(BuildTraceLayout(captures)), sink_(sink), stats_(stats) {}

  void Run() {
    buf_ = "{\"traceEvents\":[";
    Metadata();
    for (size_t i = 0; i < captures_.size(); ++i) Events(i);
    buf_ += "\n],\n\"displayTimeUnit\":\"ns\",\n";
    if (layout_.base_realtime_ns != 0) {
      buf_ += "\"baseTimeNanoseconds\":";
      AppendInt(&buf_, layout_.base_realtime_ns);
      buf_ += ",\n";
    }
    OtherData();
    buf_ += "}\n";
    sink_->Write(buf_);
    buf_.clear();
  }

 private:
  void Open(char ph) {
    buf_ += first_ ? "\n{\"ph\":\"" : ",\n{\"ph\":\"";
    buf_ += ph;
    buf_ += '"';
    first_ = false;
  }
  void Key(const char* k) {
    buf_ += ",\"";
    buf_ += k;
    buf_ += "\":";
  }
  void Close() {
    buf_ += '}';
    if (buf_.size() >= kFlushBytes) {
      sink_->Write(buf_);
      buf_.clear();
    }
  }

  void MetaEvent(const char* what, int64_t pid, int64_t tid, const char* arg,
                 const std::string* text, int64_t number) {
    Open('M');
    Key("name");
    AppendJsonString(&buf_, what);
    Key("pid");
    AppendInt(&buf_, pid);
    Key("tid");
    AppendInt(&buf_, tid);
    Key("args");
    buf_ += "{\"";
    buf_ += arg;
    buf_ += "\":";
    if (text != nullptr) AppendJsonString(&buf_, *text);
    else AppendInt(&buf_, number);
    buf_ += '}';
    Close();
  }

  void Metadata() {
    for (const ProcessLayout& p : layout_.processes) {
      MetaEvent("process_name", p.pid, 0, "name", &p.name, 0);
      MetaEvent("process_labels", p.pid, 0, "labels", &p.label, 0);
      MetaEvent("process_sort_index", p.pid, 0, "sort_index", nullptr, p.sort_index);
    }
    std::set<std::pair<int64_t, int64_t>> named;
    for (const CaptureLayout& c : layout_.captures) {
      std::vector<const TrackLayout*> tracks;
      for (const auto& [id, t] : c.tracks) tracks.push_back(&t);
      std::sort(tracks.begin(), tracks.end(), [](auto* a, auto* b) {
        return a->sort_index < b->sort_index;
      });
      for (const TrackLayout* t : tracks) {
        if (t->kind != TrackKind::kThread && t->kind != TrackKind::kDeviceStream) continue;
        int64_t pid = layout_.processes[t->process].pid;
        if (!named.insert({pid, t->tid}).second) continue;
        MetaEvent("thread_name", pid, t->tid, "name", &t->name, 0);
        MetaEvent("thread_sort_index", pid, t->tid, "sort_index", nullptr, t->sort_index);
      }
    }
  }

  void Common(const Capture& c, const Event& e, const TrackLayout& t, uint32_t name_id,
              const std::string* name_override) {
    Key("cat");
    AppendJsonString(&buf_, CategoryName(e.category));
    Key("name");
    AppendJsonString(&buf_, name_override != nullptr ? *name_override : c.raw.str(name_id));
    Key("pid");
    AppendInt(&buf_, layout_.processes[t.process].pid);
    Key("tid");
    AppendInt(&buf_, t.tid);
    Key("ts");
    AppendMicros(&buf_, base::SatSub(base::SatAdd(e.ts_ns, offset_), layout_.base_ns));
  }

  void Args(const Capture& c, const Event& e) {
    ArgSpec spec = ArgSpecFor(e.category);
    bool any = false;
    auto key = [&](const char* k) {
      buf_ += any ? ",\"" : ",\"args\":{\"";
      buf_ += k;
      buf_ += "\":";
      any = true;
    };
    if (e.category == Category::kAllocation && e.kind == EventKind::kInstant) {
      key("bytes");  // signed: a free is negative
      AppendInt(&buf_, e.payload);
    }
    if (spec.arg0 != nullptr && spec.arg0_is_string) {
      if (e.arg0 != 0) {
        key(spec.arg0);
        AppendJsonString(&buf_, c.raw.str(e.arg0));
      }
    } else if (spec.arg0 != nullptr) {
      key(spec.arg0);
      AppendUint(&buf_, e.arg0);
    } else if (e.arg0 != 0) {
      key("arg0");
      AppendUint(&buf_, e.arg0);
    }
    if (spec.arg1 != nullptr && spec.arg1_is_string) {
      if (e.arg1 != 0) {
        key(spec.arg1);
        AppendJsonString(&buf_, c.raw.str(e.arg1));
      }
    } else if (e.arg1 != 0) {
      key(spec.arg1 != nullptr ? spec.arg1 : "arg1");
      AppendUint(&buf_, e.arg1);
    }
    if (any) buf_ += '}';
  }

  // A sample's phase (category sample, src/runtime/sample_source.h) as a nestable async slice
  // whose id is the sample's: a sample and its phases nest, and samples never clip each other.
  void SampleSlice(size_t ci, const Capture& c, const Event& e, const TrackLayout& t) {
    char id[48] = "s";
    auto r = std::to_chars(id + 1, id + sizeof id, ci, 16);
    *r.ptr = '.';
    r = std::to_chars(r.ptr + 1, id + sizeof id, e.arg0, 16);
    const std::string_view sid(id, r.ptr - id);
    Open('b');
    Common(c, e, t, e.name, nullptr);
    Key("id");
    AppendJsonString(&buf_, sid);
    Args(c, e);
    Close();
    Event end = e;
    end.ts_ns = base::SatAdd(e.ts_ns, e.payload);
    Open('e');
    Common(c, end, t, e.name, nullptr);
    Key("id");
    AppendJsonString(&buf_, sid);
    Close();
    stats_->events += 2;
  }

  void Events(size_t ci) {
    const Capture& c = captures_[ci];
    offset_ = layout_.captures[ci].offset_ns;
    std::unordered_map<uint16_t, std::vector<int64_t>> open;  // per track: ends of open slices
    std::unordered_map<int64_t, uint32_t> async_names;        // range id → begin's name
    LaunchFlows flows(c);
    std::unordered_map<uint32_t, uint8_t> flow_done;  // correlation → ends written (bits)
    for (const Event& e : c.raw.events) {
      const TrackLayout& t = layout_.Track(ci, e.track);
      switch (e.kind) {
        case EventKind::kComplete: {
          if (e.payload < 0) {
            ++stats_->skipped_events;
            continue;
          }
          if (e.category == Category::kSample) {  // samples overlap: one async slice each
            SampleSlice(ci, c, e, t);
            continue;
          }
          auto& stack = open[e.track];
          while (!stack.empty() && stack.back() <= e.ts_ns) stack.pop_back();
          int64_t end = base::SatAdd(e.ts_ns, e.payload);
          if (!stack.empty() && end > stack.back()) {
            end = stack.back();
            ++stats_->clipped_slices;
          }
          stack.push_back(end);
          Open('X');
          Common(c, e, t, e.name, nullptr);
          Key("dur");
          AppendMicros(&buf_, base::SatSub(end, e.ts_ns));
          break;
        }
        case EventKind::kInstant:
          Open('i');
          Common(c, e, t, e.name, nullptr);
          buf_ += ",\"s\":\"t\"";
          break;
        case EventKind::kCounter: {
          double v = e.counter_value();
          if (!std::isfinite(v)) {
            ++stats_->skipped_events;
            continue;
          }
          Open('C');
          Common(c, e, t, e.name, e.name == 0 ? &t.name : nullptr);
          buf_ += ",\"args\":{\"value\":";
          AppendDouble(&buf_, v);
          buf_ += '}';
          ++stats_->events;
          Close();
          continue;
        }
        case EventKind::kBegin:
        case EventKind::kEnd: {
          bool begin = e.kind == EventKind::kBegin;
          uint32_t name = e.name;
          if (begin) {
            async_names[e.payload] = e.name;
          } else {
            auto it = async_names.find(e.payload);
            if (it == async_names.end()) {
              ++stats_->unmatched_async;
              continue;
            }
            if (name == 0) name = it->second;
            async_names.erase(it);
          }
          Open(begin ? 'b' : 'e');
          Common(c, e, t, name, nullptr);
          char id[24] = "0x";
          auto r = std::to_chars(id + 2, id + sizeof id, static_cast<uint64_t>(e.payload), 16);
          Key("id");
          AppendJsonString(&buf_, std::string_view(id, r.ptr - id));
          break;
        }
        default:
          ++stats_->skipped_events;
          continue;
      }
      Args(c, e);
      Close();
      ++stats_->events;
      if (FlowEnd end = flows.Role(e); end != FlowEnd::kNone) {
        uint8_t bit = end == FlowEnd::kSource ? 1 : 2;
        if (!(flow_done[e.arg0] & bit)) {
          flow_done[e.arg0] |= bit;
          Flow(ci, e, t, end == FlowEnd::kSource);
        }
      }
    }
    stats_->unmatched_async += async_names.size();
  }

  // Kineto-style `ac2g` flow event bound to the slice just written (trace-formats.md §1.5).
  void Flow(size_t ci, const Event& e, const TrackLayout& t, bool source) {
    Open(source ? 's' : 'f');
    Key("id");
    AppendUint(&buf_, (uint64_t{ci} << 32) | e.arg0);
    Key("pid");
    AppendInt(&buf_, layout_.processes[t.process].pid);
    Key("tid");
    AppendInt(&buf_, t.tid);
    Key("ts");
    AppendMicros(&buf_, base::SatSub(base::SatAdd(e.ts_ns, offset_), layout_.base_ns));
    buf_ += ",\"cat\":\"ac2g\",\"name\":\"ac2g\"";
    if (!source) buf_ += ",\"bp\":\"e\"";
    Close();
  }

  void OtherData() {
    buf_ += "\"otherData\":{\"producer\":\"rlprof\",\"clock\":\"CLOCK_MONOTONIC\"";
    buf_ += ",\"base_monotonic_ns\":";
    AppendInt(&buf_, layout_.base_ns);
    buf_ += ",\"captures\":[";
    for (size_t i = 0; i < captures_.size(); ++i) {
      const Capture& c = captures_[i];
      const Manifest& m = c.manifest;
      buf_ += i == 0 ? "\n{" : ",\n{";
      buf_ += "\"label\":";
      AppendJsonString(&buf_, c.Label());
      auto str = [&](const char* k, const std::string& v) {
        Key(k);
        AppendJsonString(&buf_, v);
      };
      str("run_id", m.run_id);
      str("scope", m.scope);
      str("stage", m.stage);
      str("host", m.host);
      Key("rank");
      AppendInt(&buf_, m.rank);
      Key("pid");
      AppendInt(&buf_, m.pid);
      Key("events");
      AppendUint(&buf_, c.raw.events.size());
      Key("dropped_events");
      AppendInt(&buf_, m.dropped_events);
      Key("diagnostics");
      buf_ += '[';
      const std::vector<std::string> lines = c.diagnostics.Lines();
      for (size_t d = 0; d < lines.size(); ++d) {
        if (d > 0) buf_ += ',';
        AppendJsonString(&buf_, lines[d]);
      }
      buf_ += "]}";
    }
    buf_ += "]}\n";
  }

  std::span<const Capture> captures_;
  TraceLayout layout_;
  ByteSink* sink_;
  ExportStats* stats_;
  std::string buf_;
  bool first_ = true;
  int64_t offset_ = 0;
};

void AddDiagnostics(ExportStats* s) {
  s->diagnostics.Add("export_clipped_slices", s->clipped_slices);
  s->diagnostics.Add("export_skipped_events", s->skipped_events);
  s->diagnostics.Add("export_unmatched_async", s->unmatched_async);
}

}  // namespace

void AppendMicros(std::string* out, int64_t ns) {
  uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) out->push_back('-');
  AppendUint(out, mag / 1000);
  char frac[4] = {'.', static_cast<char>('0' + mag % 1000 / 100),
                  static_cast<char>('0' + mag % 100 / 10), static_cast<char>('0' + mag % 10)};
  out->append(frac, 4);
}

ExportStats WriteChromeJson(std::span<const Capture> captures, ByteSink* sink) {
  ExportStats stats;
  Writer(captures, sink, &stats).Run();
  AddDiagnostics(&stats);
  return stats;
}

base::StatusOr<ExportStats> WriteChromeJsonFile(std::span<const Capture> captures,
                                                const std::string& path) {
  RLPROF_ASSIGN_OR_RETURN(auto file, OutputFile::Open(path, OutputFile::GzipFor(path)));
  ExportStats stats = WriteChromeJson(captures, file.get());
  RLPROF_RETURN_IF_ERROR(file->Close());
  stats.bytes = file->bytes_on_disk();
  return stats;
}

}  // namespace rlprof::format
