// Fuzz target: torch_npu's text outputs (kernel_details.csv and communication.json of an
// ASCEND_PROFILER_OUTPUT folder), read by analysis::ReadAscendTextBytes: the input is the CSV,
// then a line "\x1e", then the JSON (the same reader as folders). Seeds: test/fuzz/corpus/ascend_text
// (from test/data/ascend_text and the mstt kernel_details.csv sample); dictionary: ascend_text.dict.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/analysis/readers/ascend_text_reader.h"
#include "test/fuzz/trace_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rlprof::analysis::Trace t;
  if (rlprof::analysis::ReadAscendTextBytes({reinterpret_cast<const char*>(data), size}, "ASCEND_PROFILER_OUTPUT",
                                            {}, &t)
          .ok())
    rlprof::fuzz::CheckTrace(t);
  return 0;
}
