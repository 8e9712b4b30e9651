// The self-contained HTML report (`rlprof report`): one page, no network, that draws an
// analysis — the run's summary.json (src/analysis/run.h SummaryJson, plus each input's
// op_statistic) and, optionally, a comparison with a baseline (`rlprof compare`'s JSON).
//
//   nlohmann::json data = {{"title", "run 42"}, {"summary", summary_json}, {"compare", cmp}};
//   RLPROF_RETURN_IF_ERROR(WriteHtmlReport("report.html", data));
//
// The data is embedded as JSON in a <script type="application/json"> element, with '<', '>'
// and '&' escaped, so no name in a trace can end the element or inject markup; the page's
// script inserts every string as text, never as HTML.
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_REPORT_HTML_REPORT_H_
#define RLPROF_SRC_REPORT_HTML_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "src/analysis/compare.h"
#include "src/analysis/run.h"
#include "src/base/status.h"

namespace rlprof::report {

// The page's data for an analysed run: its summary.json document (SummaryJson of `results`,
// passed in so a caller that already built it does not build it twice) with each input's top
// operators and kernels added ("op_statistic", by total), the title, the UTC time, the
// version, and — with a baseline — the comparison ("compare": ComparisonToJson plus
// "baseline" and "new").
nlohmann::json ReportData(const std::vector<analysis::InputResult>& results, nlohmann::json summary,
                          const std::string& title,
                          const std::string& version, const analysis::Comparison* compare = nullptr,
                          const std::string& baseline = "", const std::string& current = "");

// JSON text safe inside a <script> element: '<', '>', '&' and U+2028/2029 as \u escapes.
std::string ScriptSafeJson(const nlohmann::json& data);

std::string RenderHtmlReport(const nlohmann::json& data);

// Writes the page atomically (a failed write never leaves half a file).
base::Status WriteHtmlReport(const std::string& path, const nlohmann::json& data);

}  // namespace rlprof::report

#endif  // RLPROF_SRC_REPORT_HTML_REPORT_H_
