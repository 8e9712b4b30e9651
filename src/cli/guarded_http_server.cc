// See guarded_http_server.h. Written against cpp-httplib 0.11.4, whose listen loop accepts a
// socket, sets its SO_RCVTIMEO / SO_SNDTIMEO and enqueues `[=] { process_and_close_socket(sock); }`
// on the task queue; process_request (protected) reads one request from a Stream, routes it and
// writes the response.
#include "src/cli/guarded_http_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace rlprof::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Set on the accept thread while it runs the task of a connection the pool refused: the
// connection is answered 503 and closed there and then (see ConnectionPool::enqueue).
thread_local bool t_refusing = false;

// Runs each connection on a thread of its own, at most `cap` at once (threads are made as
// needed and kept for the next connection). A connection beyond the cap is never queued: its
// task runs at once on the accept thread with t_refusing set, and process_and_close_socket
// answers 503 without waiting for anything (a non-blocking send) and closes it.
class ConnectionPool final : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(size_t cap) : cap_(std::max<size_t>(cap, 1)) {}
  ~ConnectionPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!stopping_ && active_ < cap_) {
        ++active_;
        jobs_.push_back(std::move(fn));
        if (jobs_.size() <= idle_) {
          cv_.notify_one();
          return;
        }
        try {
          threads_.emplace_back([this] { Work(); });
          return;
        } catch (const std::system_error&) {  // no thread to be had: refused like one over the cap
          fn = std::move(jobs_.back());
          jobs_.pop_back();
          --active_;
        }
      }
    }
    t_refusing = true;
    fn();
    t_refusing = false;
  }

  // After the listen loop: connections still held see the server stopped and end promptly.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stopping, nothing left
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      fn = nullptr;
      lock.lock();
      --active_;
    }
  }

  const size_t cap_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t active_ = 0;  // connections queued or running
  size_t idle_ = 0;    // threads waiting for a connection
  bool stopping_ = false;
};

// The socket of one connection as an httplib::Stream. It buffers what it receives (so the
// request line can be looked at before httplib reads it, and bytes of a pipelined request
// carry over to the next one) and bounds every read of a request by that request's deadline
// and byte budget, besides httplib's timeout per read.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, const std::atomic<socket_t>& listening, std::chrono::microseconds read_timeout,
                   std::chrono::microseconds write_timeout, size_t max_request_bytes)
      : fd_(fd), listening_(listening), read_timeout_(read_timeout), write_timeout_(write_timeout),
        max_request_bytes_(max_request_bytes) {}

  // A new request: its deadline and byte budget start now.
  void StartRequest(Clock::time_point deadline) {
    deadline_ = deadline;
    request_bytes_ = 0;
    failed_ = false;
  }

  // Until the first byte of the next request is here (false: none came within `idle`, or the
  // deadline, or the client closed, or the server is stopping).
  bool WaitForRequest(std::chrono::microseconds idle) {
    if (off_ < buf_.size()) return true;
    return Fill(idle) > 0;
  }

  // The request line (through its '\n'), left in the buffer for httplib to read.
  bool PeekLine(std::string* line) {
    for (;;) {
      if (const size_t nl = buf_.find('\n', off_); nl != std::string::npos) {
        *line = buf_.substr(off_, nl + 1 - off_);
        return true;
      }
      if (buf_.size() - off_ >= max_request_bytes_) return false;
      if (Fill(read_timeout_) <= 0) return false;
    }
  }

  bool is_readable() const override {
    return off_ < buf_.size() || Wait(POLLIN, std::min(deadline_, Clock::now() + read_timeout_));
  }
  bool is_writable() const override { return Wait(POLLOUT, Clock::now() + write_timeout_); }

  // A read that cannot be met (the deadline or the byte budget spent, a timeout, the client
  // gone, the server stopping) fails the request: httplib would answer it 400 and wait for the
  // next request on the connection, so writes fail too and the connection is closed unanswered.
  ssize_t read(char* ptr, size_t size) override {
    if (failed_ || request_bytes_ >= max_request_bytes_) {
      failed_ = true;
      return -1;
    }
    if (off_ == buf_.size()) {
      if (const ssize_t n = Fill(read_timeout_); n <= 0) {
        failed_ = true;
        return n;
      }
    }
    const size_t n = std::min({size, buf_.size() - off_, max_request_bytes_ - request_bytes_});
    std::memcpy(ptr, buf_.data() + off_, n);
    off_ += n;
    request_bytes_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (failed_ || !is_writable()) return -1;
    ssize_t n;
    do n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Address(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  // Until `events` on the socket (or an error there, which the next recv / send reports), or
  // `until`; in slices of at most 200 ms, so that a stopping server is noticed.
  bool Wait(short events, Clock::time_point until) const {
    for (;;) {
      if (listening_ == INVALID_SOCKET) return false;
      const auto now = Clock::now();
      if (now >= until) return false;
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
      pollfd p{fd_, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left, 1, 200)));
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
  }

  // One recv into the buffer, waiting at most `wait` and never past the request's deadline:
  // the bytes received, 0 when the client closed, -1 on a timeout, an error or a stop.
  ssize_t Fill(std::chrono::microseconds wait) {
    if (off_ == buf_.size()) {
      buf_.clear();
      off_ = 0;
    } else if (off_ > 0) {
      buf_.erase(0, off_);
      off_ = 0;
    }
    if (!Wait(POLLIN, std::min(deadline_, Clock::now() + wait))) return -1;
    char chunk[4096];
    ssize_t n;
    do n = ::recv(fd_, chunk, sizeof chunk, 0);
    while (n < 0 && errno == EINTR);
    if (n > 0) buf_.append(chunk, static_cast<size_t>(n));
    return n;
  }

  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (get(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
        ::getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                      NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
      ip = host;
      port = std::atoi(serv);
    }
  }

  const int fd_;
  const std::atomic<socket_t>& listening_;  // the server's socket; INVALID_SOCKET once stopped
  const std::chrono::microseconds read_timeout_, write_timeout_;
  const size_t max_request_bytes_;
  Clock::time_point deadline_ = Clock::time_point::max();
  size_t request_bytes_ = 0;
  bool failed_ = false;
  std::string buf_;
  size_t off_ = 0;  // buf_[off_..] not yet read
};

