#include "src/runtime/manifest.h"

#include <nlohmann/json.hpp>

#include "src/base/version.h"

namespace rlprof::runtime {

std::string ManifestJson(const ManifestData& m) {
  using json = nlohmann::ordered_json;
  json j;
  j["format"] = "rlprof-capture";
  j["format_version"] = 1;
  j["rlprof_version"] = base::Version();
  j["run_id"] = m.run_id;
  j["scope"] = m.scope;
  j["mode"] = m.mode;
  j["steps"] = m.steps;
  // Keys without a value are left out (readers tolerate missing keys; a null would be a
  // value of the wrong type for them).
  if (!m.stage.empty()) j["stage"] = m.stage;
  if (!m.role.empty()) j["role"] = m.role;
  const Identity& id = m.identity;
  j["identity"] = {{"rank", id.rank},
                   {"local_rank", id.local_rank},
                   {"world_size", id.world_size},
                   {"host", id.host},
                   {"pid", id.pid},
                   {"roles", id.roles},
                   {"replica", id.replica ? json(*id.replica) : json(nullptr)},
                   {"source", id.source}};
  j["clock"] = {{"source", ClockSourceName(m.clock_source)},
                {"monotonic_anchor_ns", m.monotonic_anchor_ns},
                {"realtime_anchor_ns", m.realtime_anchor_ns},
                {"offset_to_rank0_ns", m.offset_to_rank0_ns},
                {"offset_measured", m.offset_measured}};
  if (m.clock_source == ClockSource::kTsc) j["clock"]["tsc_hz"] = m.tsc_hz;
  json window = {{"open_ns", m.open_ns}};
  if (!m.close_reason.empty()) {  // absent while the window is open
    window["close_ns"] = m.close_ns;
    window["close_reason"] = m.close_reason;
  }
  if (!m.trigger.empty()) window["trigger"] = m.trigger;
  if (!m.sampling_json.empty()) {
    json sampling = json::parse(m.sampling_json, nullptr, /*allow_exceptions=*/false);
    if (!sampling.is_discarded()) window["sampling"] = std::move(sampling);
  }
  j["window"] = window;
  j["contents"] = m.contents;
  j["counts"] = {{"events", m.events},
                 {"dropped_events", m.dropped_buffer_full + m.dropped_budget + m.dropped_write_error},
                 {"dropped_buffer_full", m.dropped_buffer_full},
                 {"dropped_budget", m.dropped_budget},
                 {"dropped_write_error", m.dropped_write_error},
                 {"threads", m.threads}};
  if (!m.sources_json.empty()) {
    json sources = json::parse(m.sources_json, nullptr, /*allow_exceptions=*/false);
    if (!sources.is_discarded()) {
      j["counts"]["source_events"] = m.source_events;
      j["sources"] = std::move(sources);
    }
  }
  j["files"] = json::array({{{"name", "events.rlp"}, {"bytes", m.events_bytes}}});
  j["complete"] = m.complete;
  j["errors"] = m.errors;
  // Names come from users (stages, roles, hosts, C API strings) and need not be UTF-8: replace
  // bad bytes rather than throw (this runs on the writer thread of a training process).
  std::string text = j.dump(2, ' ', false, json::error_handler_t::replace);
  if (!m.config_text.empty() && text.size() >= 2) {
    // The last key, spliced in before the closing "\n}": the same text as dumping it with the
    // rest, without parsing and formatting the plan again for every manifest (it was most of
    // the writer's fixed cost per window).
    text.resize(text.size() - 2);
    text += ",\n  \"config\": ";
    text += m.config_text;
    text += "\n}";
  }
  text += '\n';
  return text;
}

std::string FormatManifestConfig(const std::string& config_json) {
  using json = nlohmann::ordered_json;
  if (config_json.empty()) return std::string();
  const json cfg = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded()) return std::string();
  const std::string flat = cfg.dump(2, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(flat.size() + flat.size() / 8);
  for (char c : flat) {  // one level deeper: the manifest's own indent
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

}  // namespace rlprof::runtime
