// Ascend profiler databases and folders → the Trace model (internal to the readers).
//
// Inputs:
//   - `ascend_pytorch_profiler_{rank}.db` (torch_npu, `export_type: db`; verl's npu tool and
//     MindSpeed-RL `profile_export_type: db`) and `msprof_{timestamp}.db` (`msprof --type=db`):
//     SQLite, every name an id into STRING_IDS, times int64 ns. The tables read and how they map
//     to the trace are in docs/formats.md ("Ascend profiler databases").
//   - a torch_npu output folder (`*_ascend_pt/`, or its `ASCEND_PROFILER_OUTPUT/`): its
//     ascend_pytorch_profiler*.db when there is one, else its trace_view.json; the rank from
//     `profiler_info_{rank}.json`.
//
//   if (HasSqliteMagic(path)) RLPROF_RETURN_IF_ERROR(ReadAscendDb(path, opts, &trace));
//   if (auto f = FindAscendFolder(dir)) … read f->file, trace.rank = f->rank if unknown …
//
// Reading is lenient: a truncated or damaged database keeps every row SQLite could still read
// (ascend_db_corrupt), rows without times are skipped (ascend_db_bad_row), missing tables are
// named (ascend_db_missing_table). Only a file that is no SQLite database at all, or one without
// any profiler table, is an error Status. The trace is finalized.
//
// Thread-safety: reentrant (each call opens its own read-only connection).
#ifndef RLPROF_SRC_ANALYSIS_READERS_ASCEND_DB_READER_H_
#define RLPROF_SRC_ANALYSIS_READERS_ASCEND_DB_READER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/analysis/readers/readers.h"
#include "src/analysis/model/trace.h"
#include "src/base/status.h"

namespace rlprof::analysis {

// True when the file / bytes start with SQLite's 16-byte header string.
bool HasSqliteMagic(const std::string& path);
bool HasSqliteMagicBytes(std::string_view bytes);

// Fills `trace` (empty; `source` is set to `path`) from an Ascend profiler database.
base::Status ReadAscendDb(const std::string& path, const ReadOptions& opts, Trace* trace);
// The same for a database image in memory (fuzzing); `name` stands for the path.
base::Status ReadAscendDbBytes(std::string_view bytes, const std::string& name,
                               const ReadOptions& opts, Trace* trace);

struct AscendFolder {
  std::string file;      // the ascend_pytorch_profiler*.db, else trace_view.json, to read
  std::string text_dir;  // else the ASCEND_PROFILER_OUTPUT folder of its text outputs
                         // (kernel_details.csv, communication.json: ascend_text_reader.h)
  int64_t rank = -1;     // from profiler_info_{rank}.json (or the db's name); -1 unknown
};
// A torch_npu output folder (has ASCEND_PROFILER_OUTPUT/, or is one): what to read in it, in
// this order: its database, its trace_view.json (kernels, HCCL operators and host operators with
// their flows: everything the CSV/JSON outputs hold about times, and more), its text outputs.
// nullopt when `dir` is no such folder; an AscendFolder with an empty `file` and `text_dir` when
// it is one but holds none of them.
std::optional<AscendFolder> FindAscendFolder(const std::string& dir);

// `name` (a file name, no folder) is an Ascend profiler database by its name:
// ascend_pytorch_profiler*.db or msprof_*.db.
bool IsAscendDbName(std::string_view name);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_ASCEND_DB_READER_H_
