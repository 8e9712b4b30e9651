// `rlprof serve SAVE_PATH [--host ADDR] [--port N] [--token TEXT] [-j N] [analysis options]`
// Serves every run under a save path to a browser: the list of runs (newest first, with
// their plan and size), each run's HTML report (analysed on first view and cached in the
// run's .rlprof-serve folder, recomputed when a capture is newer), a comparison of any two
// runs, and each capture as a .pftrace download for the Perfetto UI.
// Read-only (GET and HEAD only). It binds to 127.0.0.1 by default; bound to any other address
// it requires a token (--token, or a random one it prints) on every request. Requests name
// runs by their listed id and captures by their index (src/report/run_index.h): no path
// from a request is ever opened, so nothing outside SAVE_PATH is reachable.
// Slow clients cannot hold it (src/cli/guarded_http_server.h): a request's line and headers
// must all arrive within kHeaderDeadline, at most kMaxConnections connections are held at once
// (each on a thread of its own; more are answered 503 and closed at once), and with a token a
// request line without the right one is answered 403 before any header is read.
// Stops on SIGINT / SIGTERM. Exit codes: 1 usage, 2 SAVE_PATH not a folder, 4 cannot bind.
#include <memory>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "src/cli/analysis_setup.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"
#include "src/cli/guarded_http_server.h"
#include "src/format/export.h"
#include "src/report/html_report.h"
#include "src/report/run_index.h"
#include "src/base/files.h"

namespace rlprof::cli {
namespace {
namespace fs = std::filesystem;

struct ServeArgs {
  std::string save_path, host = "127.0.0.1", token;
  int port = 8470;
  size_t jobs = 2;
  AnalysisArgs analysis;
};

// A connection must have sent all of a request's line and headers within this time of the
// server starting to wait for the request (the connection accepted, or the previous response
// sent on it); past it the connection is closed, however slowly it trickles bytes. Tests
// shorten it with RLPROF_SERVE_HEADER_DEADLINE_S (seconds; read by serve only).
constexpr std::chrono::seconds kHeaderDeadline{10};
// Connections held at once, each on a thread of its own (idle, sending headers, or being
// answered); one more is answered 503 and closed at once instead of waiting for a free one.
constexpr size_t kMaxConnections = 64;
// The request line, headers and any body of one request (serve takes GET and HEAD only).
constexpr size_t kMaxRequestBytes = 64 * 1024;

std::chrono::milliseconds HeaderDeadline() {
  if (const char* env = std::getenv("RLPROF_SERVE_HEADER_DEADLINE_S"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const double s = std::strtod(env, &end);
    if (end != env && *end == '\0' && s > 0 && s <= 3600) return std::chrono::milliseconds(int64_t(s * 1000 + 0.5));
  }
  return kHeaderDeadline;
}

bool IsLoopbackName(const std::string& h) { return h == "127.0.0.1" || h == "localhost" || h == "::1"; }

// A Host header that names this loopback server ("localhost:8470", "127.0.0.1:8470",
// "[::1]:8470"): a page on another name that resolves to 127.0.0.1 (DNS rebinding) is refused.
bool HostNamesThisServer(const std::string& host, int port) {
  std::string name = host, p;
  if (!name.empty() && name[0] == '[') {
    const size_t close = name.find(']');
    if (close == std::string::npos) return false;
    p = name.substr(close + 1);
    name = name.substr(1, close - 1);
  } else if (const size_t colon = name.rfind(':'); colon != std::string::npos) {
    p = name.substr(colon);
    name = name.substr(0, colon);
  }
  if (!IsLoopbackName(name)) return false;
  if (p.empty()) return port == 80;
  return p == ":" + std::to_string(port);
}

std::string RandomToken() {
  std::random_device rd;
  std::string t;
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) t += hex[rd() & 15];
  return t;
}

// What the server holds: the save path, the analysis settings, the cache of built pages.
class Site {
 public:
  Site(const ServeArgs& a, analysis::AnalysisOptions opts, analysis::Classifier cls)
      : args_(a), opts_(std::move(opts)), cls_(std::move(cls)) {}

  std::string query() const { return args_.token.empty() ? "" : "?token=" + report::UrlEncode(args_.token); }

