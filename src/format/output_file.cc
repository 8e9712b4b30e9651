#include "src/format/output_file.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "src/base/strings.h"

namespace rlprof::format {

namespace fs = std::filesystem;

bool OutputFile::GzipFor(const std::string& path) { return base::EndsWith(path, ".gz"); }

base::StatusOr<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path, bool gzip,
                                                             int gzip_level) {
  std::unique_ptr<OutputFile> f(new OutputFile());
  f->path_ = path;
  f->tmp_ = path + ".tmp." + std::to_string(::getpid());
  f->gzip_ = gzip;
  if (gzip) {
    std::string mode = "wb" + std::to_string(std::clamp(gzip_level, 1, 9));
    gzFile g = gzopen(f->tmp_.c_str(), mode.c_str());
    if (g != nullptr) gzbuffer(g, 1 << 20);
    f->file_ = g;
  } else {
    FILE* p = std::fopen(f->tmp_.c_str(), "wb");
    if (p != nullptr) std::setvbuf(p, nullptr, _IOFBF, 1 << 20);
    f->file_ = p;
  }
  if (f->file_ == nullptr) {
    return base::IoError(path + ": cannot write: " + std::strerror(errno));
  }
  return f;
}

OutputFile::~OutputFile() { Abandon(); }

void OutputFile::Write(std::string_view bytes) {
  if (failed_ || file_ == nullptr || bytes.empty()) return;
  bytes_in_ += bytes.size();
  if (gzip_) {
    while (!bytes.empty()) {
      unsigned n = static_cast<unsigned>(std::min<size_t>(bytes.size(), 1u << 30));
      if (gzwrite(static_cast<gzFile>(file_), bytes.data(), n) != static_cast<int>(n)) {
        failed_ = true;
        return;
      }
      bytes.remove_prefix(n);
    }
  } else if (std::fwrite(bytes.data(), 1, bytes.size(), static_cast<FILE*>(file_)) !=
             bytes.size()) {
    failed_ = true;
  }
}

base::Status OutputFile::Close() {
  if (file_ == nullptr) return base::FailedPrecondition(path_ + ": already closed");
  int err = errno;
  bool close_failed = gzip_ ? gzclose(static_cast<gzFile>(file_)) != Z_OK
                            : std::fclose(static_cast<FILE*>(file_)) != 0;
  file_ = nullptr;
  std::error_code ec;
  if (failed_ || close_failed) {
    fs::remove(tmp_, ec);
    return base::IoError(path_ + ": write failed: " + std::strerror(errno ? errno : err));
  }
  fs::rename(tmp_, path_, ec);
  if (ec) {
    fs::remove(tmp_, ec);
    return base::IoError(path_ + ": cannot rename into place: " + ec.message());
  }
  bytes_on_disk_ = fs::file_size(path_, ec);
  return base::Status::Ok();
}

void OutputFile::Abandon() {
  if (file_ == nullptr) return;
  if (gzip_) gzclose(static_cast<gzFile>(file_));
  else std::fclose(static_cast<FILE*>(file_));
  file_ = nullptr;
  std::error_code ec;
  fs::remove(tmp_, ec);
}

}  // namespace rlprof::format
