// Byte-level helpers of the events.rlp layout shared by the writer and the reader (and tests
// that craft damaged files). Integers are little-endian; docs/formats.md has the full layout.
//
//   std::string h = EncodeRawHeader(info, 1024);
//   EncodeRawChunkHeader(RawChunkType::kEvents, raw_len, payload, payload_len, out20);
//
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_FORMAT_RAW_LAYOUT_H_
#define RLPROF_SRC_FORMAT_RAW_LAYOUT_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "src/format/raw.h"

namespace rlprof::format {

// File header: magic[8] | version u32 | header_bytes u32 | rank i64 | pid u32 | host_len u32 |
// host bytes | crc32 u32 (of every preceding header byte). header_bytes counts all of it.
inline constexpr size_t kRawHeaderFixedBytes = 36;  // header without the host bytes
// Track record: id u16 | kind u8 | reserved u8 | pid u32 | os_id u64 | name_len u32 | name.
inline constexpr size_t kRawTrackRecordFixedBytes = 20;

inline void PutU16(std::string* s, uint16_t v) { s->append(reinterpret_cast<const char*>(&v), 2); }
inline void PutU32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }
inline void PutU64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), 8); }
template <typename T>
inline T GetLe(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// crc32 (zlib polynomial) of `n` bytes, continuing from `crc` (start with 0).
uint32_t RawCrc32(uint32_t crc, const void* data, size_t n);

std::string EncodeRawHeader(const RawHeaderInfo& info, size_t max_host_bytes);

// Writes the 20-byte chunk header into `out`: magic | type | raw_len | payload_len | crc32 of
// (type, raw_len, payload_len, payload).
void EncodeRawChunkHeader(RawChunkType type, uint32_t raw_len, const char* payload,
                          uint32_t payload_len, char* out);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_RAW_LAYOUT_H_