  // The report of `run` (with `baseline` when not null), from the cache when it is newer than
  // every capture of both runs.
  base::StatusOr<std::string> Report(const report::RunInfo& run, const report::RunInfo* baseline) {
    const std::string name = baseline ? "compare-" + report::UrlEncode(baseline->id) + ".html" : "report.html";
    const int64_t newest = std::max(run.newest_ns, baseline ? baseline->newest_ns : 0);
    std::lock_guard<std::mutex> lock(mu_);
    if (auto hit = Cached(run, name, newest)) return *hit;
    std::ostringstream out, err;
    Io io{out, err};
    // Inputs that cannot be read are listed in the page's diagnostics; only "no trace at all"
    // (or a search that failed) is an error page.
    report::RunReport r;
    RLPROF_RETURN_IF_ERROR(AnalyseForReport({.path = run.path,
                                             .baseline = baseline ? baseline->path : "",
                                             .title = run.id,
                                             .baseline_label = baseline ? baseline->id : "",
                                             .current_label = run.id,
                                             .classifier = cls_,
                                             .options = opts_,
                                             .jobs = args_.jobs,
                                             .confine = true},
                                            "serve", io, &r));
    std::string page = report::RenderHtmlReport(r.data);
    Store(run, name, page);
    return page;
  }

  // Capture `i` of `run` as Perfetto protobuf bytes.
  base::StatusOr<std::string> Pftrace(const report::RunInfo& run, size_t i) {
    const std::string name = "capture-" + std::to_string(i) + ".pftrace";
    std::lock_guard<std::mutex> lock(mu_);
    if (auto hit = Cached(run, name, run.newest_ns)) return *hit;
    RLPROF_ASSIGN_OR_RETURN(format::Capture c, format::LoadCapture(run.captures[i]));
    // Written into a private folder of its own (mkdtemp: unpredictable, 0700), never to a
    // predictable name in /tmp that another local user could have linked to a file of ours.
    std::error_code ec;
    std::string dir = (fs::temp_directory_path(ec) / "rlprof-serve-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr)
      return base::IoError("cannot make a private temporary folder: " + std::string(std::strerror(errno)));
    const fs::path tmp = fs::path(dir) / name;
    auto st = format::ExportCaptures(std::span<const format::Capture>(&c, 1), format::ExportFormat::kPftrace, tmp.string());
    auto bytes = st.ok() ? base::ReadFile(tmp.string()) : base::StatusOr<std::string>(st.status());
    fs::remove_all(dir, ec);
    if (!bytes.ok()) return bytes.status();
    Store(run, name, *bytes);
    return *bytes;
  }

 private:
  // The run's .rlprof-serve folder, when it is a real folder of this user's (made 0700 when
  // absent). A save path others can write to may hold a .rlprof-serve that is a link, or a
  // folder of theirs with links in it (to a file of ours to overwrite, or one to read back
  // through the server): then nothing is cached on disk for that run, only in memory.
  std::optional<fs::path> CacheDir(const report::RunInfo& run) {
    const fs::path dir = fs::path(run.path) / ".rlprof-serve";
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return std::nullopt;
    struct stat s{};
    if (::lstat(dir.c_str(), &s) != 0 || !S_ISDIR(s.st_mode) || s.st_uid != ::geteuid()) return std::nullopt;
    return dir;
  }

  std::optional<std::string> Cached(const report::RunInfo& run, const std::string& name, int64_t newest) {
    const std::string key = run.path + "/" + name;
    if (auto it = memory_.find(key); it != memory_.end() && it->second.first >= newest) return it->second.second;
    const auto dir = CacheDir(run);
    if (!dir) return std::nullopt;
    const fs::path f = *dir / name;
    struct stat s{};
    // A regular file of this user's, not a link (and not a FIFO: serve never blocks on one).
    if (::lstat(f.c_str(), &s) != 0 || !S_ISREG(s.st_mode) || s.st_uid != ::geteuid()) return std::nullopt;
    const int64_t mtime = int64_t(s.st_mtim.tv_sec) * 1000000000 + s.st_mtim.tv_nsec;
    if (mtime < newest) return std::nullopt;
    auto text = base::ReadFile(f.string());
    if (!text.ok()) return std::nullopt;
    return std::move(*text);
  }

  // Into the run's .rlprof-serve folder through a fresh temporary file (mkstemp: O_EXCL, never
  // a file someone placed there) renamed over the name; in memory when that cannot be written
  // (a read-only save path, a folder not this user's) — the run is served all the same.
  void Store(const report::RunInfo& run, const std::string& name, const std::string& bytes) {
    bool written = false;
    if (const auto dir = CacheDir(run)) {
      std::string tmp = (*dir / (name + ".XXXXXX")).string();
      const int fd = ::mkstemp(tmp.data());
      if (fd >= 0) {
        size_t done = 0;
        while (done < bytes.size()) {
          const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) break;
          done += static_cast<size_t>(n);
        }
        const bool ok = ::close(fd) == 0 && done == bytes.size();
        std::error_code ec;
        if (ok) {
          fs::rename(tmp, *dir / name, ec);
          written = !ec;
        }
        if (!written) fs::remove(tmp, ec);
      }
    }
    if (!written) {
      const auto now = std::chrono::system_clock::now().time_since_epoch();
      memory_[run.path + "/" + name] = {std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), bytes};
    }
  }

