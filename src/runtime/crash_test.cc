// Fault behaviour that needs a separate process: SIGKILL mid-window, SIGTERM, a disk error.
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <thread>

#include <gtest/gtest.h>

#include "src/format/capture.h"
#include "src/format/raw.h"
#include "src/runtime/runtime_test_util.h"
#include "src/runtime/session.h"

namespace rlprof::runtime {
namespace {

using testing_util::FindCaptures;
using testing_util::FreshDir;
using testing_util::MakePlan;
using testing_util::ReadManifest;

const char* NoEnv(const char*) { return nullptr; }

SessionOptions ChildOptions(bool signals) {
  SessionOptions o;
  o.roles = std::vector<std::string>{"actor"};
  o.run_id = "crash";
  o.quiet = true;
  o.install_signal_handlers = signals;
  return o;
}

// Runs `child` in a forked process; it writes one byte to `ready_fd` when the parent may act.
pid_t Spawn(const std::function<void(int ready_fd)>& child, int* ready_read_fd) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    child(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  *ready_read_fd = fds[0];
  return pid;
}

// The manifest's counted events, 0 while it is not there or not yet whole: the writer thread
// makes the first one directly (no rename), so a reader in the same process can see it while
// it is being written (the child of a test must not throw on that and die before it is ready).
uint64_t CountedEventsSoFar(const std::string& dir) {
  auto text = base::ReadFile(dir + "/manifest.json");
  if (!text.ok()) return 0;
  const nlohmann::json m = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object() || !m.contains("counts") || !m["counts"].is_object()) return 0;
  const auto& n = m["counts"].value("events", nlohmann::json());
  return n.is_number_unsigned() ? n.get<uint64_t>() : 0;
}

// Waits for the child to say it is ready. A deadline on progress, not a timing check: a child
// that never gets there (a manifest that never parses, a writer that never flushes) fails the
// test in two minutes and is killed, instead of hanging the suite with a busy child behind it.
bool WaitReady(int fd, pid_t pid) {
  pollfd p{fd, POLLIN, 0};
  char b;
  const bool ok = poll(&p, 1, 120'000) == 1 && read(fd, &b, 1) == 1;
  close(fd);
  if (!ok) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  return ok;
}

void SignalReady(int fd) {
  const char b = 1;
  [[maybe_unused]] ssize_t n = write(fd, &b, 1);
}

TEST(CrashTest, SigkillMidWindowLeavesAReadablePrefix) {
  const std::string save = FreshDir("sigkill");
  int ready = -1;
  const pid_t pid = Spawn(
      [&](int fd) {
        config::Plan plan = MakePlan(save, {1});
        plan.flush_interval_s = 0.02;
        auto s = SessionImpl::Create(plan, ChildOptions(false), NoEnv);
        s->BeginStep(1);
        bool told = false;
        for (uint64_t i = 0;; ++i) {
          RLPROF_RANGE("busy");
          if ((i & 1023) == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            // Once the writer has flushed chunks to the file, tell the parent to kill us.
            if (!told && (i & 16383) == 0) {
              const auto caps = FindCaptures(save);
              std::error_code ec;
              if (!caps.empty() && std::filesystem::file_size(caps[0] + "/events.rlp", ec) > 4096) {
                SignalReady(fd);
                told = true;
              }
            }
          }
        }
      },
      &ready);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitReady(ready, pid));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["complete"], false);  // the open-time manifest
  EXPECT_FALSE(m["window"].contains("close_reason"));
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok()) << cap.status().message();
  EXPECT_TRUE(cap->diagnostics.header_ok);
  EXPECT_GT(cap->diagnostics.complete_chunks, 0u);
  ASSERT_GT(cap->events.size(), 0u);
  for (const auto& e : cap->events) {
    EXPECT_EQ(cap->str(e.name), "busy");
    EXPECT_GE(e.ts_ns, m["window"]["open_ns"].get<int64_t>());
  }
}

// A capture killed with its window open: the manifest says how many events its complete
// chunks held when it was last rewritten (at most a second before), never 0 over real data.
TEST(CrashTest, SigkilledCaptureManifestCountsTheEventsOnDisk) {
  const std::string save = FreshDir("sigkill_counts");
  int ready = -1;
  const pid_t pid = Spawn(
      [&](int fd) {
        config::Plan plan = MakePlan(save, {1});
        plan.flush_interval_s = 0.02;
        auto s = SessionImpl::Create(plan, ChildOptions(false), NoEnv);
        s->BeginStep(1);
        bool told = false;
        for (uint64_t i = 0;; ++i) {
          RLPROF_RANGE("busy");
          if ((i & 1023) == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            if (!told && (i & 16383) == 0) {  // the manifest counts events: ready to be killed
              const auto caps = FindCaptures(save);
              if (!caps.empty() && CountedEventsSoFar(caps[0]) > 0) {
                SignalReady(fd);
                told = true;
              }
            }
          }
        }
      },
      &ready);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitReady(ready, pid));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["complete"], false);
  EXPECT_FALSE(m["window"].contains("close_reason"));
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok()) << cap.status().message();
  const uint64_t counted = m["counts"]["events"].get<uint64_t>();
  EXPECT_GT(counted, 0u);
  EXPECT_LE(counted, cap->events.size());  // chunks written after the last rewrite add to it
  EXPECT_GT(m["files"][0]["bytes"].get<uint64_t>(), 0u);
  // Read back: incomplete, said once, and no spurious "window closes before it opens" (the
  // window runs to the last event the file holds).
  auto loaded = format::LoadCapture(caps[0]);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  format::SanitizeCaptureTimes(&*loaded);
  EXPECT_EQ(loaded->diagnostics.Get("window_inverted"), 0u);
  EXPECT_GE(loaded->manifest.window_close_ns, loaded->manifest.window_open_ns);
  EXPECT_GT(loaded->manifest.window_close_ns, 0);
}

