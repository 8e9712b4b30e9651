// Fuzz target: events.rlp files as they lie on disk (header, chunk framing, checksums,
// resynchronisation after damage, truncation), read by analysis::ReadTraceBytes →
// format::LoadCaptureBytes → TraceFromCapture. Seeds: test/fuzz/corpus/rlp_file (small captures
// written by format::RawWriter, cut from test/golden/analysis/inputs). Mutated chunks mostly fail
// their crc32; rlp_chunks_fuzz reaches the records inside chunks.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "test/fuzz/trace_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rlprof::fuzz::ReadTraceInput({reinterpret_cast<const char*>(data), size}, "events.rlp");
  return 0;
}
