// A minimal protocol-buffer encoder (proto2 wire format) for writing Perfetto traces without
// libprotobuf: varints, zig-zag-free signed ints (two's complement, as int32/int64 fields
// are encoded), fixed64/doubles, length-delimited bytes and nested messages whose lengths
// are written as minimal varints once the message is complete.
//
//   ProtoWriter w;
//   size_t packet = w.BeginNested(1);     // Trace.packet
//   w.Varint(8, 1000);                    // TracePacket.timestamp
//   w.Bytes(2, "name");
//   w.EndNested(packet);
//   sink->Write(w.data()); w.Clear();
//
// Thread-safety: one thread at a time.
#ifndef RLPROF_SRC_FORMAT_PROTO_WRITER_H_
#define RLPROF_SRC_FORMAT_PROTO_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace rlprof::format {

enum class WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class ProtoWriter {
 public:
  static void AppendVarint(std::string* out, uint64_t v);

  void Tag(uint32_t field, WireType type) {
    AppendVarint(&buf_, (uint64_t{field} << 3) | static_cast<uint32_t>(type));
  }
  void Varint(uint32_t field, uint64_t v) {
    Tag(field, WireType::kVarint);
    AppendVarint(&buf_, v);
  }
  // int32 / int64 fields: negative values take ten bytes, as protoc writes them.
  void Int(uint32_t field, int64_t v) { Varint(field, static_cast<uint64_t>(v)); }
  void Bool(uint32_t field, bool v) { Varint(field, v ? 1 : 0); }
  void Fixed64(uint32_t field, uint64_t v);
  void Double(uint32_t field, double v);
  void Bytes(uint32_t field, std::string_view bytes);
  // Starts a nested message; pass the returned token to EndNested.
  size_t BeginNested(uint32_t field) {
    Tag(field, WireType::kLengthDelimited);
    return buf_.size();
  }
  void EndNested(size_t token);

  const std::string& data() const { return buf_; }
  size_t size() const { return buf_.size(); }
  void Clear() { buf_.clear(); }

 private:
  std::string buf_;
};

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_PROTO_WRITER_H_
