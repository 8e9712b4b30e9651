// rlprof::Session and the process-global default session (include/rlprof/rlprof.hpp).
//
// No function here lets an exception reach the caller (the training job): SessionImpl's
// entry points are guarded themselves, and the functions that build sessions or load a
// config catch everything at this boundary (see docs/reliability.md).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>

#include "rlprof/rlprof.hpp"
#include "src/config/loader.h"
#include "src/runtime/nvtx_host.h"
#include "src/runtime/session.h"

namespace rlprof {
namespace {

const char* GetEnv(const char* key) { return std::getenv(key); }

// The message of the exception being handled (call only inside a catch block).
std::string CurrentExceptionMessage() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

std::mutex g_default_mu;
std::atomic<Session*> g_default{nullptr};

void ShutdownAtExit() { Shutdown(); }

}  // namespace

// ---- StageScope ----

StageScope& StageScope::operator=(StageScope&& o) noexcept {
  if (this != &o) {
    End();
    session_ = o.session_;
    o.session_ = nullptr;
  }
  return *this;
}

void StageScope::End() {
  if (session_ != nullptr) session_->EndStage();
  session_ = nullptr;
}

// ---- Session ----

Session::Session(std::unique_ptr<runtime::SessionImpl> impl) : impl_(std::move(impl)) {}
Session::~Session() { Shutdown(); }

std::unique_ptr<Session> Session::Create(const config::Plan& plan, const SessionOptions& options) {
  try {
    return std::unique_ptr<Session>(new Session(runtime::SessionImpl::Create(plan, options, GetEnv)));
  } catch (...) {  // only an allocation of the session objects themselves can fail here
    std::fprintf(stderr,
                 "rlprof: warning: cannot create a session (%s); profiling is disabled, the "
                 "program continues\n",
                 CurrentExceptionMessage().c_str());
    return nullptr;
  }
}

std::unique_ptr<Session> Session::CreateFromConfig(const std::string& path,
                                                   const std::vector<std::string>& overrides,
                                                   const SessionOptions& options,
                                                   std::string* error) {
  try {
    config::LoadOptions lo;
    if (options.world_size) lo.world_size = *options.world_size;
    auto plan = config::LoadPlan(path, overrides, lo);
    if (!plan.ok()) {
      if (error != nullptr) *error = "rlprof: " + plan.status().message();
      return nullptr;
    }
    return Create(*plan, options);
  } catch (...) {
    if (error != nullptr) *error = "rlprof: cannot load " + path + ": " + CurrentExceptionMessage();
    return nullptr;
  }
}

bool Session::enabled() const { return impl_->enabled(); }
const Identity& Session::identity() const { return impl_->identity(); }
const std::string& Session::run_id() const { return impl_->run_id(); }
std::string Session::run_dir() const {
  try {
    return impl_->run_dir();
  } catch (...) {
    return {};
  }
}
void Session::BeginStep(int64_t step) { impl_->BeginStep(step); }
void Session::EndStep() { impl_->EndStep(); }

StageScope Session::Annotate(const std::string& role, const std::string& stage,
                             std::optional<config::SubStepKind> counts) {
  impl_->BeginStage(role, stage, counts);
  return StageScope(this);
}

void Session::BeginStage(const std::string& role, const std::string& stage,
                         std::optional<config::SubStepKind> counts) {
  impl_->BeginStage(role, stage, counts);
}
void Session::EndStage() { impl_->EndStage(); }
void Session::SubStep(config::SubStepKind kind) { impl_->SubStep(kind); }
bool Session::StartCapture(const std::string& scope) { return impl_->StartCapture(scope); }
void Session::StopCapture() { impl_->StopCapture(); }
bool Session::Flush(double timeout_s) { return impl_->Flush(timeout_s); }
std::vector<std::string> Session::Captures() const { return impl_->Captures(); }
void Session::SetClockOffsetToRank0(int64_t offset_ns) { impl_->SetClockOffsetToRank0(offset_ns); }
void Session::Shutdown() {
  if (impl_) impl_->Shutdown();
}

// ---- Default session ----

namespace {
bool InstallDefault(std::unique_ptr<Session> s, std::string* error) {
  std::lock_guard<std::mutex> lock(g_default_mu);
  if (g_default.load() != nullptr) {
    if (error != nullptr) *error = "rlprof: already initialised";
    return false;
  }
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(ShutdownAtExit); });
  g_default.store(s.release());
  // NVTX ranges of this process's other code (NVTX_INJECTION64_PATH = rlprof's library) land
  // in this session from now on.
  runtime::AttachNvtxInjection();
  return true;
}
}  // namespace

bool Init(const config::Plan& plan, const SessionOptions& options, std::string* error) {
  try {
    if (g_default.load() != nullptr) {
      if (error != nullptr) *error = "rlprof: already initialised";
      return false;
    }
    std::unique_ptr<Session> s = Session::Create(plan, options);
    if (s == nullptr) {
      if (error != nullptr) *error = "rlprof: cannot create a session";
      return false;
    }
    return InstallDefault(std::move(s), error);
  } catch (...) {
    if (error != nullptr) *error = "rlprof: " + CurrentExceptionMessage();
    return false;
  }
}

bool InitFromConfig(const std::string& path, const std::vector<std::string>& overrides,
                    const SessionOptions& options, std::string* error) {
  try {
    if (g_default.load() != nullptr) {
      if (error != nullptr) *error = "rlprof: already initialised";
      return false;
    }
    std::unique_ptr<Session> s = Session::CreateFromConfig(path, overrides, options, error);
    if (s == nullptr) return false;
    return InstallDefault(std::move(s), error);
  } catch (...) {
    if (error != nullptr) *error = "rlprof: " + CurrentExceptionMessage();
    return false;
  }
}

Session* DefaultSession() { return g_default.load(); }

void Shutdown() {
  try {
    std::lock_guard<std::mutex> lock(g_default_mu);
    Session* s = g_default.exchange(nullptr);
    if (s != nullptr) {
      s->Shutdown();
      delete s;
    }
  } catch (...) {  // std::system_error from the mutex: nothing sensible left to do
  }
}

void BeginStep(int64_t step) {
  if (Session* s = g_default.load()) s->BeginStep(step);
}
void EndStep() {
  if (Session* s = g_default.load()) s->EndStep();
}
StageScope Annotate(const std::string& role, const std::string& stage,
                    std::optional<config::SubStepKind> counts) {
  if (Session* s = g_default.load()) return s->Annotate(role, stage, counts);
  return StageScope();
}
void SubStep(config::SubStepKind kind) {
  if (Session* s = g_default.load()) s->SubStep(kind);
}

}  // namespace rlprof
