// Fuzz target: the records inside events.rlp chunks (strings, tracks, events), which a mutated
// file rarely reaches because every chunk is zstd-compressed and crc32-checked. The input is a
// list of uncompressed chunks
//
//   type u8 | length u16 (little-endian) | length bytes of payload      … repeated
//
// (type 1 strings, 2 tracks, 3 events, any other value an unknown chunk type; a length past
// the end takes what is left). The target seals them as RawWriter does — a valid file header,
// each payload zstd-compressed behind a correct chunk header — and reads the file with
// analysis::ReadTraceBytes. Seeds: test/fuzz/corpus/rlp_chunks (test/fuzz/make_seeds.py
// unpacks small captures into this form).
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/format/raw.h"
#include "src/format/raw_layout.h"
#include "test/fuzz/trace_fuzz_util.h"

namespace {

using namespace rlprof::format;

std::string Seal(std::string_view in) {
  std::string file = EncodeRawHeader({.rank = 0, .pid = 4242, .host = "fuzz"}, 64);
  std::string packed;
  for (size_t p = 0; p < in.size();) {
    auto type = static_cast<uint8_t>(in[p]);
    size_t len = 0;
    if (in.size() - p >= 3) len = static_cast<uint8_t>(in[p + 1]) | static_cast<uint8_t>(in[p + 2]) << 8;
    p = std::min(in.size(), p + 3);
    len = std::min(len, in.size() - p);
    std::string_view payload = in.substr(p, len);
    p += len;
    packed.resize(ZSTD_compressBound(payload.size()));
    size_t n = ZSTD_compress(packed.data(), packed.size(), payload.data(), payload.size(), 1);
    if (ZSTD_isError(n)) return file;
    char header[kRawChunkHeaderBytes];
    EncodeRawChunkHeader(static_cast<RawChunkType>(type), static_cast<uint32_t>(payload.size()),
                         packed.data(), static_cast<uint32_t>(n), header);
    file.append(header, sizeof header);
    file.append(packed.data(), n);
  }
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string file = Seal({reinterpret_cast<const char*>(data), size});
  rlprof::fuzz::ReadTraceInput(file, "events.rlp");
  return 0;
}
