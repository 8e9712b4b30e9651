// "Never crash, never silent": faults of the output path and of the runtime's own resources
// disable profiling with exactly one warning and the program goes on; what a full disk cost is
// counted in the final manifest. Scenarios that depend on permissions run in a child that is
// not root (src/base/unprivileged_test_util.h), because CI runs as root.
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "rlprof/rlprof.h"
#include "rlprof/rlprof.hpp"
#include "src/base/unprivileged_test_util.h"
#include "src/format/raw.h"
#include "src/runtime/runtime_test_util.h"
#include "src/runtime/session.h"

namespace rlprof::runtime {
namespace {

using base::testing_util::AllowAgain;
using base::testing_util::ChildResult;
using base::testing_util::CountLines;
using base::testing_util::GiveToUnprivileged;
using base::testing_util::MakeForbiddenDir;
using base::testing_util::RunUnprivileged;
using testing_util::FindCaptures;
using testing_util::FreshDir;
using testing_util::MakePlan;
using testing_util::ReadManifest;

constexpr char kWarning[] = "rlprof: warning";

const char* NoEnv(const char*) { return nullptr; }

SessionOptions Actor(const std::string& run_id) {
  SessionOptions o;
  o.roles = std::vector<std::string>{"actor"};
  o.run_id = run_id;
  o.quiet = true;
  o.install_signal_handlers = false;
  return o;
}

// A short training loop over steps 1..3 through the public C++ API; 0 when it ran to the end
// with profiling off and nothing captured.
// The config of MakePlan(save, steps) as text (the public API loads configs, not plans).
std::string ActorConfig(const std::string& save, const std::string& steps) {
  return "rlprof:\n  steps: " + steps + "\n  save_path: " + save +
         "\n  roles:\n    actor: {all_ranks: true}\n";
}

int TrainUnprofiled(Session& s) {
  for (int64_t step = 1; step <= 3; ++step) {
    s.BeginStep(step);
    {
      auto stage = s.Annotate("actor", "actor_update");
      RLPROF_RANGE("forward");
      Mark("mark");
    }
    s.EndStep();
  }
  if (s.enabled()) return 10;
  if (!s.Captures().empty()) return 11;
  s.Shutdown();
  s.Shutdown();  // twice is harmless
  return 0;
}

TEST(FaultTest, SavePathUnderADirectoryTheUserCannotEnterWarnsOnceAndTheProgramGoesOn) {
  const std::string locked = MakeForbiddenDir(FreshDir("locked") + "/locked");
  const ChildResult r = RunUnprivileged([&] {
    // Was: std::filesystem::is_directory threw filesystem_error (EACCES) and the job aborted.
    auto s = Session::CreateFromText(ActorConfig(locked + "/sub/out", "[1, 2]"), {}, Actor("eacces"));
    return s == nullptr ? 12 : TrainUnprofiled(*s);
  });
  AllowAgain(locked);
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(CountLines(r.err, kWarning), 1u) << r.err;
  EXPECT_NE(r.err.find("cannot write captures under " + locked + "/sub/out/eacces"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("profiling is disabled, the program continues"), std::string::npos);
  EXPECT_TRUE(FindCaptures(locked).empty());
}

TEST(FaultTest, CApiWithAnUnusableSavePathInitialisesDisabledWithOneWarning) {
  const std::string dir = FreshDir("capi");
  const std::string locked = MakeForbiddenDir(dir + "/locked");
  const std::string config = dir + "/profile.yaml";
  std::ofstream(config) << "rlprof:\n  steps: [1]\n  save_path: " << locked
                        << "/out\n  roles:\n    actor: {all_ranks: true}\n";
  chmod(config.c_str(), 0644);
  const ChildResult r = RunUnprivileged([&] {
    rlprof_options o;
    rlprof_options_init(&o);
    o.roles = "actor";
    o.quiet = 1;
    o.install_signal_handlers = 0;
    if (rlprof_init_from_config(config.c_str(), nullptr, 0, &o) != RLPROF_OK) return 20;
    if (rlprof_enabled() != 0) return 21;
    if (rlprof_step_begin(1) != RLPROF_OK) return 22;
    rlprof_mark("m");
    if (rlprof_step_end() != RLPROF_OK) return 23;
    if (rlprof_shutdown() != RLPROF_OK) return 24;
    if (rlprof_shutdown() != RLPROF_ERROR_STATE) return 25;  // twice: a state error, no crash
    return 0;
  });
  AllowAgain(locked);
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(CountLines(r.err, kWarning), 1u) << r.err;
}

TEST(FaultTest, WriterThreadThatCannotStartDisablesProfilingWithOneWarning) {
  const std::string save = FreshDir("nothread");
  GiveToUnprivileged(save);
  const ChildResult r = RunUnprivileged([&] {
    // No new thread for this user (RLIMIT_NPROC is not enforced for root): std::thread throws
    // std::system_error, which used to escape Session::Create.
    rlimit one{1, 1};
    if (setrlimit(RLIMIT_NPROC, &one) != 0) return 30;
    auto s = Session::CreateFromText(ActorConfig(save, "[1]"), {}, Actor("nothread"));
    return s == nullptr ? 31 : TrainUnprofiled(*s);
  });
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(CountLines(r.err, kWarning), 1u) << r.err;
  EXPECT_NE(r.err.find("cannot start the writer thread"), std::string::npos) << r.err;
  EXPECT_TRUE(FindCaptures(save).empty());
}

TEST(FaultTest, CaptureDirectoryThatIsAFileDisablesProfilingWithOneWarning) {
  const std::string save = FreshDir("isfile");
  base::MakeDirs(save + "/run");
  std::ofstream(save + "/run/step1") << "in the way";  // where step1/e2e/… should go
  ::testing::internal::CaptureStderr();
  {
    auto s = SessionImpl::Create(MakePlan(save, {1, 2}), Actor("run"), NoEnv);
    EXPECT_TRUE(s->enabled());  // the run directory itself is fine
    // No Flush between the steps: step 2's window is usually asked for before the writer has
    // found that step 1's directory cannot be made; it must not be created after the warning.
    for (int64_t step = 1; step <= 2; ++step) {
      s->BeginStep(step);
      Mark("m");
      s->EndStep();
    }
    s->Flush(10);
    EXPECT_FALSE(s->enabled());
    s->Shutdown();
    s->Shutdown();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountLines(err, kWarning), 1u) << err;
  EXPECT_NE(err.find(save + "/run/step1"), std::string::npos) << err;
  EXPECT_TRUE(FindCaptures(save).empty());  // step 2 was not attempted either
}

// A directory that became read-only by the time the window closes (EACCES at manifest write
// time): the final manifest still replaces the open-time one, in place.
TEST(FaultTest, FinalManifestIsWrittenInPlaceWhenNoNewFileCanBeCreated) {
  const std::string save = FreshDir("romanifest");
  GiveToUnprivileged(save);
  const ChildResult r = RunUnprivileged([&] {
    auto s = SessionImpl::Create(MakePlan(save, {1}), Actor("ro"), NoEnv);
    s->BeginStep(1);
    for (int i = 0; i < 500; ++i) Mark("m");
    s->Flush(10);
    const auto caps = FindCaptures(save);
    if (caps.size() != 1) return 40;
    if (chmod(caps[0].c_str(), 0555) != 0) return 41;  // no new file in the capture directory
    s->EndStep();
    s->Shutdown();
    chmod(caps[0].c_str(), 0755);
    return 0;
  });
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(CountLines(r.err, kWarning), 0u) << r.err;  // nothing was lost
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["complete"], true);
  EXPECT_EQ(m["window"]["close_reason"], "step_end");
  EXPECT_EQ(m["counts"]["events"], 501);  // 500 marks + the step
  EXPECT_EQ(m["counts"]["dropped_write_error"], 0);
}

// Checks what a full disk leaves: one warning for the whole process, no capture after it, and
// a final manifest whose counts say what was lost and agree with the file.
void ExpectFullDiskOutcome(const std::string& save, const ChildResult& r) {
  EXPECT_EQ(r.exit_code(), 0) << r.err;  // the program went on
  EXPECT_EQ(CountLines(r.err, kWarning), 1u) << r.err;
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);  // step 2 was not captured: profiling was off by then
  nlohmann::json m = ReadManifest(caps[0]);
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["complete"], false);
  EXPECT_EQ(m["window"]["close_reason"], "error");
  ASSERT_FALSE(m["errors"].empty());
  const uint64_t on_disk = m["counts"]["events"].get<uint64_t>();
  const uint64_t lost = m["counts"]["dropped_write_error"].get<uint64_t>();
  EXPECT_GT(lost, 0u);
  EXPECT_EQ(m["counts"]["dropped_events"].get<uint64_t>(),
            lost + m["counts"]["dropped_buffer_full"].get<uint64_t>() +
                m["counts"]["dropped_budget"].get<uint64_t>());
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->events.size(), on_disk);  // the manifest counts exactly what the file holds
}

