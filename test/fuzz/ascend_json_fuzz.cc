// Fuzz target: Ascend trace_view.json (a top-level array, string microsecond timestamps), read by
// analysis::ReadTraceBytes. Seeds: test/fuzz/corpus/ascend_json; dictionary: test/fuzz/dict/json.dict.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "test/fuzz/trace_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rlprof::fuzz::ReadTraceInput({reinterpret_cast<const char*>(data), size}, "trace_view.json");
  return 0;
}
