#include "src/analysis/passes/classify.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

#include "src/analysis/model/id_map.h"
#include "src/base/files.h"

namespace rlprof::analysis {

namespace {

constexpr const char* kClassNames[kWorkClassCount] = {
    "compute", "communication", "memcpy", "memset", "sync", "host", "marker", "unclassified"};

struct DefaultRule {
  const char* name;
  const char* category;
  TrackMatch track;
  WorkClass cls;
  bool icase;
};

// Order matters: first match wins (docs/definitions.md §1.1).
constexpr DefaultRule kDefaults[] = {
    // 0. Host collectives, whatever category the profiler gave them (Kineto records gloo
    //    collectives as user_annotation): they are the host partition's communication.
    {"^(gloo:|c10d::|nccl:|record_param_comms$|hcom_|hccl)", "", TrackMatch::kHost,
     WorkClass::kCommunication, false},
    // 1. Structure, not work: annotations, step / stage markers, Python frames, trace metadata.
    {"", "^(gpu_user_annotation|user_annotation|user|python_function|step|stage|sub_step|capture|module|allocation|Trace|cpu_instant_event|ac2g|flow|hccl_task)$",
     TrackMatch::kAny, WorkClass::kMarker, false},
    {"^(ProfilerStep#[0-9]+|Record Window End|Iteration Start:.*)$", "", TrackMatch::kAny,
     WorkClass::kMarker, false},
    {"^Overlap Analysis", "", TrackMatch::kAny, WorkClass::kMarker, false},
    // 2. Synchronisation and waits: never counted as work.
    {"", "^(cuda_sync|xpu_sync|sync)$", TrackMatch::kAny, WorkClass::kSync, false},
    {"^(Event Sync|Stream Wait Event|Stream Sync|Context Sync|Unknown Sync|Device Sync)", "",
     TrackMatch::kAny, WorkClass::kSync, false},
    // 3. Communication: NCCL (old and new names), RCCL, HCCL, rlprof's own category.
    {"^(nccl|rccl|hccl|hcom_)", "", TrackMatch::kDevice, WorkClass::kCommunication, true},
    {"ncclKernel|ncclDevKernel", "", TrackMatch::kDevice, WorkClass::kCommunication, false},
    {"^(Notify_Wait|Notify_Record|RDMASend)", "", TrackMatch::kDevice, WorkClass::kCommunication, false},
    {"", "^communication$", TrackMatch::kAny, WorkClass::kCommunication, false},
    // 4. Memory.
    {"", "^(gpu_memcpy|memcpy)$", TrackMatch::kAny, WorkClass::kMemcpy, false},
    {"", "^(gpu_memset|memset)$", TrackMatch::kAny, WorkClass::kMemset, false},
    {"^(hip)?memcpy|^dma|^MEMCPY_ASYNC", "", TrackMatch::kDevice, WorkClass::kMemcpy, true},
    {"^(hip)?memset", "", TrackMatch::kDevice, WorkClass::kMemset, true},
    // 5. Compute: every other named kernel / device task.
    //    Kineto's other accelerators: MTIA (`mtia_ccp_events`); XPU and PrivateUse1 backends
    //    write `kernel`.
    {".", "^(kernel|Kernel|gpu_kernel|mtia_ccp_events|AI_CORE|AI_VECTOR_CORE|AI_CPU|MIX_AIC|MIX_AIV|FFTS_PLUS|)$",
     TrackMatch::kDevice, WorkClass::kCompute, false},
    // 6. Host activity (operators, runtime calls, user ranges).
    {"", "", TrackMatch::kHost, WorkClass::kHost, false},
};

bool TrackMatches(TrackMatch m, TrackType t) {
  switch (m) {
    case TrackMatch::kAny: return true;
    case TrackMatch::kDevice: return t == TrackType::kDeviceStream;
    case TrackMatch::kHost: return t == TrackType::kThread || t == TrackType::kAsync;
  }
  return false;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsHostCommName(std::string_view n) {
  return n.starts_with("gloo:") || n.starts_with("c10d::") || n.starts_with("nccl:") ||
         n == "record_param_comms";
}

}  // namespace

const char* WorkClassName(WorkClass c) {
  auto i = static_cast<size_t>(c);
  return i < kWorkClassCount ? kClassNames[i] : "unknown";
}

base::StatusOr<WorkClass> ParseWorkClass(std::string_view name) {
  for (int i = 0; i < kWorkClassCount; ++i)
    if (name == kClassNames[i]) return static_cast<WorkClass>(i);
  // Aliases used by the reference tables.
  if (name == "memory") return WorkClass::kMemcpy;
  if (name == "other" || name == "excluded") {
    return name == "other" ? WorkClass::kUnclassified : WorkClass::kSync;
  }
  return base::InvalidArgument("unknown class '" + std::string(name) +
                               "' (compute, communication, memcpy, memset, sync, host, marker, "
                               "unclassified)");
}

bool IsRecvName(std::string_view name, std::string_view collective) {
  std::string c = Lower(collective);
  if (!c.empty()) return c == "recv" || c == "receive" || c == "irecv";
  std::string n = Lower(name);
  if (n.find("receive") != std::string::npos) return true;
  size_t p = n.find("recv");
  while (p != std::string::npos) {
    if (!(p >= 4 && n.compare(p - 4, 4, "send") == 0)) return true;
    p = n.find("recv", p + 1);
  }
  return false;
}

base::Status Classifier::Add(ClassRule r) {
  auto c = std::make_shared<Compiled>();
  auto flags = std::regex::ECMAScript | std::regex::optimize;
  if (r.ignore_case) flags |= std::regex::icase;
  try {
    c->any_name = r.name.empty();
    c->any_category = r.category.empty();
    if (!c->any_name) c->name = std::regex(r.name, flags);
    if (!c->any_category) c->category = std::regex(r.category, flags);
  } catch (const std::regex_error& e) {
    return base::InvalidArgument(r.origin + ": bad regex '" +
                                 (c->any_name ? r.category : r.name) + "': " + e.what());
  }
  rules_.push_back(std::move(r));
  compiled_.push_back(std::move(c));
  return base::Status::Ok();
}

Classifier Classifier::Default() {
  Classifier c;
  for (const auto& d : kDefaults) {
    ClassRule r{d.name, d.category, d.track, d.cls, d.icase, "default"};
    RLPROF_CHECK(c.Add(std::move(r)).ok());
  }
  return c;
}

base::StatusOr<Classifier> Classifier::FromRulesYaml(std::string_view yaml, const std::string& origin) {
  Classifier c;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return base::InvalidArgument(origin + ": not YAML: " + e.what());
  }
  if (!root.IsMap() || !root["rules"] || !root["rules"].IsSequence())
    return base::InvalidArgument(origin + ": expected a map with a 'rules' list");
  size_t index = 0;
  for (const auto& node : root["rules"]) {
    std::string where = origin + ": rules[" + std::to_string(index++) + "]";
    if (!node.IsMap()) return base::InvalidArgument(where + ": expected a map");
    ClassRule r;
    r.origin = where;
    try {
      for (const auto& kv : node) {
        std::string key = kv.first.as<std::string>();
        std::string value = kv.second.as<std::string>();
        if (key == "name") {
          r.name = value;
        } else if (key == "category") {
          r.category = value;
        } else if (key == "track") {
          if (value == "any") r.track = TrackMatch::kAny;
          else if (value == "device") r.track = TrackMatch::kDevice;
          else if (value == "host") r.track = TrackMatch::kHost;
          else return base::InvalidArgument(where + ".track: '" + value + "' (device, host, any)");
        } else if (key == "class") {
          auto cls = ParseWorkClass(value);
          if (!cls.ok()) return base::InvalidArgument(where + ".class: " + cls.status().message());
          r.cls = *cls;
        } else if (key == "ignore_case") {
          r.ignore_case = kv.second.as<bool>();
        } else {
          return base::InvalidArgument(where + ": unknown key '" + key +
                                       "' (name, category, track, class, ignore_case)");
        }
      }
    } catch (const YAML::Exception& e) {
      return base::InvalidArgument(where + ": " + e.what());
    }
    if (!node["class"]) return base::InvalidArgument(where + ": missing 'class'");
    if (r.name.empty() && r.category.empty())
      return base::InvalidArgument(where + ": needs 'name' or 'category'");
    RLPROF_RETURN_IF_ERROR(c.Add(std::move(r)));
  }
  Classifier d = Default();
  for (size_t i = 0; i < d.rules_.size(); ++i) {
    c.rules_.push_back(d.rules_[i]);
    c.compiled_.push_back(d.compiled_[i]);
  }
  return c;
}

base::StatusOr<Classifier> Classifier::FromRulesFile(const std::string& path) {
  RLPROF_ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  return FromRulesYaml(text, path);
}

Classification Classifier::Classify(const Trace& t, Diagnostics* diag) const {
  Classification out;
  const size_t n = t.size();
  out.of.assign(n, WorkClass::kUnclassified);
  out.is_recv.assign(n, 0);
  out.rule.assign(n, -1);
  std::unordered_set<std::string> marker_names;
  for (const auto& m : t.steps) marker_names.insert(m.name);
  for (const auto& m : t.stages) marker_names.insert(m.name);
  // Cache per (name, category, device?) — traces repeat a few thousand names millions of times.
  std::unordered_map<uint64_t, std::pair<WorkClass, int32_t>> cache;
  for (size_t i = 0; i < n; ++i) {
    const TrackType tt = t.tracks[t.track[i]].type;
    const bool device = tt == TrackType::kDeviceStream;
    uint64_t key = (static_cast<uint64_t>(t.name[i]) << 33) |
                   (static_cast<uint64_t>(t.category[i]) << 2) | (device ? 1 : 0) |
                   (tt == TrackType::kAsync ? 2 : 0);
    auto it = cache.find(key);
    if (it == cache.end()) {
      const std::string& nm = t.str(t.name[i]);
      const std::string& cat = t.str(t.category[i]);
      std::pair<WorkClass, int32_t> v{device ? WorkClass::kUnclassified : WorkClass::kHost, -1};
      if (!device && marker_names.count(nm)) {
        v = {WorkClass::kMarker, -1};
      } else {
        for (size_t r = 0; r < rules_.size(); ++r) {
          if (!TrackMatches(rules_[r].track, tt)) continue;
          const Compiled& c = *compiled_[r];
          if (!c.any_name && !std::regex_search(nm, c.name)) continue;
          if (!c.any_category && !std::regex_search(cat, c.category)) continue;
          v = {rules_[r].cls, static_cast<int32_t>(r)};
          break;
        }
      }
      it = cache.emplace(key, v).first;
    }
    out.of[i] = it->second.first;
    out.rule[i] = it->second.second;
  }
  // Kernels launched from a host communication call are communication (Kineto links them by
  // correlation id; the launch is nested inside `record_param_comms` / `nccl:*`).
  // Only runtime calls launch (an operator's correlation column holds its Kineto External id).
  IdMap<uint8_t> comm_correlations(t.correlation);
  RuntimeCategories runtime(t);
  for (size_t i = 0; i < n; ++i) {
    if (t.correlation[i] < 0 || t.tracks[t.track[i]].type == TrackType::kDeviceStream) continue;
    if (!runtime(i)) continue;
    for (int32_t p = static_cast<int32_t>(i); p >= 0; p = t.parent[p]) {
      if (IsHostCommName(t.str(t.name[p]))) {
        comm_correlations.Put(t.correlation[i], 1);
        break;
      }
    }
  }
  // And kernels launched by a communication operator by external correlation (CUPTI), even when
  // the launch is not nested inside it.
  const std::vector<int32_t> op_of = LaunchingOperators(t);
  for (size_t i = 0; i < n; ++i) {
    if (op_of[i] < 0 || t.correlation[i] < 0) continue;
    for (int32_t p = op_of[i]; p >= 0; p = t.parent[p]) {
      if (IsHostCommName(t.str(t.name[p]))) {
        comm_correlations.Put(t.correlation[i], 1);
        break;
      }
    }
  }
  uint64_t unclassified = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool device = t.tracks[t.track[i]].type == TrackType::kDeviceStream;
    if (out.of[i] == WorkClass::kCommunication && IsRecvName(t.str(t.name[i]), t.str(t.collective[i])))
      out.is_recv[i] = 1;
    if (!device) continue;
    if (out.of[i] == WorkClass::kCompute && t.correlation[i] >= 0 &&
        comm_correlations.Contains(t.correlation[i])) {
      out.of[i] = WorkClass::kCommunication;
      if (IsRecvName(t.str(t.name[i]), t.str(t.collective[i]))) out.is_recv[i] = 1;
    }
    if (out.of[i] == WorkClass::kUnclassified) ++unclassified;
    if (out.of[i] == WorkClass::kCompute || out.of[i] == WorkClass::kCommunication ||
        out.of[i] == WorkClass::kMemcpy || out.of[i] == WorkClass::kMemset ||
        out.of[i] == WorkClass::kUnclassified) {
      if (t.kind[i] == SliceKind::kRange) out.has_device_work = true;
    }
  }
  if (unclassified && diag) diag->Add("unclassified_device_events", unclassified);
  return out;
}

