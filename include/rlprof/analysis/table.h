// An analysis output as a table: its name and columns (type, unit) and rows of cells. Every
// output of the analysis library is one (step_trace_time, stage_time, op_statistic, …; see
// docs/analysis.md), and every writer — CSV, the SQLite analysis.db, JSON, terminal text, the
// Python DataFrames — reads this one shape.
//
//   const rlprof::analysis::Table& t = …;
//   for (size_t c = 0; c < t.columns.size(); ++c) … t.columns[c].name, t.rows[r][c] …
//
// Thread-safety: a plain value.
#ifndef RLPROF_INCLUDE_RLPROF_ANALYSIS_TABLE_H_
#define RLPROF_INCLUDE_RLPROF_ANALYSIS_TABLE_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace rlprof::analysis {

enum class ColumnType { kInt, kReal, kText };

struct Column {
  std::string name;  // as written in CSV headers (msprof names keep their units, "Computing")
  ColumnType type = ColumnType::kReal;
  std::string unit;  // "us", "ns", "ms", "%", "" — shown by ToText
  // Text that repeats across many rows (kernel names): SqliteWriter stores each value once, in
  // its `strings` table, and the table as a view of the same name and columns (docs/analysis.md).
  bool repeats = false;
};

// An empty cell (monostate) is SQL NULL, an empty CSV field, None / NaN in Python.
using Cell = std::variant<std::monostate, int64_t, double, std::string>;

struct Table {
  std::string name;  // file stem / SQLite table name
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
};

}  // namespace rlprof::analysis

#endif  // RLPROF_INCLUDE_RLPROF_ANALYSIS_TABLE_H_
