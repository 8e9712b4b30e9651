#include "src/report/html_report.h"

#include <cstring>
#include <ctime>

#include "src/base/files.h"

namespace rlprof::report {
namespace internal {
extern const char kReportHtml[];
}  // namespace internal

namespace {
constexpr char kPlaceholder[] = "@RLPROF_REPORT_DATA@";
}  // namespace

std::string ScriptSafeJson(const nlohmann::json& data) {
  // Invalid UTF-8 in a name must not make the report unwritable: replace it.
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";  // line separators end JS lines
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

nlohmann::json ReportData(const std::vector<analysis::InputResult>& results, nlohmann::json summary,
                          const std::string& title,
                          const std::string& version, const analysis::Comparison* compare,
                          const std::string& baseline, const std::string& current) {
  constexpr size_t kTopOps = 40;  // per input and type: the page sums them over inputs
  size_t k = 0;
  for (const auto& r : results) {
    if (!r.status.ok()) {
      ++k;
      continue;
    }
    analysis::Table ops = analysis::OpStatisticTable(r.analysis);
    analysis::Table top{ops.name, ops.columns, {}};
    size_t host = 0, device = 0;
    for (auto& row : ops.rows) {
      const std::string& type = std::get<std::string>(row[0]);
      size_t* n = type == "host" ? &host : type == "device" ? &device : nullptr;
      if (n != nullptr && (*n)++ < kTopOps) top.rows.push_back(std::move(row));
    }
    summary["inputs"][k++]["op_statistic"] = analysis::ToJson(top);
  }
  char when[32] = "";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (gmtime_r(&now, &utc) != nullptr) std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &utc);
  nlohmann::json data = {{"title", title}, {"generated", when}, {"rlprof_version", version},
                         {"summary", std::move(summary)}};
  if (compare != nullptr) {
    data["compare"] = analysis::ComparisonToJson(*compare);
    data["compare"]["baseline"] = baseline;
    data["compare"]["new"] = current;
  }
  return data;
}

std::string RenderHtmlReport(const nlohmann::json& data) {
  std::string page = internal::kReportHtml;
  const size_t at = page.find(kPlaceholder);
  if (at == std::string::npos) return page;  // cannot happen: the asset carries it (tested)
  page.replace(at, std::strlen(kPlaceholder), ScriptSafeJson(data));
  return page;
}

base::Status WriteHtmlReport(const std::string& path, const nlohmann::json& data) {
  return base::WriteFileAtomic(path, RenderHtmlReport(data));
}

}  // namespace rlprof::report
