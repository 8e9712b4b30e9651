#include "src/analysis/readers/input_buffer.h"
#include "src/base/files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace rlprof::analysis {

InputBuffer::~InputBuffer() { Release(); }

void InputBuffer::Release() {
  if (mapped_bytes_ > 0) {
    ::munmap(data_, mapped_bytes_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  mapped_bytes_ = 0;
}

bool InputBuffer::MapFile(int fd, size_t size) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t file_span = (size + page - 1) / page * page;
  const size_t total = (size + kInputPadding + page - 1) / page * page;
  // Reserve file + padding as anonymous memory, then map the file over its start: the padding
  // is always readable, even when the file ends exactly on a page boundary.
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return false;
  // Read-only populate maps the page cache without copying; write access afterwards makes the
  // few pages that the JSON repair touches private copies.
  void* f = ::mmap(base, file_span, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0);
  if (f == MAP_FAILED || ::mprotect(base, file_span, PROT_READ | PROT_WRITE) != 0) {
    ::munmap(base, total);
    return false;
  }
  Release();
  data_ = static_cast<char*>(base);
  mapped_bytes_ = total;
  capacity_ = total;
  set_size(size);
  return true;
}

InputBuffer::InputBuffer(InputBuffer&& o) noexcept { *this = std::move(o); }

InputBuffer& InputBuffer::operator=(InputBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    data_ = o.data_;
    size_ = o.size_;
    capacity_ = o.capacity_;
    mapped_bytes_ = o.mapped_bytes_;
    o.mapped_bytes_ = 0;
    gzip = o.gzip;
    file_bytes = o.file_bytes;
    diagnostics = std::move(o.diagnostics);
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  return *this;
}

bool InputBuffer::Reserve(size_t n) {
  size_t want = n + kInputPadding;
  if (want <= capacity_) return true;
  if (mapped_bytes_ > 0) return false;  // a mapped file never grows
  char* p = static_cast<char*>(std::realloc(data_, want));
  if (p == nullptr) return false;
  data_ = p;
  capacity_ = want;
  return true;
}

void InputBuffer::set_size(size_t n) {
  size_ = n;
  if (data_ != nullptr) std::memset(data_ + n, ' ', capacity_ - n);
}

namespace {

// Inflates gzip (possibly several members) from `src` into `out`.
void Gunzip(std::string_view src, InputBuffer* out) {
  // ISIZE (the last 4 bytes) is the size mod 2^32 of the last member: a hint, never trusted
  // beyond 64× the compressed size (a truncated file ends in arbitrary bytes).
  size_t hint = src.size() * 4;
  if (src.size() >= 18) {
    uint32_t isize;
    std::memcpy(&isize, src.data() + src.size() - 4, 4);
    if (isize >= src.size() && isize / 64 <= src.size()) hint = isize;
  }
  out->Reserve(hint);
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) {
    out->diagnostics.Add("gzip_data_error");
    return;
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(src.data()));
  size_t remaining = src.size();
  size_t produced = 0;
  bool ended = false;
  while (true) {
    if (out->capacity() - kInputPadding - produced < (1 << 16)) {
      size_t cap = out->capacity() - kInputPadding;
      if (!out->Reserve(cap + cap / 2 + (1 << 20))) {
        out->diagnostics.Add("gzip_out_of_memory");
        break;
      }
    }
    const uInt kMaxIn = 1u << 30;
    zs.avail_in = static_cast<uInt>(std::min<size_t>(remaining, kMaxIn));
    size_t in_before = zs.avail_in;
    size_t room = out->capacity() - kInputPadding - produced;
    zs.next_out = reinterpret_cast<Bytef*>(out->data() + produced);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(room, kMaxIn));
    size_t out_before = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    produced += out_before - zs.avail_out;
    remaining -= in_before - zs.avail_in;
    if (rc == Z_STREAM_END) {
      ended = true;
      // Another member may follow (concatenated gzip files).
      if (remaining >= 2 && static_cast<unsigned char>(zs.next_in[0]) == 0x1f &&
          static_cast<unsigned char>(zs.next_in[1]) == 0x8b) {
        inflateReset(&zs);
        ended = false;
        continue;
      }
      break;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_out == 0) continue;
    if (rc == Z_BUF_ERROR) break;  // no more input: truncated
    out->diagnostics.Add("gzip_data_error");
    ended = true;
    break;
  }
  if (!ended) out->diagnostics.Add("truncated_gzip");
  inflateEnd(&zs);
  out->set_size(produced);
}

bool IsGzip(std::string_view b) {
  return b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0x1f &&
         static_cast<unsigned char>(b[1]) == 0x8b;
}

}  // namespace

base::StatusOr<InputBuffer> ReadInputFile(const std::string& path) {
  // O_NONBLOCK: a FIFO under a trace's name must not block the open (it is refused below).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    std::string why = std::strerror(errno);
    if (errno == ENOENT) return base::NotFound(path + ": " + why);
    return base::IoError(path + ": cannot open: " + why);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return base::InvalidArgument(path + ": " + base::FileKindName(st.st_mode) + ", not a regular file: not read");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  InputBuffer raw;
  size_t expect = static_cast<size_t>(st.st_size);
  // Large plain files are mapped; gzip files (1f 8b) are read and inflated.
  unsigned char magic[2] = {0, 0};
  bool gz = ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (!gz && expect >= (1u << 20) && raw.MapFile(fd, expect)) {
    ::close(fd);
    raw.file_bytes = expect;
    return raw;
  }
  if (!raw.Reserve(expect)) {
    ::close(fd);
    return base::IoError(path + ": out of memory for " + std::to_string(expect) + " bytes");
  }
  size_t got = 0;
  while (true) {
    if (got == raw.capacity() - kInputPadding) {
      // Full: the file may have grown since fstat. Probe before growing the buffer.
      char probe[4096];
      ssize_t m = ::read(fd, probe, sizeof probe);
      if (m <= 0) break;
      if (!raw.Reserve(got + got / 2 + sizeof probe)) break;
      std::memcpy(raw.data() + got, probe, static_cast<size_t>(m));
      got += static_cast<size_t>(m);
      continue;
    }
    ssize_t n = ::read(fd, raw.data() + got, raw.capacity() - kInputPadding - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      return base::IoError(path + ": read failed: " + why);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  raw.set_size(got);
  raw.file_bytes = got;
  if (!IsGzip(raw.view())) return raw;
  InputBuffer out;
  out.gzip = true;
  out.file_bytes = got;
  Gunzip(raw.view(), &out);
  return out;
}

InputBuffer InputFromBytes(std::string_view bytes) {
  InputBuffer raw;
  raw.Reserve(bytes.size());
  if (!bytes.empty()) std::memcpy(raw.data(), bytes.data(), bytes.size());
  raw.set_size(bytes.size());
  raw.file_bytes = bytes.size();
  if (!IsGzip(bytes)) return raw;
  InputBuffer out;
  out.gzip = true;
  out.file_bytes = bytes.size();
  Gunzip(bytes, &out);
  return out;
}

}  // namespace rlprof::analysis
