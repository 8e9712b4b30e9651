// Fuzz target: Ascend profiler databases (ascend_pytorch_profiler_*.db, msprof_*.db: SQLite),
// read by analysis::ReadTraceBytes (SQLite's in-memory deserialize, then the same reader as
// files). Seeds: test/fuzz/corpus/ascend_db (fixtures of test/data/ascend_db); dictionary:
// test/fuzz/dict/ascend_db.dict (SQLite's header, the profiler's table and column names).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "test/fuzz/trace_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rlprof::fuzz::ReadTraceInput({reinterpret_cast<const char*>(data), size}, "ascend_pytorch_profiler_0.db");
  return 0;
}
