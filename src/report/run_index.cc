#include "src/report/run_index.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "src/format/capture.h"
#include "src/base/files.h"
#include "src/format/bounded_json.h"

namespace rlprof::report {
namespace fs = std::filesystem;

namespace {

int64_t MtimeNs(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  const auto sys = std::chrono::file_clock::to_sys(t);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(sys.time_since_epoch()).count();
}

bool Inside(const fs::path& child, const fs::path& root) {
  auto r = root.begin(), c = child.begin();
  for (; r != root.end(); ++r, ++c) {
    if (c == child.end() || *r != *c) return false;
  }
  return true;
}

std::string ReadSmallFile(const fs::path& p) {
  // Regular files only, of a manifest's size at most: a FIFO or /dev/zero under a manifest's
  // name never blocks or exhausts `rlprof serve` (base::ReadFile).
  auto text = base::ReadFile(p.string(), base::kMaxManifestBytes);
  return text.ok() ? std::move(*text) : std::string();
}

void AddCapture(const std::string& dir, RunInfo* run) {
  run->captures.push_back(dir);
  for (const char* f : {"manifest.json", "events.rlp"}) run->newest_ns = std::max(run->newest_ns, MtimeNs(fs::path(dir) / f));
  const std::string text = ReadSmallFile(fs::path(dir) / "manifest.json");
  if (text.empty()) return;
  std::vector<std::string> notes;
  const format::Manifest m = format::ParseManifest(text, &notes);
  if (m.rank >= 0) run->ranks.insert(m.rank);
  for (int64_t s : m.steps) run->steps.insert(s);
  for (const auto& r : m.roles) run->roles.insert(r);
  if (!m.role.empty()) run->roles.insert(m.role);
  if (!m.scope.empty()) run->scopes.insert(m.scope);
  if (!m.mode.empty()) run->modes.insert(m.mode);
  for (const auto& c : m.contents) run->contents.insert(c);
  if (!m.config_json.empty()) {
    const auto plan = format::ParseJsonBounded(m.config_json);
    if (plan.is_object() && plan.contains("tool") && plan["tool"].is_string()) run->tools.insert(plan["tool"].get<std::string>());
  }
}

uint64_t FolderBytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) total += it->file_size(e2);
  }
  return total;
}

std::string Join(const std::set<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// "0-3, 7": sorted integers as ranges.
std::string Ranges(const std::set<int64_t>& v) {
  std::string out;
  for (auto it = v.begin(); it != v.end();) {
    int64_t a = *it, b = a;
    for (++it; it != v.end() && *it == b + 1; ++it) b = *it;
    out += (out.empty() ? "" : ", ") + std::to_string(a) + (b > a ? "-" + std::to_string(b) : "");
  }
  return out;
}

std::string Bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1ull << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

std::string When(int64_t ns) {
  const std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  std::tm utc{};
  char buf[32] = "";
  if (gmtime_r(&t, &utc) != nullptr) std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return buf;
}

constexpr char kStyle[] =
    "<style>body{margin:0;font:14px/1.45 system-ui,sans-serif;color:#1d2330;background:#f7f8fa}"
    "header{padding:16px 28px;background:#111827;color:#fff}header h1{margin:0;font-size:19px}"
    "header .sub{color:#cbd5e1;font-size:13px;word-break:break-all}main{padding:20px 28px;max-width:1400px}"
    "section{background:#fff;border:1px solid #e4e7ec;border-radius:8px;padding:14px 18px;margin-bottom:16px}"
    "table{border-collapse:collapse;width:100%;font-size:13px}th,td{padding:5px 8px;border-bottom:1px solid #e4e7ec;"
    "text-align:left;white-space:nowrap}th{background:#f2f4f7}td.r{text-align:right}a{color:#1d4ed8}"
    ".note{color:#667085;font-size:12.5px}select,button{font:inherit}</style>";

std::string Page(const std::string& title, const std::string& sub, const std::string& body) {
  return "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + HtmlEscape(title) +
         "</title>" + kStyle + "</head><body><header><h1>" + HtmlEscape(title) + "</h1><div class=\"sub\">" +
         HtmlEscape(sub) + "</div></header><main>" + body + "</main></body></html>";
}

}  // namespace

RunIndex ListRuns(const std::string& save_path, std::string_view only_id) {
  RunIndex idx;
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(save_path, ec);
  idx.root = ec ? save_path : root.string();
  fs::directory_iterator it(idx.root, ec), end;
  if (ec) {
    idx.diagnostics.Note("input_unreadable_dir", idx.root + ": cannot list: " + ec.message());
    return idx;
  }
  std::vector<fs::path> entries;
  for (; it != end; it.increment(ec)) entries.push_back(it->path());
  for (const fs::path& e : entries) {
    const std::string name = e.filename().string();
    if (name.empty() || name[0] == '.') continue;  // .rlprof-serve caches, hidden folders
    if (!only_id.empty() && name != only_id) continue;  // compared with listed names only
    std::error_code e2;
    if (!fs::is_directory(e, e2)) continue;
    const fs::path real = fs::canonical(e, e2);
    if (e2 || !Inside(real, fs::path(idx.root))) {
      idx.diagnostics.Note("input_unreadable_dir", e.string() + ": outside the save path (a link?): not served");
      continue;
    }
    RunInfo run;
    run.id = name;
    run.path = real.string();
    format::Diagnostics d;
    for (const std::string& c : format::FindCaptureDirs(run.path, &d)) {
      // The capture and its two files, each resolved: a link out of the run is never served.
      if (format::ResolvesInsideWithCaptureFiles(c, real.string())) AddCapture(c, &run);
      else idx.diagnostics.Note("input_outside_root", c + ": leads outside the save path (a link): not served");
    }
    idx.diagnostics.Merge(d);
    if (run.captures.empty()) continue;
    if (only_id.empty()) run.bytes = FolderBytes(real);  // the list page's column only
    idx.runs.push_back(std::move(run));
  }
  std::sort(idx.runs.begin(), idx.runs.end(), [](const RunInfo& a, const RunInfo& b) {
    return a.newest_ns != b.newest_ns ? a.newest_ns > b.newest_ns : a.id < b.id;
  });
  return idx;
}