  ServeArgs args_;
  analysis::AnalysisOptions opts_;
  analysis::Classifier cls_;
  std::mutex mu_;
  std::map<std::string, std::pair<int64_t, std::string>> memory_;
};

void Html(httplib::Response& res, const std::string& page, bool report = false) {
  // Nothing on a page may reach the network; the report's own scripts are inline.
  res.set_header("Content-Security-Policy", report ? "default-src 'none'; script-src 'unsafe-inline'; "
                                                     "style-src 'unsafe-inline'; img-src data:"
                                                   : "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'");
  res.set_content(page, "text/html; charset=utf-8");
}

void Fail(httplib::Response& res, int status, const std::string& why) {
  res.status = status;
  Html(res, report::ErrorPage(status, why));
}

void CommonHeaders(httplib::Response& res) {
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", "no-store");
}

constexpr const char* kNeedToken = "this server needs the token it printed when it started (?token=…)";

// The pages: the run list, a run's report and captures, a comparison, a capture's trace.
void AddRoutes(GuardedServer& svr, Site& site, const std::string& root) {
  svr.Get("/", [&site, root](const httplib::Request&, httplib::Response& res) {
    Html(res, report::RunListPage(report::ListRuns(root), site.query()));
  });
  svr.Get(R"(/runs/([^/]+)/report\.html)", [&site, root](const httplib::Request& req, httplib::Response& res) {
    const auto run = report::LoadRun(root, req.matches[1].str());
    if (!run) return Fail(res, 404, "no such run");
    auto page = site.Report(*run, nullptr);
    if (!page.ok()) return Fail(res, 500, page.status().message());
    Html(res, *page, /*report=*/true);
  });
  svr.Get("/compare", [&site, root](const httplib::Request& req, httplib::Response& res) {
    const auto base = report::LoadRun(root, req.get_param_value("baseline"));
    const auto run = report::LoadRun(root, req.get_param_value("new"));
    if (!base || !run) return Fail(res, 404, "compare needs ?baseline=RUN&new=RUN of listed runs");
    auto page = site.Report(*run, &*base);
    if (!page.ok()) return Fail(res, 500, page.status().message());
    Html(res, *page, /*report=*/true);
  });
  svr.Get(R"(/runs/([^/]+)/captures)", [&site, root](const httplib::Request& req, httplib::Response& res) {
    const auto run = report::LoadRun(root, req.matches[1].str());
    if (!run) return Fail(res, 404, "no such run");
    Html(res, report::CaptureListPage(*run, site.query()));
  });
  svr.Get(R"(/runs/([^/]+)/captures/([0-9]{1,9})\.pftrace)", [&site, root](const httplib::Request& req, httplib::Response& res) {
    const auto run = report::LoadRun(root, req.matches[1].str());
    const size_t i = std::stoul(req.matches[2].str());
    if (!run || i >= run->captures.size()) return Fail(res, 404, "no such capture");
    auto bytes = site.Pftrace(*run, i);
    if (!bytes.ok()) return Fail(res, 500, bytes.status().message());
    std::string file;
    for (char c : run->id + "-" + std::to_string(i)) file += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
    res.set_header("Content-Disposition", "attachment; filename=\"" + file + ".pftrace\"");
    res.set_content(*bytes, "application/octet-stream");
  });
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) Html(res, report::ErrorPage(res.status, res.status == 404 ? "not found" : "error"));
  });
}