std::vector<int32_t> LaunchingOperators(const Trace& t) {
  const size_t n = t.size();
  std::vector<int32_t> out(n, -1);
  IdMap<int32_t> op_of(t.external);  // external id -> host operator row
  bool any_device = false;
  for (size_t i = 0; i < n; ++i) {
    if (t.external[i] < 0) continue;
    if (t.tracks[t.track[i]].type == TrackType::kDeviceStream) {
      any_device = true;
      continue;
    }
    if (t.correlation[i] >= 0) continue;  // a launch (runtime API call), not an operator
    // Ids are unique per operator; should two share one, the later (inner, after Finalize's
    // enclosing-first order) wins.
    op_of.Set(t.external[i], static_cast<int32_t>(i));
  }
  if (!any_device || op_of.empty()) return out;
  for (size_t i = 0; i < n; ++i)
    if (t.external[i] >= 0 && t.tracks[t.track[i]].type == TrackType::kDeviceStream)
      if (const int32_t* op = op_of.Find(t.external[i])) out[i] = *op;
  return out;
}

bool IsRuntimeCategory(std::string_view cat) {
  // Kineto's runtime activity types of every backend (libkineto ActivityType names), then
  // rlprof captures' and Ascend's.
  return cat == "cuda_runtime" || cat == "cuda_driver" || cat == "xpu_runtime" ||
         cat == "xpu_driver" || cat == "mtia_runtime" || cat == "privateuse1_runtime" ||
         cat == "privateuse1_driver" || cat == "hpu_op" || cat == "glow_runtime" ||
         cat == "runtime" || cat == "hip_runtime" || cat == "cann" || cat == "cann_api" || cat == "acl" ||
         cat == "Runtime";  // Kineto before its activity types were lower case
}

}  // namespace rlprof::analysis
