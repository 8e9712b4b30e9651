// Fuzz target: legacy torch JSON written without Kineto (a top-level array, pid "CPU functions"), read by
// analysis::ReadTraceBytes. Seeds: test/fuzz/corpus/torch_legacy_json; dictionary: test/fuzz/dict/json.dict.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "test/fuzz/trace_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rlprof::fuzz::ReadTraceInput({reinterpret_cast<const char*>(data), size}, "fuzz.json");
  return 0;
}
