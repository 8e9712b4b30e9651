#include "src/report/html_report.h"

#include <cstring>

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
