#include "src/format/raw_layout.h"

#include <zlib.h>

#include <algorithm>

namespace rlprof::format {

uint32_t RawCrc32(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (n > 0) {  // zlib takes uInt lengths
    uInt step = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    c = crc32(c, p, step);
    p += step;
    n -= step;
  }
  return static_cast<uint32_t>(c);
}

std::string EncodeRawHeader(const RawHeaderInfo& info, size_t max_host_bytes) {
  size_t host_len = std::min(info.host.size(), max_host_bytes);
  std::string h(kRawMagic, sizeof kRawMagic);
  PutU32(&h, kRawFormatVersion);
  PutU32(&h, static_cast<uint32_t>(kRawHeaderFixedBytes + host_len));
  PutU64(&h, static_cast<uint64_t>(info.rank));
  PutU32(&h, info.pid);
  PutU32(&h, static_cast<uint32_t>(host_len));
  h.append(info.host.data(), host_len);
  PutU32(&h, RawCrc32(0, h.data(), h.size()));
  return h;
}

void EncodeRawChunkHeader(RawChunkType type, uint32_t raw_len, const char* payload,
                          uint32_t payload_len, char* out) {
  uint32_t fields[5] = {kRawChunkMagic, static_cast<uint32_t>(type), raw_len, payload_len, 0};
  uint32_t crc = RawCrc32(0, &fields[1], 12);
  fields[4] = RawCrc32(crc, payload, payload_len);
  std::memcpy(out, fields, sizeof fields);
}

}  // namespace rlprof::format
