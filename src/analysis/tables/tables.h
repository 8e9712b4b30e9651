// The analysis outputs as tables: one declaration per table (name, columns with type and
// unit) used by every writer — CSV files, the SQLite analysis.db, JSON and terminal text — so
// the formats never drift apart. Builders turn TraceAnalysis results into Tables.
//
//   Table t = StepTraceTimeTable(analysis);        // msprof columns, µs
//   std::string csv = ToCsv(t);
//   std::string text = ToText(t);                  // aligned, units in the header
//   RLPROF_RETURN_IF_ERROR(WriteSqlite({t, …}, "analysis.db"));
//
// Thread-safety: pure functions; WriteSqlite writes one file.
#ifndef RLPROF_SRC_ANALYSIS_TABLES_TABLES_H_
#define RLPROF_SRC_ANALYSIS_TABLES_TABLES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "rlprof/analysis/table.h"
#include "src/analysis/passes/analyse.h"
#include "src/base/status.h"

struct sqlite3;
namespace rlprof::format {
class SqliteFile;
}

namespace rlprof::analysis {

// Table, Column, Cell, ColumnType: include/rlprof/analysis/table.h (the public shape).

// Per-input tables.
Table StepTraceTimeTable(const TraceAnalysis& a);  // step_trace_time: msprof columns, µs
Table StepAtomsTable(const TraceAnalysis& a);      // step_atoms: rlprof atoms, ns
Table StageTimeTable(const TraceAnalysis& a);      // stage_time: RL view, µs
Table CommByGroupTable(const TraceAnalysis& a);    // comm_by_group: per step × process group, µs
Table OpStatisticTable(const TraceAnalysis& a);    // op_statistic: host ops and kernels, µs
Table KernelDetailsTable(const TraceAnalysis& a);  // kernel_details: device work, µs
Table HtaTemporalTable(const TraceAnalysis& a);    // hta_temporal_breakdown, µs and %
Table HtaIdleTable(const TraceAnalysis& a);        // hta_idle_breakdown
Table HtaKernelTypeTable(const TraceAnalysis& a);  // hta_kernel_type_breakdown, µs and %
Table GpuTimelineTable(const TraceAnalysis& a);    // gpu_timeline: TraceLens rows, ms and %
Table ClassTable(const TraceAnalysis& a);          // classes: count and Σ duration per class
Table ModuleViewTable(const TraceAnalysis& a);     // module_view: time per nn.Module path, µs
Table MemoryPeakTable(const TraceAnalysis& a);     // memory_peak: per stage × memory series, bytes
Table OpsByFrameTable(const TraceAnalysis& a);
Table UserRangeTable(const TraceAnalysis& a);      // user_ranges: named ranges / marks (NVTX, mstx), µs     // ops_by_frame: operators by user frame, µs
Table TbStepTimeTable(const TraceAnalysis& a);      // tb_step_time: torch-tb-profiler per step, µs
Table DiagnosticsTable(const Diagnostics& d);      // diagnostics: name, count

// All per-input tables, in file order.
std::vector<Table> AllTables(const TraceAnalysis& a);
// The same tables, taking `a`'s per-kernel rows into kernel_details instead of copying them:
// a->kernel_rows is left empty (and its memory freed). For a caller that reads them no more.
std::vector<Table> TakeAllTables(TraceAnalysis* a);

// Concatenates the same table of several inputs, prepending an `input` text column.
Table ConcatWithInput(const std::vector<std::pair<std::string, const Table*>>& parts);

std::string ToCsv(const Table& t);
// The same text into `*out` (replacing what it held, keeping its capacity): a writer of many
// tables reuses one buffer instead of faulting in fresh pages for each.
void ToCsv(const Table& t, std::string* out);
// Aligned text; when every numeric column has the same unit (CommonUnit), the header omits
// it (callers print it once, e.g. "-- step_trace_time (us)"), else each header says "(unit)".
std::string ToText(const Table& t);
std::string CommonUnit(const Table& t);  // "" when columns differ
nlohmann::json ToJson(const Table& t);  // {"columns":[{name,type,unit}],"rows":[[…]]}
std::string FormatCell(const Cell& c);  // shortest round-trip for reals, "" for null

// Writes every table into a new SQLite database (replaced atomically), plus a `meta` table.
base::Status WriteSqlite(const std::vector<Table>& tables, const std::string& path);

// One table of a database written by WriteSqliteParts, assembled without copying rows: the
// parts' rows in order. With `with_input`, an `input` text column comes first, holding each
// part's label (ConcatWithInput's layout); without, the label is ignored. Every part has the
// first part's name and columns.
struct SqliteTable {
  std::vector<std::pair<std::string, const Table*>> parts;  // (input label, table)
  bool with_input = true;
};
// WriteSqlite over such tables: one connection, one transaction, one prepared INSERT per table.
// The same file as WriteSqlite of the concatenated tables.
base::Status WriteSqliteParts(const std::vector<SqliteTable>& tables, const std::string& path);

// WriteSqliteParts in steps, for a thread that gets its tables as they become ready: Open,
// then tables whole (Add) or in parts (Create, then Append each part's rows, possibly
// interleaved with other tables' Appends), Commit. The file depends only on the sequence of
// calls. Destroyed before Commit (or after a failure), the partial file is removed and `path`
// is left as it was. IoError naming the path and the step.
class SqliteWriter {
 public:
  static base::StatusOr<std::unique_ptr<SqliteWriter>> Open(const std::string& path);
  ~SqliteWriter();
  SqliteWriter(const SqliteWriter&) = delete;
  SqliteWriter& operator=(const SqliteWriter&) = delete;
  base::Status Add(const SqliteTable& table);  // Create, Append every part
  // A table named and typed like `like` (its rows are not inserted), with an `input` text
  // column first when `with_input`; returns its handle for Append. With `repeats` text
  // columns, the rows go to a table `<name>_rows` holding ids into `strings` for them (and for
  // `input`), and `<name>` is a view with `like`'s columns, in insertion order.
  base::StatusOr<size_t> Create(const Table& like, bool with_input);
  // Inserts `rows`' rows (columns as Create's `like`) after the table's rows so far, with
  // `input` in the `input` column (ignored without one). `rows` must outlive the call only.
  base::Status Append(size_t table, const std::string& input, const Table& rows);
  base::Status Commit();  // then renames the file into place (Close, then Publish)
  // Commit in two steps, for a writer that learns late whether the file is wanted: Close
  // commits and closes the temporary file; Publish renames it into place. Destroyed between
  // the two, the temporary file is removed and `path` left as it was.
  base::Status Close();
  base::Status Publish();

 private:
  struct TableInserts;  // a created table and its prepared INSERTs
  SqliteWriter();
  base::Status Gone() const;
  std::unique_ptr<format::SqliteFile> file_;  // the file, its transaction and its statements
  std::vector<std::unique_ptr<TableInserts>> tables_;
  struct Strings;  // the `strings` table: each repeating text once, by id
  std::unique_ptr<Strings> strings_;
  base::StatusOr<int64_t> StringId(std::string_view text);
};

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_TABLES_TABLES_H_
