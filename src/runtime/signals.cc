#include "src/runtime/signals.h"

#include <signal.h>

#include <atomic>
#include <mutex>

#include "src/runtime/session.h"

namespace rlprof::runtime {
namespace {

std::atomic<SessionImpl*> g_session{nullptr};
struct sigaction g_previous[2];
constexpr int kSignals[2] = {SIGTERM, SIGINT};

void Handler(int signo, siginfo_t* info, void* ctx) {
  if (SessionImpl* s = g_session.exchange(nullptr)) {
    s->FlushFromSignal(kSignalFlushTimeoutMs);
    // If the previous disposition lets the program go on, later windows are flushed too.
    SessionImpl* none = nullptr;
    g_session.compare_exchange_strong(none, s);
  }
  const struct sigaction& prev = g_previous[signo == SIGTERM ? 0 : 1];
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction != nullptr) prev.sa_sigaction(signo, info, ctx);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler == SIG_DFL) {
    sigaction(signo, &prev, nullptr);
    raise(signo);  // delivered when this handler returns: the default action
    return;
  }
  prev.sa_handler(signo);
}

}  // namespace

void RegisterSignalFlush(SessionImpl* s) {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < 2; ++i) {
      struct sigaction current {};
      sigaction(kSignals[i], nullptr, &current);
      g_previous[i] = current;
      // An ignored signal stays ignored: nothing will end the process, nothing to flush.
      if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_sigaction = Handler;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&sa.sa_mask);
      sigaction(kSignals[i], &sa, &g_previous[i]);
    }
  });
  g_session.store(s);
}

void UnregisterSignalFlush(SessionImpl* s) {
  SessionImpl* expected = s;
  g_session.compare_exchange_strong(expected, nullptr);
}

}  // namespace rlprof::runtime