std::optional<RunInfo> LoadRun(const std::string& save_path, std::string_view id) {
  if (id.empty()) return std::nullopt;
  RunIndex idx = ListRuns(save_path, id);
  if (idx.runs.empty()) return std::nullopt;
  return std::move(idx.runs.front());
}

const RunInfo* FindRun(const RunIndex& index, std::string_view id) {
  for (const RunInfo& r : index.runs) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string UrlEncode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string RunListPage(const RunIndex& index, const std::string& raw_query) {
  const std::string query = HtmlEscape(raw_query);
  std::string body = "<section><h2>Runs</h2><p class=\"note\">Newest first. A report is analysed on first view and "
                     "cached in the run's .rlprof-serve folder (recomputed when a capture is newer).</p>";
  if (index.runs.empty()) {
    body += "<p class=\"note\">No captures under this save path.</p></section>";
  } else {
    body += "<table><thead><tr><th>run</th><th>newest capture</th><th>captures</th><th>ranks</th><th>steps</th>"
            "<th>roles</th><th>plan</th><th>size</th><th></th></tr></thead><tbody>";
    for (const RunInfo& r : index.runs) {
      const std::string id = UrlEncode(r.id);
      std::string plan = Join(r.tools);
      if (!r.modes.empty()) plan += (plan.empty() ? "" : " · ") + Join(r.modes);
      if (!r.contents.empty()) plan += " · " + Join(r.contents);
      body += "<tr><td><a class=\"report\" href=\"/runs/" + id + "/report.html" + query + "\">" + HtmlEscape(r.id) +
              "</a></td><td>" + When(r.newest_ns) + "</td><td class=\"r\">" + std::to_string(r.captures.size()) +
              "</td><td>" + Ranges(r.ranks) + "</td><td>" + Ranges(r.steps) + "</td><td>" + HtmlEscape(Join(r.roles)) +
              "</td><td>" + HtmlEscape(plan) + "</td><td class=\"r\">" + Bytes(r.bytes) + "</td><td><a href=\"/runs/" +
              id + "/captures" + query + "\">captures (.pftrace)</a></td></tr>";
    }
    body += "</tbody></table></section>";
    // Compare any two runs: a plain GET form.
    std::string options;
    for (const RunInfo& r : index.runs) options += "<option value=\"" + HtmlEscape(r.id) + "\">" + HtmlEscape(r.id) + "</option>";
    body += "<section><h2>Compare two runs</h2><form id=\"compare\" method=\"get\" action=\"/compare\">baseline "
            "<select name=\"baseline\">" + options + "</select> new <select name=\"new\">" + options + "</select>";
    const size_t at = raw_query.find("token=");
    if (at != std::string::npos) body += "<input type=\"hidden\" name=\"token\" value=\"" + HtmlEscape(raw_query.substr(at + 6)) + "\">";
    body += " <button type=\"submit\">compare</button></form></section>";
  }
  if (!index.diagnostics.empty()) {
    body += "<section><h2>Skipped</h2><ul>";
    for (const auto& d : index.diagnostics.details) body += "<li>" + HtmlEscape(d) + "</li>";
    body += "</ul></section>";
  }
  return Page("rlprof serve", index.root + " · " + std::to_string(index.runs.size()) + " run(s)", body);
}

std::string CaptureListPage(const RunInfo& run, const std::string& raw_query) {
  const std::string query = HtmlEscape(raw_query);
  std::string body = "<section><p><a href=\"/" + query + "\">← runs</a> · <a href=\"/runs/" + UrlEncode(run.id) +
                     "/report.html" + query + "\">report</a></p><table><thead><tr><th>capture</th><th>Perfetto</th>"
                     "</tr></thead><tbody>";
  for (size_t i = 0; i < run.captures.size(); ++i) {
    std::string rel = run.captures[i];
    if (rel.rfind(run.path, 0) == 0) rel = rel.substr(std::min(rel.size(), run.path.size() + 1));
    body += "<tr><td>" + HtmlEscape(rel) + "</td><td><a download href=\"/runs/" + UrlEncode(run.id) + "/captures/" +
            std::to_string(i) + ".pftrace" + query + "\">.pftrace</a></td></tr>";
  }
  body += "</tbody></table><p class=\"note\">Open a .pftrace in the Perfetto UI (ui.perfetto.dev) or "
          "trace_processor; it is converted on first download and cached.</p></section>";
  return Page("rlprof serve — " + run.id, run.path, body);
}

std::string ErrorPage(int status, std::string_view message) {
  return Page("rlprof serve — " + std::to_string(status), std::string(message),
              "<section><p><a href=\"/\">← runs</a></p></section>");
}

}  // namespace rlprof::report
