// `rlprof compare` for asynchronous runs (compare.h): the run's async figures and its version
// intervals, baseline against new.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "src/analysis/run/async_run.h"
#include "src/analysis/run/compare.h"

namespace rlprof::analysis {
namespace {

// The value of column `col` in row `r` as a number (NaN when empty or text).
double Num(const Table& t, size_t r, const std::string& col) {
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (t.columns[c].name != col) continue;
    const Cell& v = t.rows[r][c];
    if (const auto* d = std::get_if<double>(&v)) return *d;
    if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    return std::numeric_limits<double>::quiet_NaN();
  }
  return std::numeric_limits<double>::quiet_NaN();
}

Cell Value(double x) { return std::isnan(x) ? Cell{} : Cell{x}; }
Cell Delta(double b, double n) { return std::isnan(b) || std::isnan(n) ? Cell{} : Cell{n - b}; }

double Median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// One side's figures.
struct AsyncSide {
  Table verdict, versions;
  bool present = false;
  double Interval(const char* col, double (*agg)(std::vector<double>)) const {
    std::vector<double> v;
    for (size_t r = 0; r < versions.rows.size(); ++r)
      if (!std::holds_alternative<std::monostate>(versions.rows[r][0])) v.push_back(Num(versions, r, col));
    return agg(std::move(v));
  }
};

AsyncSide SideOf(const std::vector<InputResult>& results) {
  AsyncSide s;
  s.present = AnyAsync(results);
  if (!s.present) return s;
  s.verdict = AsyncVerdictTable(results);
  s.versions = AsyncVersionsTable(results);
  return s;
}

double Sum(std::vector<double> v) {
  double s = 0;
  for (double x : v) s += std::isnan(x) ? 0 : x;
  return s;
}

double Count(std::vector<double> v) { return static_cast<double>(v.size()); }

}  // namespace

Table CompareAsyncTable(const std::vector<InputResult>& baseline, const std::vector<InputResult>& test) {
  Table t{"compare_async",
          {Column{"metric", ColumnType::kText, ""}, Column{"unit", ColumnType::kText, ""},
           Column{"baseline", ColumnType::kReal, ""}, Column{"new", ColumnType::kReal, ""},
           Column{"delta", ColumnType::kReal, ""}},
          {}};
  const AsyncSide b = SideOf(baseline), n = SideOf(test);
  if (!b.present && !n.present) return t;
  auto verdict = [](const AsyncSide& s, const char* col) {
    return s.present && !s.verdict.rows.empty() ? Num(s.verdict, 0, col) : std::numeric_limits<double>::quiet_NaN();
  };
  auto intervals = [](const AsyncSide& s, const char* col, double (*agg)(std::vector<double>)) {
    return s.present ? s.Interval(col, agg) : std::numeric_limits<double>::quiet_NaN();
  };
  auto row = [&](const std::string& metric, const std::string& unit, double x, double y) {
    t.rows.push_back({metric, unit, Value(x), Value(y), Delta(x, y)});
  };
  row("version_intervals", "", intervals(b, "duration", &Count), intervals(n, "duration", &Count));
  row("interval_median", "us", intervals(b, "duration", &Median), intervals(n, "duration", &Median));
  row("samples_per_s_median", "/s", intervals(b, "samples_per_s", &Median), intervals(n, "samples_per_s", &Median));
  row("consumed", "", verdict(b, "consumed"), verdict(n, "consumed"));
  row("throughput_measured", "/s", verdict(b, "throughput_measured"), verdict(n, "throughput_measured"));
  row("balance", "", verdict(b, "balance"), verdict(n, "balance"));
  for (const char* c : {"generation", "training", "overlap", "exposed_generation", "exposed_sync"})
    row(c, "us", verdict(b, c), verdict(n, c));
  for (const char* w : kWaitCauses) {
    const std::string col = std::string("wait_") + w;
    row(col, "us", intervals(b, col.c_str(), &Sum), intervals(n, col.c_str(), &Sum));
  }
  return t;
}

Table CompareAsyncVersionsTable(const std::vector<InputResult>& baseline, const std::vector<InputResult>& test) {
  Table t{"compare_async_versions",
          {Column{"interval", ColumnType::kInt, ""}, Column{"version_baseline", ColumnType::kInt, ""},
           Column{"version_new", ColumnType::kInt, ""}},
          {}};
  static const char* const kCols[] = {"duration", "consumed", "samples_per_s", "exposed_generation", "wait_samples",
                                      "staleness_mean"};
  for (const char* c : kCols)
    for (const char* side : {"_baseline", "_new", "_delta"}) {
      const bool us = std::string(c) == "duration" || std::string(c).starts_with("exposed") ||
                      std::string(c).starts_with("wait");
      t.columns.push_back({std::string(c) + side, ColumnType::kReal,
                           us ? "us" : std::string(c) == "samples_per_s" ? "/s" : ""});
    }
  const AsyncSide b = SideOf(baseline), n = SideOf(test);
  if (!b.present && !n.present) return t;
  // The published intervals of each side, in order (the start-up row is left out: it is the
  // processes' start, not a version).
  auto published = [](const AsyncSide& s) {
    std::vector<size_t> rows;
    for (size_t r = 0; r < s.versions.rows.size(); ++r)
      if (!std::holds_alternative<std::monostate>(s.versions.rows[r][0])) rows.push_back(r);
    return rows;
  };
  const std::vector<size_t> rb = b.present ? published(b) : std::vector<size_t>{};
  const std::vector<size_t> rn = n.present ? published(n) : std::vector<size_t>{};
  for (size_t k = 0; k < std::max(rb.size(), rn.size()); ++k) {
    std::vector<Cell> row{static_cast<int64_t>(k + 1)};
    row.push_back(k < rb.size() ? b.versions.rows[rb[k]][0] : Cell{});
    row.push_back(k < rn.size() ? n.versions.rows[rn[k]][0] : Cell{});
    for (const char* c : kCols) {
      const double x = k < rb.size() ? Num(b.versions, rb[k], c) : std::numeric_limits<double>::quiet_NaN();
      const double y = k < rn.size() ? Num(n.versions, rn[k], c) : std::numeric_limits<double>::quiet_NaN();
      row.push_back(Value(x));
      row.push_back(Value(y));
      row.push_back(Delta(x, y));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace rlprof::analysis
