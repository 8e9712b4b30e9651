// SIGTERM / SIGINT: flush the capture of a session before the previous disposition runs.
// The handler only asks the writer thread to finalise (eventfd write) and waits on a pipe,
// bounded; then it chains: a previous handler is called, SIG_DFL is restored and re-raised,
// SIG_IGN is honoured.
// Thread-safety: Register/Unregister may be called from any thread.
#ifndef RLPROF_SRC_RUNTIME_SIGNALS_H_
#define RLPROF_SRC_RUNTIME_SIGNALS_H_

namespace rlprof::runtime {

class SessionImpl;

// Installs the handlers once per process and points them at `s`.
void RegisterSignalFlush(SessionImpl* s);
// Stops pointing at `s` (the handlers stay installed and just chain).
void UnregisterSignalFlush(SessionImpl* s);

inline constexpr int kSignalFlushTimeoutMs = 2000;

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_SIGNALS_H_