// Records barely compressible counters in step 1 (more than the limits below let through), then
// step 2.
void TwoStepsOfNoise(const std::string& save, const std::function<void()>& after_open) {
  config::Plan plan = MakePlan(save, {1, 2});
  plan.flush_interval_s = 0.01;
  auto s = SessionImpl::Create(plan, Actor("full"), NoEnv);
  s->BeginStep(1);
  s->Flush(10);
  after_open();
  for (int i = 0; i < 200000; ++i) {
    Counter("noise", std::sin(i * 0.7) * 1e6 + i);
    if ((i & 4095) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Let the writer reach the limit inside step 1 (it flushes every 10 ms), so that step 2 begins
  // after profiling was turned off: otherwise a slow writer may fail only at step 1's close,
  // when step 2's window is already open.
  for (int i = 0; i < 2000 && s->enabled(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  s->EndStep();
  s->BeginStep(2);
  Mark("after the disk filled up");
  s->EndStep();
  s->Shutdown();
}

// Without root: files may not grow past 64 KiB (EFBIG, as a full disk gives ENOSPC) and the
// capture directory takes no new file (so the final manifest cannot be written atomically).
TEST(FaultTest, FullDiskWarnsOnceAndTheFinalManifestCountsTheLostEvents) {
  const std::string save = FreshDir("fulldisk");
  GiveToUnprivileged(save);
  std::string capture_dir;
  const ChildResult r = RunUnprivileged([&] {
    signal(SIGXFSZ, SIG_IGN);
    rlimit lim{64 << 10, 64 << 10};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) return 50;
    TwoStepsOfNoise(save, [&] {
      const auto caps = FindCaptures(save);
      if (caps.size() == 1) chmod(caps[0].c_str(), 0555);
    });
    for (const auto& d : FindCaptures(save)) chmod(d.c_str(), 0755);
    return 0;
  });
  ExpectFullDiskOutcome(save, r);
}

// A real full disk (ENOSPC from a 256 KiB tmpfs), where the system lets this test mount one
// (root with CAP_SYS_ADMIN, in a private mount namespace of the child).
TEST(FaultTest, FullTmpfsWarnsOnceAndTheFinalManifestCountsTheLostEvents) {
  const std::string save = FreshDir("tmpfs");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", save.c_str(), "tmpfs", 0, "size=256k") != 0)
      _exit(77);
    TwoStepsOfNoise(save, [] {});
    // The mount disappears with this process: copy the result out for the parent.
    const auto caps = FindCaptures(save);
    auto text = caps.size() == 1 ? base::ReadFile(caps[0] + "/manifest.json")
                                 : base::StatusOr<std::string>(base::NotFound("captures"));
    const std::string manifest = text.ok() ? *text : "";
    std::fprintf(stderr, "\nMANIFEST %s\n", manifest.c_str());
    std::fflush(nullptr);
    _exit(0);
  }
  close(fds[1]);
  ChildResult r;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) r.err.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  waitpid(pid, &r.status, 0);
  if (r.exit_code() == 77) GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN)";
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const size_t at = r.err.find("\nMANIFEST ");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(CountLines(r.err.substr(0, at), kWarning), 1u) << r.err;
  nlohmann::json m = nlohmann::json::parse(r.err.substr(at + 10), nullptr, false);
  ASSERT_TRUE(m.is_object()) << r.err;
  EXPECT_EQ(m["complete"], false);
  EXPECT_EQ(m["window"]["close_reason"], "error");
  EXPECT_GT(m["counts"]["dropped_write_error"].get<uint64_t>(), 0u) << m.dump(2);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // their allocators abort
// An exception inside an entry point (here std::bad_alloc: the address space is capped just
// above what the process uses, and a stage name needs 64 MiB to intern) is caught there: one
// warning, profiling off, the program goes on.
TEST(FaultTest, AnExceptionInsideAnEntryPointDisablesProfilingWithOneWarning) {
  const std::string save = FreshDir("badalloc");
  GiveToUnprivileged(save);
  const ChildResult r = RunUnprivileged([&] {
    auto s = SessionImpl::Create(MakePlan(save, {1, 2}), Actor("oom"), NoEnv);
    if (!s->enabled()) return 60;
    const std::string huge(64u << 20, 'x');
    s->BeginStep(1);
    Mark("before");
    long pages = 0;
    if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    if (pages == 0) return 61;
    const rlim_t cap = static_cast<rlim_t>(pages) * sysconf(_SC_PAGESIZE) + (16u << 20);
    rlimit as{cap, cap};
    if (setrlimit(RLIMIT_AS, &as) != 0) return 62;
    s->BeginStage("actor", huge, std::nullopt);  // std::bad_alloc inside
    s->EndStage();
    s->EndStep();
    if (s->enabled()) return 63;
    rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_AS, &unlimited);
    s->BeginStep(2);
    s->EndStep();
    s->Shutdown();
    return 0;
  });
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(CountLines(r.err, kWarning), 1u) << r.err;
  EXPECT_NE(r.err.find("internal error in BeginStage"), std::string::npos) << r.err;
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);  // step 1's, closed with reason error; none for step 2
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["window"]["close_reason"], "error");
}
#endif

// Names from the C API need not be UTF-8; the manifest (nlohmann::json) used to throw
// type_error 316 on the writer thread, which std::terminate()d the job.
TEST(FaultTest, StageAndRoleNamesThatAreNotUtf8StillProduceACapture) {
  const std::string save = FreshDir("utf8");
  config::Plan plan = MakePlan(save, {1}, config::CaptureMode::kDiscrete);
  SessionOptions o = Actor("utf8");
  auto s = SessionImpl::Create(plan, o, NoEnv);
  s->BeginStep(1);
  s->BeginStage("actor", "update\xff\xfe", std::nullopt);
  Mark("m");
  s->EndStage();
  s->EndStep();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["complete"], true);
  EXPECT_EQ(m["stage"], "update\xEF\xBF\xBD\xEF\xBF\xBD");  // U+FFFD for each bad byte
}

}  // namespace
}  // namespace rlprof::runtime
