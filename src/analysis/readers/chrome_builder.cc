#include "src/analysis/readers/chrome_builder.h"

#include <algorithm>
#include <tuple>
#include <unordered_set>

#include "src/analysis/readers/decimal.h"
#include "src/config/schemas.h"

namespace rlprof::analysis {
namespace {

// String pids/tids become ints above every real OS id, numbered in order of appearance.
constexpr int64_t kStringIdBase = int64_t{1} << 40;

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool IsVerlTimer(std::string_view n) {
  static const char* const kTimers[] = {"gen",     "reward",       "old_log_prob", "ref",
                                        "values",  "adv",          "update_critic",
                                        "update_actor", "update_weights", "testing",
                                        "save_checkpoint"};
  for (const char* t : kTimers)
    if (n == t) return true;
  return false;
}

bool IsKnownStage(std::string_view n) {
  for (const auto& s : config::KnownStages())
    if (n == s) return true;
  return false;
}

// "rl/step#3", "rl/step 3", "rl/step_3" → 3; "rl/step" → -1.
int64_t TrailingNumber(std::string_view s) {
  size_t i = s.size();
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
  int64_t v;
  if (i == s.size() || !ParseInteger(s.substr(i), &v)) return -1;
  return v;
}

}  // namespace

std::string_view TruncateName(std::string_view s, Diagnostics* diag) {
  if (s.size() <= FastInterner::kMaxNameBytes) return s;
  // A hostile 1 GB name must not be copied into every table: keep 64 KiB, on a UTF-8
  // character boundary, and count it.
  size_t n = FastInterner::kMaxNameBytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  diag->Add("name_truncated");
  return s.substr(0, n);
}

uint32_t FastInterner::Intern(std::string_view s) {
  s = TruncateName(s, &trace_->diagnostics);
  // Slot from the length and three bytes: no full hash for a name seen a moment ago.
  size_t slot = s.size();
  if (!s.empty()) {
    slot = slot * 31 + static_cast<unsigned char>(s[0]);
    slot = slot * 31 + static_cast<unsigned char>(s[s.size() / 2]);
    slot = slot * 31 + static_cast<unsigned char>(s.back());
  }
  Recent& r = recent_[slot & (recent_.size() - 1)];
  if (r.id != UINT32_MAX && r.text == s) return r.id;
  uint32_t id;
  auto it = ids_.find(s);
  if (it != ids_.end()) {
    id = it->second;
  } else {
    id = trace_->Intern(s);
    ids_.emplace(std::string(s), id);
  }
  r.text.assign(s);
  r.id = id;
  return id;
}

MarkerName ClassifyMarkerName(std::string_view name, std::string_view cat) {
  MarkerName m;
  if (StartsWith(name, "ProfilerStep#")) {
    int64_t n;
    if (ParseInteger(name.substr(13), &n)) {
      m.kind = MarkerName::kProfilerStep;
      m.step = n;
    }
    return m;
  }
  if (cat == "cpu_op" || cat == "python_function" || cat == "kernel" || cat == "cuda_runtime")
    return m;
  bool rl = StartsWith(name, "rl/");
  std::string_view base = rl ? name.substr(3) : name;
  if (rl && StartsWith(base, "step") &&
      (base.size() == 4 || base[4] == '#' || base[4] == ' ' || base[4] == '_')) {
    m.kind = MarkerName::kRlStep;
    m.step = TrailingNumber(base);
    return m;
  }
  if (IsKnownStage(base) || (rl && !base.empty()) || IsVerlTimer(base)) {
    m.kind = MarkerName::kStage;
    m.stage = std::string(base);
  }
  return m;
}

int DtypeBytes(std::string_view d) {
  if (StartsWith(d, "c10::")) d = d.substr(5);
  if (StartsWith(d, "torch.")) d = d.substr(6);
  static const std::pair<const char*, int> kSizes[] = {
      {"Float", 4},    {"float", 4},     {"float32", 4},  {"Half", 2},      {"half", 2},
      {"float16", 2},  {"BFloat16", 2},  {"bfloat16", 2}, {"Double", 8},    {"double", 8},
      {"float64", 8},  {"Int", 4},       {"int", 4},      {"int32", 4},     {"Long", 8},
      {"long", 8},     {"int64", 8},     {"Short", 2},    {"int16", 2},     {"Char", 1},
      {"int8", 1},     {"Byte", 1},      {"uint8", 1},    {"Bool", 1},      {"bool", 1},
      {"ComplexFloat", 8}, {"ComplexDouble", 16}, {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1},
      {"UInt16", 2},   {"UInt32", 4},    {"UInt64", 8}};
  for (const auto& [n, b] : kSizes)
    if (d == n) return b;
  return 0;
}

ChromeTraceBuilder::ChromeTraceBuilder(Trace* trace, const ReadOptions& opts)
    : t_(trace), opts_(opts), strings_(trace) {
  cat_cpu_op_ = strings_.Intern("cpu_op");
  cat_user_annotation_ = strings_.Intern("user_annotation");
  cat_python_function_ = strings_.Intern("python_function");
  cat_kernel_ = strings_.Intern("kernel");
  cat_cuda_runtime_ = strings_.Intern("cuda_runtime");
  // Kineto's device activity types (libkineto ActivityType names): CUDA, ROCm, XPU and
  // PrivateUse1 backends write kernels as `kernel`; MTIA its on-device `mtia_ccp_events`.
  for (const char* c : {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_sync",
                        "cuda_event", "Kernel", "Memcpy", "Memset", "mtia_ccp_events"}) {
    uint32_t id = strings_.Intern(c);
    if (device_cat_.size() <= id) device_cat_.resize(id + 1, false);
    device_cat_[id] = true;
  }
}

void ChromeTraceBuilder::Reserve(size_t n) {
  t_->Reserve(n);
  // Kineto writes a flow start and end per kernel launch: about one flow point in two events.
  // Untouched room costs address space only.
  flows_.reserve(n / 2);
}

int64_t ChromeTraceBuilder::ResolveId(const JsonId& id, bool is_pid, int64_t pid_for_tid) {
  if (!id.present) return is_pid ? 0 : pid_for_tid;  // Perfetto: a missing tid means tid = pid
  if (!id.is_string) return id.num;
  int64_t v;
  if (!id.text.empty() && ParseInteger(id.text, &v) &&
      id.text.find_first_not_of("-0123456789") == std::string_view::npos)
    return v;
  if (is_pid && id.text == "CPU functions") cpu_functions_pid_ = true;
  const std::string_view text = Capped(id.text);
  auto it = string_ids_.find(std::string(text));
  if (it != string_ids_.end()) return it->second;
  int64_t synthetic = kStringIdBase + static_cast<int64_t>(string_ids_.size());
  string_ids_.emplace(std::string(text), synthetic);
  id_labels_[synthetic] = std::string(text);
  return synthetic;
}

uint32_t ChromeTraceBuilder::TrackFor(const JsonEvent& e, uint32_t cat_id, int64_t* pid_out) {
  int64_t pid = ResolveId(e.pid, true, 0);
  int64_t tid = ResolveId(e.tid, false, pid);
  *pid_out = pid;
  bool dev = cat_id < device_cat_.size() && device_cat_[cat_id];
  if (dev) {
    if (e.device >= 0) pid = e.device;
    if (e.stream >= 0 && tid < kStringIdBase) tid = e.stream;
  }
  if (pid == last_pid_ && tid == last_tid_ && dev == last_dev_) return last_track_;
  last_pid_ = pid;
  last_tid_ = tid;
  last_dev_ = dev;
  last_track_ = dev ? t_->StreamTrack(static_cast<int32_t>(pid), tid) : t_->ThreadTrack(pid, tid);
  return last_track_;
}

uint32_t ChromeTraceBuilder::CategoryId(std::string_view cat) {
  // Consecutive events mostly repeat a handful of categories: compare before hashing.
  for (auto& [text, id] : recent_cats_)
    if (text == cat) return id;
  uint32_t id = strings_.Intern(cat);
  recent_cats_[recent_next_] = {std::string(cat), id};
  recent_next_ = (recent_next_ + 1) % recent_cats_.size();
  return id;
}

uint32_t ChromeTraceBuilder::AsyncTrack(int64_t pid, uint32_t name_id) {
  auto [it, added] = async_tracks_.try_emplace({pid, name_id}, 0);
  if (added) {
    Track t;
    t.type = TrackType::kAsync;
    t.pid = pid;
    t.tid = static_cast<int64_t>(async_tracks_.size());
    t.name = t_->str(name_id);
    it->second = t_->AddTrack(std::move(t));
  }
  return it->second;
}

void ChromeTraceBuilder::AddMarker(int64_t ts, int64_t dur, uint32_t name, uint32_t cat,
                                   uint32_t track) {
  if (t_->tracks[track].type == TrackType::kDeviceStream) return;  // GPU projections
  // Classify each distinct name once (per op-like / other category): most names are no marker.
  const bool op_like = cat == cat_cpu_op_ || cat == cat_python_function_ || cat == cat_kernel_ ||
                       cat == cat_cuda_runtime_;
  std::vector<uint8_t>& cache = marker_cache_[op_like ? 1 : 0];
  if (cache.size() <= name) cache.resize(name + 1 + name / 2, 0);
  if (cache[name] == 0) {
    MarkerName c = ClassifyMarkerName(t_->str(name), op_like ? "cpu_op" : "");
    if (c.kind == MarkerName::kNone || marker_names_.size() >= 250) {
      cache[name] = c.kind == MarkerName::kNone ? 1 : 255;
    } else {
      marker_names_.push_back(std::move(c));
      cache[name] = static_cast<uint8_t>(marker_names_.size() + 1);
    }
  }
  if (cache[name] == 1) return;
  const std::string& n = t_->str(name);
  MarkerName m = cache[name] == 255 ? ClassifyMarkerName(n, op_like ? "cpu_op" : "")
                                    : marker_names_[cache[name] - 2];
  Marker mk;
  mk.start_ns = ts;
  mk.end_ns = ts + std::max<int64_t>(dur, 0);
  mk.track = track;
  if (m.kind == MarkerName::kStage) {
    mk.name = m.stage;
    t_->stages.push_back(std::move(mk));
    return;
  }
  mk.name = n;
  mk.step = m.step >= 0 ? m.step : ++rl_steps_;
  t_->steps.push_back(std::move(mk));
}

void ChromeTraceBuilder::AddRange(const JsonEvent& e, int64_t ts, int64_t dur, uint32_t name,
                                  uint32_t cat, uint32_t track, SliceKind kind, int64_t corr,
                                  int64_t bytes, uint32_t shapes, uint32_t group) {
  size_t row = t_->AddSlice(ts, dur, name, cat, track, kind);
  t_->correlation[row] = corr;
  t_->flags[row] = static_cast<uint8_t>((e.stream < 0 ? kSliceNoStreamArg : 0) |
                                        (e.correlation < 0 && e.external_id >= 0 ? kSliceCorrelationFromExternalId : 0));
  t_->bytes[row] = bytes;
  t_->shapes[row] = shapes;
  t_->group[row] = group;
  if (!e.collective_name.empty()) t_->collective[row] = strings_.Intern(e.collective_name);
  // The marker spans the slice as stored (times clamped into range by AddSlice).
  if (kind == SliceKind::kRange) AddMarker(t_->ts[row], t_->dur[row], name, cat, track);
}

void ChromeTraceBuilder::Metadata(const JsonEvent& e) {
  int64_t pid = ResolveId(e.pid, true, 0);
  if (e.name == "process_name") {
    if (!e.arg_name.empty()) proc_names_[pid] = std::string(Capped(e.arg_name));
  } else if (e.name == "process_labels") {
    if (!e.labels.empty()) proc_labels_[pid] = std::string(Capped(e.labels));
  } else if (e.name == "thread_name") {
    int64_t tid = ResolveId(e.tid, false, pid);
    if (!e.arg_name.empty()) thread_names_[{pid, tid}] = std::string(Capped(e.arg_name));
  }
  // process_sort_index / thread_sort_index / others: display order only.
}

void ChromeTraceBuilder::Counter(const JsonEvent& e) {
  if (!e.has_ts) {
    t_->diagnostics.Add(e.bad_ts ? "invalid_ts" : "missing_ts");
    return;
  }
  if (e.series.empty()) {
    t_->diagnostics.Add("counter_without_values");
    return;
  }
  int64_t pid = ResolveId(e.pid, true, 0);
  std::string prefix(e.name);
  if (e.id.present) prefix += " id: " + (e.id.is_string ? std::string(e.id.text) : std::to_string(e.id.num));
  for (const auto& [series, value] : e.series) CounterValue(pid, prefix + " " + series, e.ts, value, false);
}

void ChromeTraceBuilder::CounterValue(int64_t pid, const std::string& label, int64_t ts, double value,
                                      bool named) {
  auto [it, added] = counter_tracks_.try_emplace({pid, label}, 0);
  if (added) {
    Track t;
    t.type = TrackType::kCounter;
    t.pid = pid;
    t.tid = static_cast<int64_t>(counter_tracks_.size());
    t.name = label;
    it->second = t_->AddTrack(std::move(t));
  }
  t_->counters.push_back({it->second, ts, value, named ? t_->Intern(label) : 0});
}

void ChromeTraceBuilder::MemoryEvent(const JsonEvent& e, int64_t pid, uint32_t track) {
  // c10::DeviceType: 0 CPU, 1 CUDA, 20 PrivateUse1 (Ascend's torch_npu); the series names are
  // rlprof's own (torch_memory.h): "allocated_bytes cuda:0", "reserved_bytes cuda:0".
  std::string device = e.device_type == 0    ? "cpu"
                       : e.device_type == 1  ? "cuda:" + std::to_string(std::max<int64_t>(e.device, 0))
                       : e.device_type == 20 ? "npu:" + std::to_string(std::max<int64_t>(e.device, 0))
                                             : "device" + std::to_string(e.device_type) + ":" +
                                                   std::to_string(std::max<int64_t>(e.device, 0));
  if (cat_allocation_ == UINT32_MAX) cat_allocation_ = strings_.Intern("allocation");
  const size_t row = t_->AddSlice(e.ts, 0, strings_.Intern(device), cat_allocation_, track, SliceKind::kInstant);
  t_->bytes[row] = e.bytes;
  if (e.total_allocated >= 0)
    CounterValue(pid, "allocated_bytes " + device, e.ts, static_cast<double>(e.total_allocated), true);
  if (e.total_reserved > 0)  // the CPU allocator reports 0
    CounterValue(pid, "reserved_bytes " + device, e.ts, static_cast<double>(e.total_reserved), true);
}

void ChromeTraceBuilder::Add(const JsonEvent& e) {
  if (e.ph.size() != 1) {
    t_->diagnostics.Add(e.ph.empty() ? "missing_phase" : "unknown_phase");
    return;
  }
  if (e.string_ts) {
    ++string_ts_;
    t_->diagnostics.Add("string_ts");
  }
  const char ph = e.ph[0];
  if (ph == 'M') {
    Metadata(e);
    return;
  }
  if (ph == 'C') {
    Counter(e);
    return;
  }
  bool known = ph == 'X' || ph == 'B' || ph == 'E' || ph == 'i' || ph == 'I' || ph == 'R' ||
               ph == 'b' || ph == 'e' || ph == 'n' || ph == 's' || ph == 't' || ph == 'f';
  if (!known) {
    t_->diagnostics.Add("unknown_phase");
    return;
  }
  if (!e.has_ts) {
    t_->diagnostics.Add(e.bad_ts ? "invalid_ts" : "missing_ts");
    return;
  }
  first_ts_ = std::min(first_ts_, e.ts);
  const bool is_flow = ph == 's' || ph == 't' || ph == 'f';
  uint32_t name = is_flow ? 0 : strings_.Intern(e.name);
  if (!e.has_name && !is_flow && ph != 'E' && ph != 'e') t_->diagnostics.Add("missing_name");
  uint32_t cat = legacy_ && e.cat.empty()
                     ? (e.name.find("::") != std::string_view::npos || StartsWith(e.name, "gloo:") ||
                                StartsWith(e.name, "nccl:")
                            ? cat_cpu_op_
                            : cat_user_annotation_)
                     : CategoryId(e.cat);
  int64_t pid = 0;
  const bool flow = ph == 's' || ph == 't' || ph == 'f';
  // Flow events only point at slices: they must not create tracks of their own.
  uint32_t track = flow ? 0 : TrackFor(e, cat, &pid);
  if (flow) pid = ResolveId(e.pid, true, 0);
  int64_t corr = e.correlation >= 0 ? e.correlation : e.external_id;
  int64_t bytes = e.bytes;
  if (bytes < 0 && e.nelems >= 0) {
    int b = DtypeBytes(e.dtype);
    if (b > 0) bytes = e.nelems * b;
  }
  uint32_t shapes = e.shapes.empty() ? 0 : strings_.Intern(e.shapes);
  uint32_t group = !e.group_name.empty()    ? strings_.Intern(e.group_name)
                   : !e.group_ranks.empty() ? strings_.Intern(e.group_ranks)
                                            : 0;
  if (!flow && t_->tracks[track].type == TrackType::kThread && pid < kStringIdBase)
    ++host_pid_slices_[pid];
  switch (ph) {
    case 'X': {
      int64_t dur = e.dur;
      if (!e.has_dur) t_->diagnostics.Add(e.bad_dur ? "invalid_dur" : "missing_dur");
      if (!e.has_dur) dur = 0;
      AddRange(e, e.ts, dur, name, cat, track, SliceKind::kRange, corr, bytes, shapes, group);
      break;
    }
    case 'B':
      open_b_[track].push_back({e.ts, name, cat, corr, bytes, shapes, group});
      break;
    case 'E': {
      auto& stack = open_b_[track];
      if (stack.empty()) {
        t_->diagnostics.Add("unmatched_end");
        break;
      }
      Open o = stack.back();
      stack.pop_back();
      AddRange(e, o.ts, e.ts - o.ts, o.name, o.cat, track, SliceKind::kRange, o.correlation,
               o.bytes, o.shapes, o.group);
      break;
    }
    case 'i':
    case 'I':
    case 'R':
      if (e.name == "[memory]" && (e.total_allocated >= 0 || e.total_reserved >= 0))
        MemoryEvent(e, pid, track);
      else if (opts_.keep_instants)
        AddRange(e, e.ts, 0, name, cat, track, SliceKind::kInstant, corr, bytes, shapes, group);
      break;
    case 'b':
    case 'e':
    case 'n':
      AsyncEvent(e, ph, pid, {e.ts, name, cat, corr, bytes, shapes, group});
      break;
    default:  // flows s / t / f
      FlowEvent(e, ph, pid, cat);
      break;
  }
}

void ChromeTraceBuilder::AsyncEvent(const JsonEvent& e, char ph, int64_t pid, const Open& here) {
  std::string key(e.cat);
  key += '\x1f';
  key += e.id.is_string ? std::string(e.id.text) : std::to_string(e.id.num);
  if (!e.id.present) t_->diagnostics.Add("async_without_id");
  if (ph == 'b') {
    open_async_[key].push_back(here);
    return;
  }
  if (ph == 'n') {
    if (opts_.keep_instants)
      AddRange(e, e.ts, 0, here.name, here.cat, AsyncTrack(pid, here.name), SliceKind::kInstant, here.correlation,
               here.bytes, here.shapes, here.group);
    return;
  }
  auto it = open_async_.find(key);
  if (it == open_async_.end() || it->second.empty()) {
    t_->diagnostics.Add("unmatched_async_end");
    return;
  }
  Open o = it->second.back();
  it->second.pop_back();
  if (it->second.empty()) open_async_.erase(it);
  AddRange(e, o.ts, e.ts - o.ts, o.name, o.cat, AsyncTrack(pid, o.name), SliceKind::kRange, o.correlation, o.bytes,
           o.shapes, o.group);
}

void ChromeTraceBuilder::FlowEvent(const JsonEvent& e, char ph, int64_t pid, uint32_t cat) {
  const std::string& c = t_->str(cat);
  if (c == "fwdbwd" || c == "async_task_queue") return;  // not launch ↔ device links
  if (!e.id.present) {
    t_->diagnostics.Add("flow_without_id");
    return;
  }
  int64_t id;
  if (!e.id.is_string) {
    id = e.id.num;
  } else {
    auto [it, added] = flow_string_ids_.try_emplace(
        std::string(e.id.text), kStringIdBase + static_cast<int64_t>(flow_string_ids_.size()));
    id = it->second;
  }
  const int64_t tid = ResolveId(e.tid, false, pid);
  flows_.push_back({pid, tid, e.ts, id, ph != 'f' || e.bind_enclosing, ph, c == "ac2g"});
}

void ChromeTraceBuilder::BindFlows() {
  const size_t n = t_->size();
  std::map<std::tuple<int, int64_t, int64_t>, uint32_t> by_id;
  for (uint32_t i = 0; i < t_->tracks.size(); ++i) {
    const Track& tr = t_->tracks[i];
    by_id.emplace(std::make_tuple(static_cast<int>(tr.type), tr.pid, tr.tid), i);
  }
  struct Resolved {
    uint32_t track;
    int64_t ts;
    int64_t id;
    bool enclosing;
    bool ac2g_end;  // an "ac2g" flow end whose id also has an "ac2g" flow start
  };
  std::vector<Resolved> flows;
  flows.reserve(flows_.size());
  // TraceLens links device work to its launch only through a pair of "ac2g" flow points (start
  // and end with one id): the ids that have a start.
  std::unordered_set<int64_t> ac2g_starts;
  for (const FlowPoint& fp : flows_)
    if (fp.ac2g && fp.ph == 's') ac2g_starts.insert(fp.id);
  int64_t last_pid = INT64_MIN, last_tid = INT64_MIN;
  int64_t last_track = -1;
  for (const FlowPoint& fp : flows_) {
    if (fp.pid != last_pid || fp.tid != last_tid) {
      last_pid = fp.pid;
      last_tid = fp.tid;
      // Kineto puts the flow end on (device, stream) as pid/tid: a device-stream track.
      auto th = by_id.find({static_cast<int>(TrackType::kThread), fp.pid, fp.tid});
      if (th == by_id.end())
        th = by_id.find({static_cast<int>(TrackType::kDeviceStream), fp.pid, fp.tid});
      // Not `? -1 : th->second`: the common type of int and uint32_t is unsigned, and -1
      // became track 4294967295 (issue 10: a flow point on a thread without slices crashed
      // every command).
      last_track = th == by_id.end() ? int64_t{-1} : static_cast<int64_t>(th->second);
    }
    if (last_track < 0 || static_cast<uint64_t>(last_track) >= t_->tracks.size()) {
      t_->diagnostics.Add("flow_unbound");
      continue;
    }
    flows.push_back({static_cast<uint32_t>(last_track), fp.ts, fp.id, fp.enclosing,
                     fp.ac2g && fp.ph == 'f' && ac2g_starts.count(fp.id) > 0});
  }
  flows_.clear();
  flows_.shrink_to_fit();
  // Slices are sorted by (track, ts, -dur): walk them once alongside the flow points sorted
  // the same way. Flow points come in file order, mostly time-ordered per track: a stable
  // bucket pass by track, then a sort only of the buckets that need one.
  {
    std::vector<size_t> start(t_->tracks.size() + 1, 0);
    for (const Resolved& f : flows) ++start[f.track + 1];
    for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    std::vector<Resolved> bucketed(flows.size());
    std::vector<size_t> fill(start.begin(), start.end() - 1);
    for (const Resolved& f : flows) bucketed[fill[f.track]++] = f;
    auto by_ts = [](const Resolved& a, const Resolved& b) { return a.ts < b.ts; };
    for (size_t tr = 0; tr + 1 < start.size(); ++tr) {
      auto b = bucketed.begin() + static_cast<ptrdiff_t>(start[tr]);
      auto e = bucketed.begin() + static_cast<ptrdiff_t>(start[tr + 1]);
      if (!std::is_sorted(b, e, by_ts)) std::sort(b, e, by_ts);
    }
    flows.swap(bucketed);
  }
  size_t lo = 0;
  for (const Resolved& f : flows) {
    // The first row at or after (track, ts).
    while (lo < n && (t_->track[lo] < f.track || (t_->track[lo] == f.track && t_->ts[lo] < f.ts)))
      ++lo;
    int64_t row = -1;
    if (lo < n && t_->track[lo] == f.track && t_->ts[lo] == f.ts) {
      // The innermost slice starting exactly here (the runtime call, not its enclosing op).
      size_t r = lo;
      while (r + 1 < n && t_->track[r + 1] == f.track && t_->ts[r + 1] == f.ts &&
             t_->kind[r + 1] == SliceKind::kRange)
        ++r;
      row = static_cast<int64_t>(r);
    } else if (f.enclosing && lo > 0 && t_->track[lo - 1] == f.track) {
      int64_t r = static_cast<int64_t>(lo - 1);
      while (r >= 0 && t_->ts[r] + t_->dur[r] < f.ts) r = t_->parent[r];
      row = r;
    } else if (!f.enclosing && lo < n && t_->track[lo] == f.track) {
      row = static_cast<int64_t>(lo);  // v1 "f" without bp: the next slice
    }
    if (row < 0) {
      t_->diagnostics.Add("flow_unbound");
      continue;
    }
    if (t_->correlation[row] < 0) t_->correlation[row] = f.id;
    if (f.ac2g_end && t_->correlation[row] == f.id) t_->flags[row] |= kSliceFlowPairLinked;
  }
}

void ChromeTraceBuilder::NameTracks() {
  for (Track& tr : t_->tracks) {
    if (tr.type == TrackType::kCounter || tr.type == TrackType::kAsync) {
      auto p = proc_names_.find(tr.pid);
      if (p != proc_names_.end()) tr.process_name = p->second;
      continue;
    }
    auto p = proc_names_.find(tr.pid);
    auto l = proc_labels_.find(tr.pid);
    auto th = thread_names_.find({tr.pid, tr.tid});
    if (th != thread_names_.end()) tr.name = th->second;
    if (p != proc_names_.end()) tr.process_name = p->second;
    if (tr.type == TrackType::kThread) {
      auto pl = id_labels_.find(tr.pid);
      if (tr.process_name.empty() && pl != id_labels_.end()) tr.process_name = pl->second;
      auto tl = id_labels_.find(tr.tid);
      if (tr.name.empty() && tl != id_labels_.end()) tr.name = tl->second;
      // Ascend device lanes: hardware tasks and HCCL are device activity.
      const std::string& pn = tr.process_name;
      if (pn == "Ascend Hardware" || pn == "HCCL" || pn == "Communication") {
        tr.type = TrackType::kDeviceStream;
        tr.device = -1;
        if (l != proc_labels_.end() && StartsWith(l->second, "NPU ")) {
          int64_t d;
          if (ParseInteger(std::string_view(l->second).substr(4), &d)) tr.device = static_cast<int32_t>(d);
        }
        tr.stream = tr.tid;
      }
    } else {
      auto dn = device_names_.find(tr.device);
      if (l != proc_labels_.end()) {
        tr.process_name = l->second;
      } else {
        tr.process_name = "GPU " + std::to_string(tr.device);
      }
      if (dn != device_names_.end()) tr.process_name += " (" + dn->second + ")";
      if (tr.name.empty()) tr.name = "stream " + std::to_string(tr.stream);
    }
  }
}

void ChromeTraceBuilder::ClampOverhangs() {
  // Integer-µs writers (legacy torch) end a child up to 1 µs after its parent: clip it.
  uint64_t clamped = 0;
  for (size_t i = 0; i < t_->size(); ++i) {
    int32_t p = t_->parent[i];
    if (p < 0) continue;
    int64_t pend = t_->ts[p] + t_->dur[p];
    int64_t end = t_->ts[i] + t_->dur[i];
    if (end > pend && end - pend <= 1000) {
      t_->dur[i] = pend - t_->ts[i];
      ++clamped;
    }
  }
  if (clamped == 0) return;
  t_->diagnostics.Add("clamped_child_overhang", clamped);
  auto it = t_->diagnostics.counts.find("improper_nesting");
  if (it != t_->diagnostics.counts.end()) {
    it->second -= std::min(it->second, clamped);
    if (it->second == 0) t_->diagnostics.counts.erase(it);
  }
}

void ChromeTraceBuilder::Finish() {
  uint64_t unmatched = 0;
  for (const auto& [track, stack] : open_b_) unmatched += stack.size();
  if (unmatched) t_->diagnostics.Add("unmatched_begin", unmatched);
  uint64_t unmatched_async = 0;
  for (const auto& [key, stack] : open_async_) unmatched_async += stack.size();
  if (unmatched_async) t_->diagnostics.Add("unmatched_async_begin", unmatched_async);
  for (const auto& [id, bytes] : device_memory_)  // after the events: the trace's first time is known
    CounterValue(-1, "capacity_bytes cuda:" + std::to_string(id), first_ts_ == INT64_MAX ? 0 : first_ts_,
                 static_cast<double>(bytes), true);
  NameTracks();
  if (t_->pid < 0 && !host_pid_slices_.empty()) {
    auto best = std::max_element(host_pid_slices_.begin(), host_pid_slices_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    t_->pid = best->first;
  }
  t_->Finalize();
  if (legacy_) ClampOverhangs();
  if (!flows_.empty()) BindFlows();
}

}  // namespace rlprof::analysis