// A signal whose flush the handler could not wait for (a loaded machine): the window the
// program closes after it (its step ends as KeyboardInterrupt unwinds) still closes as the
// signal's "shutdown", whichever of the two the writer sees first.
TEST(CrashTest, ASignalFlushGoesBeforeTheCommandsSubmittedAfterIt) {
  const std::string save = FreshDir("signal_order");
  auto s = SessionImpl::Create(MakePlan(save, {1}), ChildOptions(false), NoEnv);
  s->BeginStep(1);
  for (int i = 0; i < 100; ++i) Mark("before the signal");
  s->FlushFromSignal(0);  // the handler gave up waiting at once
  s->EndStep();           // the program's own close, right after
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["complete"], true);
  EXPECT_EQ(m["window"]["close_reason"], "shutdown");
  EXPECT_EQ(m["counts"]["events"], 100);
}

TEST(CrashTest, SigtermFinalisesTheOpenCaptureThenTerminates) {
  const std::string save = FreshDir("sigterm");
  int ready = -1;
  const pid_t pid = Spawn(
      [&](int fd) {
        auto s = SessionImpl::Create(MakePlan(save, {1}), ChildOptions(true), NoEnv);
        s->BeginStep(1);
        for (int i = 0; i < 1000; ++i) Mark("before term");
        SignalReady(fd);
        for (;;) pause();
      },
      &ready);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitReady(ready, pid));
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);  // the default action still ran
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["complete"], true);
  EXPECT_EQ(m["window"]["close_reason"], "shutdown");
  EXPECT_EQ(m["counts"]["events"], 1000);
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  EXPECT_TRUE(cap->diagnostics.clean()) << cap->diagnostics.ToString();
  EXPECT_EQ(cap->events.size(), 1000u);
}

TEST(CrashTest, DiskErrorMidCaptureMarksTheCaptureIncomplete) {
  const std::string save = FreshDir("diskerror");
  int ready = -1;
  const pid_t pid = Spawn(
      [&](int fd) {
        // Files may not grow past 64 KiB: events.rlp fails mid-capture, the manifest fits.
        signal(SIGXFSZ, SIG_IGN);
        rlimit lim{64 << 10, 64 << 10};
        setrlimit(RLIMIT_FSIZE, &lim);
        auto s = SessionImpl::Create(MakePlan(save, {1}), ChildOptions(false), NoEnv);
        s->BeginStep(1);
        for (int i = 0; i < 200000; ++i) {
          Counter("noise", std::sin(i * 0.7) * 1e6 + i);  // barely compressible
          if ((i & 4095) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        // The writer hits the limit inside the step (a slow one, e.g. under ASan, might only at
        // the step's close, which would close the window with reason step_end).
        for (int i = 0; i < 2000 && s->enabled(); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        s->EndStep();
        s->Shutdown();
        SignalReady(fd);
      },
      &ready);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitReady(ready, pid));
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);  // the program went on
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["complete"], false);
  EXPECT_EQ(m["window"]["close_reason"], "error");  // closed at the error, not at the step's end
  ASSERT_FALSE(m["errors"].empty());
  EXPECT_LT(m["counts"]["events"].get<uint64_t>(), 200001u);
  EXPECT_GT(m["counts"]["dropped_write_error"].get<uint64_t>(), 0u);
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());  // what did reach the disk is readable
}

TEST(CrashTest, ForkedChildOfARecordingProcessRecordsNothingAndExitsCleanly) {
  const std::string save = FreshDir("fork");
  auto s = SessionImpl::Create(MakePlan(save, {1, 2}), ChildOptions(false), NoEnv);
  s->BeginStep(1);
  Mark("parent before fork");
  const pid_t pid = fork();
  if (pid == 0) {
    // Like a DataLoader worker: markers and session calls are harmless no-ops.
    const bool recording = Recording();
    Mark("child");
    { RLPROF_RANGE("child range"); }
    s->EndStep();
    s->BeginStep(2);
    s->EndStep();
    s.reset();  // no join of the parent's writer thread, no deadlock
    _exit(recording ? 3 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  Mark("parent after fork");
  s->EndStep();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  std::vector<std::string> names;
  for (const auto& e : cap->events) names.push_back(cap->str(e.name));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"parent after fork", "parent before fork", "step 1"}));
}

}  // namespace
}  // namespace rlprof::runtime
