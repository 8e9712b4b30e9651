#include "src/format/capture.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "src/base/files.h"

namespace rlprof::format {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr char kManifestName[] = "manifest.json";
constexpr char kEventsName[] = "events.rlp";

// Lenient typed access to one JSON object; type mismatches become diagnostics.
class Fields {
 public:
  Fields(const json* obj, std::string prefix, std::vector<std::string>* diag)
      : obj_(obj), prefix_(std::move(prefix)), diag_(diag) {}

  Fields Object(const char* key) const {
    const json* v = Find(key);
    if (v != nullptr && !v->is_object()) {
      Wrong(key, "an object");
      v = nullptr;
    }
    return Fields(v, prefix_ + key + ".", diag_);
  }
  void Str(const char* key, std::string* out) const {
    if (const json* v = Find(key)) {
      if (v->is_string()) *out = v->get<std::string>();
      else Wrong(key, "a string");
    }
  }
  void Int(const char* key, int64_t* out) const {
    if (const json* v = Find(key)) {
      if (!ToInt(*v, out)) Wrong(key, "an integer");
    }
  }
  void Double(const char* key, double* out) const {
    if (const json* v = Find(key)) {
      if (v->is_number()) *out = v->get<double>();
      else Wrong(key, "a number");
    }
  }
  void Bool(const char* key, bool* out) const {
    if (const json* v = Find(key)) {
      if (v->is_boolean()) *out = v->get<bool>();
      else Wrong(key, "true or false");
    }
  }
  void OptInt(const char* key, std::optional<int64_t>* out) const {
    const json* v = Find(key);
    if (v == nullptr || v->is_null()) return;
    int64_t i;
    if (ToInt(*v, &i)) *out = i;
    else Wrong(key, "an integer or null");
  }
  void StrList(const char* key, std::vector<std::string>* out) const {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return Wrong(key, "a list of strings");
    for (const auto& e : *v) {
      if (e.is_string()) out->push_back(e.get<std::string>());
      else if (e.is_object() && e.contains("message") && e["message"].is_string())
        out->push_back(e["message"].get<std::string>());  // errors may be objects
      else out->push_back(e.dump());
    }
  }
  void IntList(const char* key, std::vector<int64_t>* out) const {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return Wrong(key, "a list of integers");
    for (const auto& e : *v) {
      int64_t i;
      if (ToInt(e, &i)) out->push_back(i);
      else Wrong(key, "a list of integers");
    }
  }

 private:
  const json* Find(const char* key) const {
    if (obj_ == nullptr) return nullptr;
    auto it = obj_->find(key);
    return it == obj_->end() ? nullptr : &*it;
  }
  static bool ToInt(const json& v, int64_t* out) {
    if (v.is_number_integer()) {
      *out = v.get<int64_t>();
      return true;
    }
    if (v.is_number_float()) {
      double d = v.get<double>();
      // Range first: converting a double outside int64's range is undefined behaviour.
      if (d > -9.2e18 && d < 9.2e18 && d == static_cast<double>(static_cast<int64_t>(d))) {
        *out = static_cast<int64_t>(d);
        return true;
      }
    }
    return false;
  }
  void Wrong(const char* key, const char* expected) const {
    diag_->push_back(std::string(kManifestName) + ": " + prefix_ + key + ": expected " + expected);
  }

  const json* obj_;
  std::string prefix_;
  std::vector<std::string>* diag_;
};

}  // namespace

Manifest ParseManifest(const std::string& text, std::vector<std::string>* diag) {
  Manifest m;
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    diag->push_back(std::string(kManifestName) + ": not a JSON object; manifest ignored");
    return m;
  }
  Fields f(&root, "", diag);
  f.Str("format", &m.format);
  f.Int("format_version", &m.format_version);
  f.Str("rlprof_version", &m.rlprof_version);
  f.Str("run_id", &m.run_id);
  f.Str("scope", &m.scope);
  f.Str("mode", &m.mode);
  f.IntList("steps", &m.steps);
  f.Str("stage", &m.stage);
  f.Str("role", &m.role);
  Fields id = f.Object("identity");
  id.Int("rank", &m.rank);
  id.Int("local_rank", &m.local_rank);
  id.Int("world_size", &m.world_size);
  id.Str("host", &m.host);
  id.Int("pid", &m.pid);
  id.StrList("roles", &m.roles);
  id.OptInt("replica", &m.replica);
  Fields clock = f.Object("clock");
  clock.Str("source", &m.clock_source);
  clock.Double("tsc_hz", &m.tsc_hz);
  clock.Int("monotonic_anchor_ns", &m.monotonic_anchor_ns);
  clock.Int("realtime_anchor_ns", &m.realtime_anchor_ns);
  clock.Int("offset_to_rank0_ns", &m.offset_to_rank0_ns);
  Fields window = f.Object("window");
  window.Int("open_ns", &m.window_open_ns);
  window.Int("close_ns", &m.window_close_ns);
  window.Str("close_reason", &m.close_reason);
  f.StrList("contents", &m.contents);
  Fields counts = f.Object("counts");
  counts.Int("events", &m.event_count);
  counts.Int("dropped_events", &m.dropped_events);
  counts.Int("threads", &m.threads);
  f.Bool("complete", &m.complete);
  f.StrList("errors", &m.errors);
  if (auto it = root.find("config"); it != root.end()) {
    m.config_json = it->dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return m;
}

