// An output file for exporters: plain or gzip-compressed, written to `<path>.tmp.<pid>` and
// renamed over `path` on Close, so a failed or interrupted export never leaves half a file.
//
//   RLPROF_ASSIGN_OR_RETURN(auto f, OutputFile::Open(path, OutputFile::GzipFor(path)));
//   f->Write(bytes);           // buffered
//   RLPROF_RETURN_IF_ERROR(f->Close());
//   uint64_t n = f->bytes_on_disk();
//
// Thread-safety: one thread at a time.
#ifndef RLPROF_SRC_FORMAT_OUTPUT_FILE_H_
#define RLPROF_SRC_FORMAT_OUTPUT_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/format/export.h"

namespace rlprof::format {

class OutputFile final : public ByteSink {
 public:
  static base::StatusOr<std::unique_ptr<OutputFile>> Open(const std::string& path, bool gzip,
                                                          int gzip_level = 1);
  // True when `path` ends in ".gz".
  static bool GzipFor(const std::string& path);
  ~OutputFile() override;

  // Errors are sticky and reported by Close.
  void Write(std::string_view bytes) override;
  base::Status Close();
  // Discards the temporary file (used when an export fails half-way).
  void Abandon();

  uint64_t bytes_in() const { return bytes_in_; }          // before compression
  uint64_t bytes_on_disk() const { return bytes_on_disk_; }  // valid after Close
  const std::string& path() const { return path_; }

 private:
  OutputFile() = default;
  std::string path_;
  std::string tmp_;
  bool gzip_ = false;
  void* file_ = nullptr;  // FILE* or gzFile
  uint64_t bytes_in_ = 0;
  uint64_t bytes_on_disk_ = 0;
  bool failed_ = false;
};

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_OUTPUT_FILE_H_
