// An httplib::Server that slow or idle clients cannot hold for long (`rlprof serve`).
//
// httplib 0.11.4 (Debian's cpp-httplib) reads a request with a timeout per read, so a client
// that sends one header byte every few seconds holds a worker forever, and its pool of 8
// workers takes connections in order, so 8 such clients stop the server. GuardedServer keeps
// httplib's request parsing, routing and response writing, and replaces the two parts around
// them:
//   - the task queue (Server::new_task_queue, public API): ConnectionPool runs each accepted
//     connection on a thread of its own, at most `max_connections` at once; a connection
//     beyond that is answered 503 and closed at once, never queued;
//   - the per-connection loop (Server::process_and_close_socket, the virtual that httplib's
//     own SSLServer overrides): it reads through ConnectionStream, whose reads share one
//     deadline per request, `header_deadline` from when the server starts waiting for the
//     request (the connection accepted, or the previous response sent) to the last byte of
//     its request line, headers and any body; past it, or past `max_request_bytes`, the
//     connection is closed, however slowly the client trickles bytes. Before httplib reads
//     any header, `refuse_before_headers` may turn the request down from its request line
//     alone (serve: a wrong or missing ?token=).
// Every wait polls in short slices and ends when the server stops, so stop() never waits for a
// slow client.
#ifndef RLPROF_SRC_CLI_GUARDED_HTTP_SERVER_H_
#define RLPROF_SRC_CLI_GUARDED_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <functional>

#include <httplib.h>

namespace rlprof::cli {

struct HttpGuardOptions {
  // From the start of the wait for a request to the last byte of its headers (and body).
  std::chrono::milliseconds header_deadline{10000};
  // Connections held at once (each on a thread of its own); more are refused with 503.
  size_t max_connections = 64;
  // Request line, headers and body of one request; more closes the connection.
  size_t max_request_bytes = 64 * 1024;
  // Called with a Request holding only method, target, path and params (parsed from the request
  // line as httplib parses it), before any header is read: true answers `refusal` at once
  // (Connection: close) and closes the connection. Not called for a line httplib would not parse.
  std::function<bool(const httplib::Request&)> refuse_before_headers;
  httplib::Response refusal;
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(HttpGuardOptions options);

 private:
  bool process_and_close_socket(socket_t sock) override;

  HttpGuardOptions options_;
};

}  // namespace rlprof::cli

#endif  // RLPROF_SRC_CLI_GUARDED_HTTP_SERVER_H_