void SortEventsByTime(std::vector<Event>* events) {
  std::stable_sort(events->begin(), events->end(), [](const Event& a, const Event& b) {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    int64_t da = a.kind == EventKind::kComplete ? a.payload : -1;
    int64_t db = b.kind == EventKind::kComplete ? b.payload : -1;
    return da > db;
  });
}

std::string Capture::Label() const {
  std::string s = manifest.rank >= 0 ? "rank " + std::to_string(manifest.rank) : "process";
  std::string role = manifest.role;
  if (role.empty() && !manifest.roles.empty()) {
    for (const auto& r : manifest.roles) role += (role.empty() ? "" : ",") + r;
  }
  if (!role.empty()) s += " [" + role + "]";
  if (!manifest.host.empty()) s += " " + manifest.host;
  if (manifest.pid != 0) s += " (pid " + std::to_string(manifest.pid) + ")";
  return s;
}

namespace {

// After the events are read: the manifest wins, the events header fills what it lacks.
void FinishCapture(Capture* c) {
  if (c->manifest.rank < 0) c->manifest.rank = c->raw.info.rank;
  if (c->manifest.pid == 0) c->manifest.pid = c->raw.info.pid;
  if (c->manifest.host.empty()) c->manifest.host = c->raw.info.host;
  if (!c->raw.diagnostics.clean()) {
    c->diagnostics.push_back(c->events_path + ": " + c->raw.diagnostics.ToString());
  }
  SortEventsByTime(&c->raw.events);
}

}  // namespace

base::StatusOr<Capture> LoadCapture(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return base::NotFound(path + ": no such file or directory");
  Capture c;
  // An events.rlp inside a capture directory loads with its directory's manifest.
  fs::path parent = fs::path(path).parent_path();
  bool in_capture_dir = !fs::is_directory(path, ec) && fs::path(path).filename() == kEventsName &&
                        fs::exists((parent.empty() ? fs::path(".") : parent) / kManifestName, ec);
  if (fs::is_directory(path, ec) || in_capture_dir) {
    c.dir = in_capture_dir ? (parent.empty() ? std::string(".") : parent.string()) : path;
    c.events_path = (fs::path(c.dir) / kEventsName).string();
    std::string manifest_path = (fs::path(c.dir) / kManifestName).string();
    bool has_events = fs::exists(c.events_path, ec);
    c.has_manifest = fs::exists(manifest_path, ec);
    if (!has_events && !c.has_manifest) {
      return base::NotFound(path + ": not a capture directory (no manifest.json or events.rlp)");
    }
    if (c.has_manifest) {
      auto text = base::ReadFile(manifest_path);
      if (text.ok()) c.manifest = ParseManifest(*text, &c.diagnostics);
      else c.diagnostics.push_back(text.status().message());
    } else {
      c.diagnostics.push_back(c.dir + ": manifest.json missing; identity taken from events.rlp");
    }
    if (!has_events) {
      c.diagnostics.push_back(c.dir + ": events.rlp missing; the capture has no events");
      return c;
    }
  } else {
    c.events_path = path;
  }
  RLPROF_ASSIGN_OR_RETURN(c.raw, ReadRaw(c.events_path));
  FinishCapture(&c);
  return c;
}

base::StatusOr<Capture> LoadCaptureBytes(std::string_view events_rlp, const std::string& name) {
  Capture c;
  c.events_path = name;
  RLPROF_ASSIGN_OR_RETURN(c.raw, ReadRawBytes(events_rlp, name));
  FinishCapture(&c);
  return c;
}

std::vector<std::string> FindCaptureDirs(const std::string& root) {
  std::vector<std::string> dirs;
  std::error_code ec;
  auto is_capture = [&](const fs::path& d) {
    return fs::exists(d / kManifestName, ec) || fs::exists(d / kEventsName, ec);
  };
  if (!fs::is_directory(root, ec)) return dirs;
  if (is_capture(root)) dirs.push_back(fs::path(root).string());
  auto opts = fs::directory_options::skip_permission_denied;
  for (fs::recursive_directory_iterator it(root, opts, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_directory(ec) && is_capture(it->path())) dirs.push_back(it->path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

base::StatusOr<CaptureSet> LoadCaptureTree(const std::string& root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) return base::NotFound(root + ": no such file or directory");
  CaptureSet set;
  for (const auto& dir : FindCaptureDirs(root)) {
    auto c = LoadCapture(dir);
    if (c.ok()) set.captures.push_back(std::move(*c));
    else set.diagnostics.push_back(c.status().message());
  }
  if (set.captures.empty()) {
    std::string why = set.diagnostics.empty() ? "" : ": " + set.diagnostics.front();
    return base::NotFound(root + ": no readable capture below this directory" + why);
  }
  std::stable_sort(set.captures.begin(), set.captures.end(),
                   [](const Capture& a, const Capture& b) {
                     return a.manifest.rank < b.manifest.rank;
                   });
  return set;
}

}  // namespace rlprof::format