base::Status Run(const ServeArgs& in, Io& io) {
  ServeArgs a = in;
  analysis::AnalysisOptions opts;
  analysis::Classifier cls;
  RLPROF_RETURN_IF_ERROR(PrepareAnalysis(a.analysis, &opts, &cls));
  opts.kernel_rows = false;  // reports never show per-kernel rows: memory grows with steps × stages
  std::error_code ec;
  if (!fs::is_directory(a.save_path, ec)) return base::InvalidArgument(a.save_path + ": not a folder");
  if (!IsLoopbackName(a.host) && a.token.empty()) a.token = RandomToken();
  Site site(a, opts, cls);

  const std::string token = a.token;
  HttpGuardOptions guard;
  guard.header_deadline = HeaderDeadline();
  guard.max_connections = kMaxConnections;
  guard.max_request_bytes = kMaxRequestBytes;
  if (!token.empty()) {
    // The token is in the request line: a wrong or missing one is answered before any header
    // is read (the pre-routing handler below checks it again, the same way).
    guard.refuse_before_headers = [token](const httplib::Request& line) {
      return line.get_param_value("token") != token;
    };
    CommonHeaders(guard.refusal);
    Fail(guard.refusal, 403, kNeedToken);
  }
  GuardedServer svr(std::move(guard));
  const bool loopback = IsLoopbackName(a.host);
  auto bound_port = std::make_shared<std::atomic<int>>(-1);  // known once bound (port 0: any)
  // Besides the header deadline: a connection that sends nothing for 10 s mid-request, or
  // nothing for 5 s between requests, is closed.
  svr.set_read_timeout(10, 0);
  svr.set_keep_alive_timeout(5);
  svr.set_pre_routing_handler([token, loopback, bound_port](const httplib::Request& req, httplib::Response& res) {
    CommonHeaders(res);
    if (loopback && !HostNamesThisServer(req.get_header_value("Host"), bound_port->load())) {
      Fail(res, 403, "this server answers requests for localhost only (the Host header names another "
                     "server: a page on another domain?)");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "GET" && req.method != "HEAD") {
      Fail(res, 405, "read-only: only GET and HEAD");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!token.empty() && req.get_param_value("token") != token) {
      Fail(res, 403, kNeedToken);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  AddRoutes(svr, site, a.save_path);

  int port = a.port;
  if (port == 0) {
    port = svr.bind_to_any_port(a.host);
    if (port < 0) port = -1;
  } else if (!svr.bind_to_port(a.host, port)) {
    port = -1;
  }
  if (port < 0) return base::IoError("cannot listen on " + a.host + ":" + std::to_string(a.port));
  bound_port->store(port);
  // SIGINT / SIGTERM end the server: blocked here (the server's threads inherit the mask) and
  // waited for by this thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::thread listener([&svr] { svr.listen_after_bind(); });
  const std::string host = a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host;
  io.out << "rlprof serve: " << report::ListRuns(a.save_path).runs.size() << " run(s) under " << a.save_path
         << "\n  http://" << host << ":" << port << "/" << site.query() << "\n"
         << (a.token.empty() ? "  (loopback only; Ctrl-C stops)\n" : "  (token required: the URL above carries it; Ctrl-C stops)\n");
  io.out.flush();
  int sig = 0;
  sigwait(&stop_signals, &sig);
  svr.stop();
  listener.join();
  pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
  io.out << "rlprof serve: stopped\n";
  return base::Status::Ok();
}

}  // namespace

Command AddServeCommand(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "Browse every run under a save path: reports, comparisons, Perfetto downloads");
  cmd->add_option("save_path", args->save_path, "The save path (a folder of runs)")->required();
  cmd->add_option("--host", args->host, "Address to bind (default 127.0.0.1; any other needs a token)");
  cmd->add_option("--port", args->port, "Port (default 8470; 0 picks a free one)")->check(CLI::Range(0, 65535));
  cmd->add_option("--token", args->token, "Require ?token=TEXT on every request (default: a random one off loopback)")
      ->check([](const std::string& t) {
        if (t.size() < 8) return std::string("a token has at least 8 characters");
        for (char c : t) {
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
            return std::string("a token is letters, digits, '-' and '_'");
        }
        return std::string();
      });
  cmd->add_option("-j,--jobs", args->jobs, "Inputs analysed in parallel (default: 2)")->check(CLI::Range(1, 256));
  AddAnalysisOptions(cmd, &args->analysis);
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