// The request line as httplib's Server::parse_request_line reads it (the same split, method
// and version checks, fragment removal and query decoding), into method, target, path, params.
bool ParseRequestLine(std::string line, httplib::Request* req) {
  if (line.size() < 2 || line.compare(line.size() - 2, 2, "\r\n") != 0) return false;
  line.resize(line.size() - 2);
  size_t count = 0;
  httplib::detail::split(line.data(), line.data() + line.size(), ' ', [&](const char* b, const char* e) {
    if (count == 0) req->method.assign(b, e);
    if (count == 1) req->target.assign(b, e);
    if (count == 2) req->version.assign(b, e);
    ++count;
  });
  if (count != 3) return false;
  static const std::set<std::string> kMethods{"GET", "HEAD", "POST", "PUT", "DELETE",
                                              "CONNECT", "OPTIONS", "TRACE", "PATCH", "PRI"};
  if (!kMethods.count(req->method) || (req->version != "HTTP/1.1" && req->version != "HTTP/1.0")) return false;
  if (const size_t hash = req->target.find('#'); hash != std::string::npos) req->target.erase(hash);
  count = 0;
  httplib::detail::split(req->target.data(), req->target.data() + req->target.size(), '?',
                         [&](const char* b, const char* e) {
                           if (count == 0) req->path = httplib::detail::decode_url(std::string(b, e), false);
                           if (count == 1 && e > b) httplib::detail::parse_query_text(std::string(b, e), req->params);
                           ++count;
                         });
  return true;
}

void SendAll(ConnectionStream& strm, const std::string& bytes) {
  for (size_t at = 0; at < bytes.size();) {
    const ssize_t n = strm.write(bytes.data() + at, bytes.size() - at);
    if (n <= 0) return;
    at += static_cast<size_t>(n);
  }
}

// `res` (and Connection: close) for the request whose line is `req`; then the connection's
// sending side is shut and what the client still sends is read and dropped for up to a second,
// so that closing does not reset the connection before the client has read the answer.
void Answer(ConnectionStream& strm, socket_t sock, const httplib::Request& req, const httplib::Response& res) {
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " +
                    (res.status == 403 ? "Forbidden" : res.status == 503 ? "Service Unavailable" : "Error") + "\r\n";
  for (const auto& [key, value] : res.headers) out += key + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(res.body.size()) + "\r\nConnection: close\r\n\r\n";
  if (req.method != "HEAD") out += res.body;
  SendAll(strm, out);
  ::shutdown(sock, SHUT_WR);
  strm.StartRequest(Clock::now() + std::chrono::seconds(1));
  char drop[4096];
  while (strm.read(drop, sizeof drop) > 0) {
  }
}

}  // namespace

GuardedServer::GuardedServer(HttpGuardOptions options) : options_(std::move(options)) {
  const size_t cap = options_.max_connections;
  new_task_queue = [cap] { return new ConnectionPool(cap); };
}

// httplib's own loop (detail::process_server_socket: keep-alive wait, up to
// keep_alive_max_count requests, then shutdown and close), reading through ConnectionStream.
bool GuardedServer::process_and_close_socket(socket_t sock) {
  if (t_refusing) {
    static const char kBusy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\n"
                                "Connection: close\r\n\r\n";
    (void)!::send(sock, kBusy, sizeof kBusy - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return false;
  }
  using std::chrono::microseconds;
  using std::chrono::seconds;
  ConnectionStream strm(sock, svr_sock_, seconds(read_timeout_sec_) + microseconds(read_timeout_usec_),
                        seconds(write_timeout_sec_) + microseconds(write_timeout_usec_), options_.max_request_bytes);
  bool ret = false;
  for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    // The deadline covers the wait for the request's first byte (at most the keep-alive
    // timeout) and the reading of all of it.
    strm.StartRequest(Clock::now() + options_.header_deadline);
    if (!strm.WaitForRequest(seconds(keep_alive_timeout_sec_))) break;
    if (options_.refuse_before_headers) {
      std::string line;
      if (!strm.PeekLine(&line)) break;
      httplib::Request req;
      if (ParseRequestLine(std::move(line), &req) && options_.refuse_before_headers(req)) {
        Answer(strm, sock, req, options_.refusal);
        ret = false;
        break;
      }
    }
    bool connection_closed = false;
    ret = process_request(strm, left == 1, connection_closed, nullptr);
    if (!ret || connection_closed) break;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ret;
}

}  // namespace rlprof::cli
