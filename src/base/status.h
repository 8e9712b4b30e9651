// Status and StatusOr: how rlprof code outside the hot path reports failure.
//
//   StatusOr<Config> LoadConfig(const std::string& path);
//   auto cfg = LoadConfig(p);
//   if (!cfg.ok()) return cfg.status();      // propagate
//   RLPROF_ASSIGN_OR_RETURN(Config c, LoadConfig(p));
//
// Exceptions never cross a module boundary; programmer errors use RLPROF_CHECK, which
// aborts with a message. Thread-safety: values, no shared state.
#ifndef RLPROF_SRC_BASE_STATUS_H_
#define RLPROF_SRC_BASE_STATUS_H_

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace rlprof::base {

// The error kinds map onto the CLI's exit codes (see docs/cli.md).
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad user input: config, flag, override (exit 2)
  kNotFound,          // file or key missing (exit 2)
  kDataLoss,          // truncated / corrupt input (exit 2 when nothing could be read)
  kFailedPrecondition,
  kIoError,           // cannot write output (exit 4)
  kInternal,          // analysis or programmer error (exit 3)
  kUnimplemented,
  kUsage,             // the command line itself is wrong (exit 1)
  kUnavailable,       // a capability this machine lacks, e.g. device capture (exit 5)
  kCannotExecute,     // a command to run could not be started (exit 127, as a shell's)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>" or "ok".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status UsageError(std::string m) { return {StatusCode::kUsage, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}

[[noreturn]] void CheckFailed(const char* file, int line, const char* expr, const char* msg);

}  // namespace rlprof::base

#define RLPROF_CHECK(cond)                                                        \
  do {                                                                            \
    if (!(cond)) ::rlprof::base::CheckFailed(__FILE__, __LINE__, #cond, nullptr); \
  } while (0)
#define RLPROF_CHECK_MSG(cond, msg)                                           \
  do {                                                                        \
    if (!(cond)) ::rlprof::base::CheckFailed(__FILE__, __LINE__, #cond, msg); \
  } while (0)

namespace rlprof::base {

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& s) : status_(s) { RLPROF_CHECK_MSG(!s.ok(), "StatusOr from ok Status"); }
  StatusOr(Status&& s) : status_(std::move(s)) {
    RLPROF_CHECK_MSG(!status_.ok(), "StatusOr from ok Status");
  }
  StatusOr(const T& v) : value_(v) {}
  StatusOr(T&& v) : value_(std::move(v)) {}

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  const T& value() const& {
    RLPROF_CHECK_MSG(ok(), status_.message().c_str());
    return *value_;
  }
  T& value() & {
    RLPROF_CHECK_MSG(ok(), status_.message().c_str());
    return *value_;
  }
  T&& value() && {
    RLPROF_CHECK_MSG(ok(), status_.message().c_str());
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace rlprof::base

#define RLPROF_CONCAT_INNER_(a, b) a##b
#define RLPROF_CONCAT_(a, b) RLPROF_CONCAT_INNER_(a, b)

#define RLPROF_RETURN_IF_ERROR(expr)            \
  do {                                          \
    ::rlprof::base::Status rlprof_s_ = (expr);  \
    if (!rlprof_s_.ok()) return rlprof_s_;      \
  } while (0)

#define RLPROF_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#define RLPROF_ASSIGN_OR_RETURN(lhs, expr) \
  RLPROF_ASSIGN_OR_RETURN_IMPL_(RLPROF_CONCAT_(rlprof_so_, __LINE__), lhs, expr)

#endif  // RLPROF_SRC_BASE_STATUS_H_
