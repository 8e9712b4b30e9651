#include "src/format/manifest.h"

#include <nlohmann/json.hpp>

#include "src/format/bounded_json.h"
#include "src/format/json_escape.h"

namespace rlprof::format {
namespace {

using json = nlohmann::json;

constexpr char kManifestName[] = "manifest.json";

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
  // An object kept as its compact JSON text (what the reader does not interpret).
  void ObjectText(const char* key, std::string* out) const {
    if (const json* v = Find(key)) {
      if (v->is_object()) *out = v->dump(-1, ' ', false, json::error_handler_t::replace);
      else Wrong(key, "an object");
    }
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
  // An integer ≥ `min`; a missing key is a problem when `required`. Out of range: noted, the
  // default kept.
  void IntAtLeast(const char* key, int64_t min, int64_t* out, bool required = false) const {
    const json* v = Find(key);
    if (v == nullptr) {
      if (required && obj_ != nullptr)
        diag_->push_back(std::string(kManifestName) + ": " + prefix_ + key + ": missing");
      return;
    }
    int64_t i;
    if (!ToInt(*v, &i)) return Wrong(key, min == 0 ? "a non-negative integer" : "an integer");
    if (i < min) return Wrong(key, min == 0 ? "a non-negative integer" : "an integer ≥ " + std::to_string(min));
    *out = i;
  }
  void Double(const char* key, double* out) const {
    if (const json* v = Find(key)) {
      if (v->is_number()) *out = v->get<double>();
      else Wrong(key, "a number");
    }
  }
  // A share in (0, 1] (ops_sampling); anything else: noted, the default kept.
  void Share(const char* key, double* out) const {
    if (const json* v = Find(key)) {
      const double d = v->is_number() ? v->get<double>() : 0;
      if (d > 0 && d <= 1) *out = d;
      else Wrong(key, "a number more than 0 and at most 1");
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
    bool noted = false;  // once per list, however many elements are wrong
    for (const auto& e : *v) {
      int64_t i;
      if (ToInt(e, &i)) out->push_back(i);
      else if (!noted) {
        Wrong(key, "a list of integers");
        noted = true;
      }
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
  void Wrong(const char* key, const std::string& expected) const {
    const json* v = Find(key);
    std::string got = v == nullptr ? "" : v->dump(-1, ' ', false, json::error_handler_t::replace);
    if (got.size() > 40) got = got.substr(0, 40) + "…";
    diag_->push_back(std::string(kManifestName) + ": " + prefix_ + key + ": expected " + expected +
                     (got.empty() ? "" : ", got " + got));
  }

  const json* obj_;
  std::string prefix_;
  std::vector<std::string>* diag_;
};

}  // namespace

namespace {

// The manifest's text, written directly in the layout nlohmann's dump(2) gives (two-space
// indent, one member or element a line, "[]" for an empty list): building an ordered_json
// document and dumping it was ≈ 40 µs of the runtime writer's ≈ 200 µs a window.
class ManifestText {
 public:
  explicit ManifestText(std::string* out) : out_(out) {}
  void Begin() {
    Value();
    Open('{');
  }
  void End() { Close('}'); }
  // Object members: Key, then exactly one value (scalar, list, or Begin … End).
  ManifestText& Key(std::string_view k) {
    Next();
    AppendJsonString(out_, k);
    *out_ += ": ";
    value_pending_ = true;
    return *this;
  }
  void Str(std::string_view v) {
    Value();
    AppendJsonString(out_, v);
  }
  void Int(int64_t v) {
    Value();
    *out_ += std::to_string(v);
  }
  void Bool(bool v) {
    Value();
    *out_ += v ? "true" : "false";
  }
  void Null() {
    Value();
    *out_ += "null";
  }
  void Double(double v) {
    Value();
    // nlohmann's shortest round-trip form ("2500000000.0", "0.1", "1e+21"), as before.
    *out_ += nlohmann::json(v).dump();
  }
  template <typename T, typename F>
  void List(const std::vector<T>& v, F each) {
    Value();
    if (v.empty()) {
      *out_ += "[]";
      return;
    }
    Open('[');
    for (const T& e : v) each(e);
    Close(']');
  }
  // A nested object's text as Indented gives it, at this depth.
  void Nested(const std::string& indented) {
    Value();
    for (char c : indented) {
      *out_ += c;
      if (c == '\n') out_->append(2 * depth_, ' ');
    }
  }

 private:
  void Open(char c) {
    *out_ += c;
    ++depth_;
    first_ = true;
  }
  void Close(char c) {
    --depth_;
    if (!first_) {
      *out_ += '\n';
      out_->append(2 * depth_, ' ');
    }
    *out_ += c;
    first_ = false;
  }
  // Before a member's key or a list element: the comma and the line.
  void Next() {
    if (!first_) *out_ += ',';
    *out_ += '\n';
    out_->append(2 * depth_, ' ');
    first_ = false;
  }
  // Before a value: after its key, or as a list element (or the document) of its own.
  void Value() {
    if (value_pending_) {
      value_pending_ = false;
      return;
    }
    if (depth_ > 0) Next();
  }

  std::string* out_;
  int depth_ = 0;
  bool first_ = true;
  bool value_pending_ = false;
};

// A JSON object's compact text (ours: a schedule, sources' counters) as dump(2) gives it; ""
// when it is not an object (the key is then left out, as before).
std::string Indented(const std::string& text) {
  if (text.empty()) return std::string();
  const nlohmann::ordered_json v = nlohmann::ordered_json::parse(text, nullptr, false);
  if (v.is_discarded() || !v.is_object()) return std::string();
  return v.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

std::string ManifestToJson(const Manifest& m, std::string_view config_text) {
  std::string text;
  text.reserve(1536 + config_text.size());
  ManifestText j(&text);
  auto str = [&j](const std::string& v) { j.Str(v); };
  auto num = [&j](int64_t v) { j.Int(v); };
  j.Begin();
  j.Key("format").Str(kManifestFormat);
  j.Key("format_version").Int(kManifestFormatVersion);
  j.Key("rlprof_version").Str(m.rlprof_version);
  j.Key("run_id").Str(m.run_id);
  j.Key("scope").Str(m.scope);
  j.Key("mode").Str(m.mode);
  j.Key("steps").List(m.steps, num);
  // Keys without a value are left out (readers tolerate missing keys; a null would be a
  // value of the wrong type for them).
  if (!m.stage.empty()) j.Key("stage").Str(m.stage);
  if (!m.role.empty()) j.Key("role").Str(m.role);
  j.Key("identity").Begin();
  j.Key("rank").Int(m.rank);
  j.Key("local_rank").Int(m.local_rank);
  j.Key("world_size").Int(m.world_size);
  j.Key("host").Str(m.host);
  j.Key("pid").Int(m.pid);
  j.Key("roles").List(m.roles, str);
  if (m.replica) j.Key("replica").Int(*m.replica);
  else j.Key("replica").Null();
  if (!m.identity_source.empty()) j.Key("source").Str(m.identity_source);
  j.End();
  j.Key("clock").Begin();
  j.Key("source").Str(m.clock_source);
  j.Key("monotonic_anchor_ns").Int(m.monotonic_anchor_ns);
  j.Key("realtime_anchor_ns").Int(m.realtime_anchor_ns);
  j.Key("offset_to_rank0_ns").Int(m.offset_to_rank0_ns);
  j.Key("offset_measured").Bool(m.offset_measured);
  if (m.clock_source == "tsc") j.Key("tsc_hz").Double(m.tsc_hz);
  j.End();
  j.Key("window").Begin();
  j.Key("open_ns").Int(m.window_open_ns);
  if (!m.close_reason.empty()) {  // absent while the window is open
    j.Key("close_ns").Int(m.window_close_ns);
    j.Key("close_reason").Str(m.close_reason);
  }
  if (!m.trigger.empty()) j.Key("trigger").Str(m.trigger);
  if (!m.sampling.unit.empty()) {
    j.Key("sampling").Begin();
    j.Key("unit").Str(m.sampling.unit);
    j.Key("first").Int(m.sampling.first);
    j.Key("count").Int(m.sampling.count);
    j.Key("complete").Bool(m.sampling.complete);
    if (const std::string schedule = Indented(m.sampling.schedule_json); !schedule.empty())
      j.Key("schedule").Nested(schedule);
    if (!m.sampling.from.empty()) j.Key("from").Str(m.sampling.from);
    j.End();
  }
  j.End();
  j.Key("contents").List(m.contents, str);
  if (m.ops_sampling < 1) j.Key("ops_sampling").Double(m.ops_sampling);
  j.Key("counts").Begin();
  j.Key("events").Int(m.event_count);
  j.Key("dropped_events").Int(m.dropped_events);
  j.Key("dropped_buffer_full").Int(m.dropped_buffer_full);
  j.Key("dropped_budget").Int(m.dropped_budget);
  j.Key("dropped_write_error").Int(m.dropped_write_error);
  j.Key("threads").Int(m.threads);
  const std::string sources = Indented(m.sources_json);
  if (!sources.empty()) j.Key("source_events").Int(m.source_events);
  j.End();
  if (!sources.empty()) j.Key("sources").Nested(sources);
  j.Key("files").List(m.files, [&j](const Manifest::File& f) {
    j.Begin();
    j.Key("name").Str(f.name);
    j.Key("bytes").Int(f.bytes);
    j.End();
  });
  j.Key("complete").Bool(m.complete);
  j.Key("errors").List(m.errors, str);
  std::string formatted;
  if (config_text.empty() && !m.config_json.empty()) {
    formatted = FormatManifestConfig(m.config_json);
    config_text = formatted;
  }
  if (!config_text.empty()) {
    // The last key: the plan formatted once per session (FormatManifestConfig), not again
    // for every manifest.
    text += ",\n  \"config\": ";
    text += config_text;
  }
  text += "\n}\n";
  return text;
}

std::string FormatManifestConfig(const std::string& config_json) {
  using ojson = nlohmann::ordered_json;
  if (config_json.empty()) return std::string();
  const ojson cfg = ojson::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded()) return std::string();
  const std::string flat = cfg.dump(2, ' ', false, ojson::error_handler_t::replace);
  std::string out;
  out.reserve(flat.size() + flat.size() / 8);
  for (char c : flat) {  // one level deeper: the manifest's own indent
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}


Manifest ParseManifest(const std::string& text, std::vector<std::string>* diag) {
  Manifest m;
  bool too_deep = false;
  json root = ParseJsonBounded(text, &too_deep);
  if (too_deep) {
    diag->push_back(std::string(kManifestName) + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                    " levels; manifest ignored");
    return m;
  }
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
  id.IntAtLeast("rank", -1, &m.rank);  // -1: a process outside the ranks (a controller)
  id.IntAtLeast("local_rank", -1, &m.local_rank);
  id.IntAtLeast("world_size", 0, &m.world_size);
  id.Str("host", &m.host);
  id.IntAtLeast("pid", 0, &m.pid);
  id.StrList("roles", &m.roles);
  id.OptInt("replica", &m.replica);
  id.Str("source", &m.identity_source);
  Fields clock = f.Object("clock");
  clock.Str("source", &m.clock_source);
  clock.Double("tsc_hz", &m.tsc_hz);
  clock.Int("monotonic_anchor_ns", &m.monotonic_anchor_ns);
  clock.Int("realtime_anchor_ns", &m.realtime_anchor_ns);
  clock.Int("offset_to_rank0_ns", &m.offset_to_rank0_ns);
  clock.Bool("offset_measured", &m.offset_measured);
  Fields window = f.Object("window");
  window.Int("open_ns", &m.window_open_ns);
  window.Int("close_ns", &m.window_close_ns);
  window.Str("close_reason", &m.close_reason);
  window.Str("trigger", &m.trigger);
  Fields sampling = window.Object("sampling");
  sampling.Str("unit", &m.sampling.unit);
  sampling.Int("first", &m.sampling.first);
  sampling.Int("count", &m.sampling.count);
  sampling.Bool("complete", &m.sampling.complete);
  sampling.ObjectText("schedule", &m.sampling.schedule_json);
  sampling.Str("from", &m.sampling.from);
  f.StrList("contents", &m.contents);
  f.Share("ops_sampling", &m.ops_sampling);
  Fields counts = f.Object("counts");
  counts.IntAtLeast("events", 0, &m.event_count, /*required=*/true);
  counts.IntAtLeast("dropped_events", 0, &m.dropped_events);
  counts.IntAtLeast("dropped_buffer_full", 0, &m.dropped_buffer_full);
  counts.IntAtLeast("dropped_budget", 0, &m.dropped_budget);
  counts.IntAtLeast("dropped_write_error", 0, &m.dropped_write_error);
  counts.IntAtLeast("threads", 0, &m.threads);
  counts.IntAtLeast("source_events", 0, &m.source_events);
  f.ObjectText("sources", &m.sources_json);
  f.Bool("complete", &m.complete);
  f.StrList("errors", &m.errors);
  if (auto it = root.find("files"); it != root.end()) {
    if (!it->is_array()) {
      diag->push_back(std::string(kManifestName) + ": files: expected a list");
    } else {
      for (const auto& e : *it) {
        Manifest::File file;
        Fields ff(&e, "files[].", diag);
        if (!e.is_object()) {
          diag->push_back(std::string(kManifestName) + ": files: expected objects");
          continue;
        }
        ff.Str("name", &file.name);
        ff.Int("bytes", &file.bytes);
        if (!file.name.empty()) m.files.push_back(std::move(file));
      }
    }
  }
  if (auto it = root.find("config"); it != root.end()) {
    m.config_json = it->dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return m;
}

}  // namespace rlprof::format
