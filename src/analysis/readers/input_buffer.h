// The bytes of one input file, decompressed (gzip is transparent) and padded so that
// simdjson may read past the end and the JSON repair may append a few closing brackets.
//
//   RLPROF_ASSIGN_OR_RETURN(InputBuffer in, ReadInputFile("rank0.pt.trace.json.gz"));
//   std::string_view text = in.view();   // in.diagnostics: "truncated_gzip", …
//
// Thread-safety: plain value (move-only).
#ifndef RLPROF_SRC_ANALYSIS_READERS_INPUT_BUFFER_H_
#define RLPROF_SRC_ANALYSIS_READERS_INPUT_BUFFER_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "src/analysis/model/trace.h"
#include "src/base/status.h"

namespace rlprof::analysis {

// Bytes kept writable after `size`: simdjson's padding plus room for appended closers.
inline constexpr size_t kInputPadding = 64 + 64;

class InputBuffer {
 public:
  InputBuffer() = default;
  ~InputBuffer();
  InputBuffer(InputBuffer&& o) noexcept;
  InputBuffer& operator=(InputBuffer&& o) noexcept;
  InputBuffer(const InputBuffer&) = delete;
  InputBuffer& operator=(const InputBuffer&) = delete;

  // Makes room for `n` bytes of content (plus padding); keeps the current content.
  bool Reserve(size_t n);
  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  // Sets the content size and blanks the padding after it.
  void set_size(size_t n);
  size_t capacity() const { return capacity_; }  // ≥ size() + kInputPadding
  std::string_view view() const { return {data_, size_}; }

  bool gzip = false;          // the file was gzip-compressed
  size_t file_bytes = 0;      // bytes on disk
  Diagnostics diagnostics;    // truncated_gzip, gzip_data_error

 private:
  friend base::StatusOr<InputBuffer> ReadInputFile(const std::string& path);
  // Maps a plain file copy-on-write (no copy, no page-by-page faults); false if it cannot.
  bool MapFile(int fd, size_t size);
  void Release();

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  size_t mapped_bytes_ = 0;  // > 0: data_ is an mmap of this many bytes (not malloc'd)
};

// Reads `path` (gunzipping when it starts with the gzip magic). NotFound / IoError when the
// file cannot be read; a damaged gzip stream keeps what inflated and notes it.
base::StatusOr<InputBuffer> ReadInputFile(const std::string& path);
// Same, from bytes in memory (tests).
InputBuffer InputFromBytes(std::string_view bytes);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_INPUT_BUFFER_H_
