#include "src/format/proto_writer.h"

#include <cstring>

namespace rlprof::format {

void ProtoWriter::AppendVarint(std::string* out, uint64_t v) {
  char b[10];
  size_t n = 0;
  while (v >= 0x80) {
    b[n++] = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  b[n++] = static_cast<char>(v);
  out->append(b, n);
}

void ProtoWriter::Fixed64(uint32_t field, uint64_t v) {
  Tag(field, WireType::kFixed64);
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  buf_.append(b, 8);
}

void ProtoWriter::Double(uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  Fixed64(field, bits);
}

void ProtoWriter::Bytes(uint32_t field, std::string_view bytes) {
  Tag(field, WireType::kLengthDelimited);
  AppendVarint(&buf_, bytes.size());
  buf_.append(bytes.data(), bytes.size());
}

void ProtoWriter::EndNested(size_t token) {
  std::string len;
  AppendVarint(&len, buf_.size() - token);
  buf_.insert(token, len);
}

}  // namespace rlprof::format
