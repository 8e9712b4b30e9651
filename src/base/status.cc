#include "src/base/status.h"

namespace rlprof::base {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kDataLoss: return "data loss";
    case StatusCode::kFailedPrecondition: return "failed precondition";
    case StatusCode::kIoError: return "i/o error";
    case StatusCode::kInternal: return "internal error";
    case StatusCode::kUnimplemented: return "unimplemented";
    case StatusCode::kUsage: return "usage";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kCannotExecute: return "cannot execute";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

void CheckFailed(const char* file, int line, const char* expr, const char* msg) {
  std::fprintf(stderr, "rlprof: CHECK failed at %s:%d: %s%s%s\n", file, line, expr,
               msg ? " — " : "", msg ? msg : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace rlprof::base
