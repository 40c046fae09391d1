#pragma once
// HTTP/1.1 for every daemon: a Boost.Beast server that calls one pure handler per request, and
// a small synchronous client for loopback and internal calls.
//
// The server binds to loopback unless told otherwise, limits request bodies and headers, closes
// idle connections after a read timeout, and answers every refusal with the registry's JSON
// error body {"error": "CODE"} and its HTTP status. Boost types never appear in this header.
//
// Error codes (see include/aios/error_codes.inc, section HTTP):
//   REQUEST_INVALID (400)            malformed HTTP, a bad request-target or query escape
//   REQUEST_SIZE_INVALID (413)       request body over ServerOptions::max_body_bytes
//   HTTP_HEADER_TOO_LARGE (400)      request line and headers over max_header_bytes
//   HTTP_BIND_FAILED (500)           Server::start could not listen on host:port
//   HTTP_BIND_NOT_LOOPBACK (500)     Server::start refused a non-loopback host
//   HTTP_URL_INVALID (500)           a client URL that is not http://host[:port][/path][?query]
//   HTTP_CLIENT_REQUEST_INVALID (500) a client method, target or token that cannot be sent
//   HTTP_UPSTREAM_UNAVAILABLE (502)  the peer refused, reset or closed the connection
//   HTTP_UPSTREAM_RESPONSE_INVALID (502) the peer's answer is not HTTP/1.1 or is too large
//   HTTP_UPSTREAM_TIMEOUT (503)      the peer did not answer within the client timeout
//   HTTP_CLIENT_CANCELLED (503)      the caller gave up a request while it waited
//   INTERNAL_ERROR (500)             a handler threw something other than aios::Error

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aios/error.hpp"

namespace aios::http {

// One parsed request, handed to the Handler. Built by the server; tests build it by hand.
// The server reuses one Request per connection: a handler must not keep references into it
// after it returns.
struct Request {
  std::string method;  // as received, e.g. "GET"; unknown methods are passed on verbatim
  std::string target;  // raw origin-form request-target, e.g. "/v1/tasks?status=QUEUED"
  std::string path;    // target before '?', NOT percent-decoded, e.g. "/v1/tasks"
  // Percent-decoded query parameters; '+' decodes to a space; a name without '=' maps to "";
  // when a name repeats, the first value wins. A malformed escape is refused (REQUEST_INVALID)
  // before the handler runs.
  std::map<std::string, std::string> query;
  std::string body;
  // The token of "Authorization: Bearer <token>": the scheme is case-insensitive, one or more
  // spaces or tabs may separate it from the token, and the token is one run of visible ASCII
  // (0x21-0x7E). Empty when the header is absent, repeated, of another scheme, empty, or has
  // anything after the token. Never log it.
  std::string bearer_token;
  std::string remote_address;  // peer IP address, e.g. "127.0.0.1"
  std::uint16_t remote_port = 0;
  // Every header in the order received, names as sent by the peer, values trimmed.
  std::vector<std::pair<std::string, std::string>> headers;

  // The value of the first header named `name` (ASCII case-insensitive), or "" when absent.
  std::string_view header(std::string_view name) const;
};

// What a handler answers. The server adds Content-Type, Content-Length, "Cache-Control:
// no-store" and, when the connection ends, "Connection: close". It answers 500 INTERNAL_ERROR
// instead when the status is outside 200-599, a header name is not a token, a header value or
// the content type holds CR, LF or NUL, or `headers` names one of the headers the server owns
// (Content-Type, Content-Length, Transfer-Encoding, Connection, Cache-Control). Statuses 204
// and 304 are sent without a body, Content-Type or Content-Length; an answer to HEAD keeps its
// headers and drops the body.
class Later;

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers, sent in order
  // Set: the answer comes later, through this (see Later); the other fields are ignored.
  std::shared_ptr<Later> later;
};

// An answer a handler gives after it has returned (a long poll): the handler keeps a Later,
// returns Response{.later = it} and calls complete() from any thread when the answer is
// known; the connection sends it then, holding no io thread meanwhile. Only the first
// complete() counts. A Later dropped without one answers 500 INTERNAL_ERROR, so no connection
// waits on a forgotten answer. The owner of a waiting Later must complete it before the server
// stops, or stop() waits out its drain_timeout for it.
class Later {
 public:
  Later() = default;
  ~Later();
  Later(const Later&) = delete;
  Later& operator=(const Later&) = delete;

  void complete(Response response);
  // True once the peer closed its connection while it waited: nobody reads the answer, so a
  // long poll should give up rather than act (claim) for it. Any thread.
  bool abandoned() const { return abandoned_.load(); }

  // For the server: where the answer goes (called at once when complete() came first), and
  // the peer's going away.
  void on_complete(std::function<void(Response)> sink);
  void abandon() { abandoned_ = true; }

 private:
  std::atomic<bool> abandoned_{false};
  std::mutex mutex_;
  std::function<void(Response)> sink_;
  std::unique_ptr<Response> early_;
  bool done_ = false;
};

// `body` dumped compactly (nlohmann's dump(): object keys in sorted order, no spaces).
// Throws nlohmann::json::type_error for strings that are not valid UTF-8.
// The request body as a JSON object; an empty body is {}. Anything else that is not one JSON
// object throws aios::Error REQUEST_INVALID.
nlohmann::json json_object_body(const Request& request);

Response json_response(int status, const nlohmann::json& body);

// {"error": CODE} with the error's HTTP status. The detail is never sent.
Response error_response(const aios::Error& error);

// The bearer token of an Authorization header value, under the rules of Request::bearer_token.
std::string_view bearer_from_authorization(std::string_view value);

// True when `request` carries exactly `expected_token`, compared in constant time
// (aios::constant_time_equal). False when either token is empty.
bool bearer_matches(const Request& request, std::string_view expected_token);

// Called concurrently from the server's io threads, one call per request. A handler may throw:
// aios::Error becomes error_response(error); anything else becomes 500 {"error":
// "INTERNAL_ERROR"} without its what() text. A handler that blocks holds one io thread.
using Handler = std::function<Response(const Request&)>;

// Receives the what() text of an exception that became INTERNAL_ERROR, for the daemon log.
// Called from io threads; the text never reaches the wire.
using UnhandledExceptionObserver = std::function<void(std::string_view what)>;

struct ServerOptions {
  std::string host = "127.0.0.1";  // an IP address, or "localhost" for 127.0.0.1
  std::uint16_t port = 0;          // 0 = an ephemeral port; see Server::port()
  std::size_t max_body_bytes = 512 * 1024;
  std::size_t max_header_bytes = 16 * 1024;  // request line plus headers
  // Idle keep-alive connections and slow requests are closed after this long without a
  // complete request; also bounds each response write.
  std::chrono::milliseconds read_timeout{30000};
  // How long stop() waits for requests already read to be answered.
  std::chrono::milliseconds drain_timeout{10000};
  // Open connections at most, in all and from one peer address: a connection past either is
  // answered 503 HTTP_CONNECTION_LIMIT and closed at once, so a flood costs one descriptor
  // per connection for an instant and never a session.
  std::size_t max_connections = 1024;
  std::size_t max_connections_per_peer = 512;
  // Asked once a request's headers are read, before a body over admit_before_bytes (or of
  // unknown length, chunked) is read: false answers 401 UNAUTHORIZED and closes the connection
  // without reading the body, so a caller without a valid token cannot make the server buffer
  // a large one. Unset: every request is read. Called from io threads.
  std::function<bool(const Request&)> admits;
  std::size_t admit_before_bytes = 64 * 1024;
  unsigned threads = 4;             // io threads (0 is taken as 1)
  bool allow_non_loopback = false;  // false: start() refuses any address but 127/8 and ::1
  UnhandledExceptionObserver on_unhandled_exception;  // optional
};

// An HTTP/1.1 server. One request at a time per connection, answered in order; keep-alive as
// the client asks. "Expect: 100-continue" is honoured. Only origin-form targets ("/...") are
// accepted.
//
// Thread-safety: start(), stop() and the destructor must be called from one owning thread,
// never from a handler; port(), in_flight() and connections() may be called from any thread.
class Server {
 public:
  Server(ServerOptions options, Handler handler);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts `threads` io threads. Throws aios::Error HTTP_BIND_NOT_LOOPBACK
  // when the host is not loopback and !allow_non_loopback, HTTP_BIND_FAILED when the host is
  // not an IP address or the socket cannot be bound (for instance EADDRINUSE), and
  // INTERNAL_ERROR when called a second time. A Server is started at most once.
  void start();

  // The bound port (the real one when options.port was 0); 0 before start().
  std::uint16_t port() const;

  // Stops accepting, closes idle connections, lets requests already read be answered (with
  // "Connection: close") for up to drain_timeout, then stops the io threads and joins them.
  // Idempotent; a no-op before start().
  void stop();

  // Requests read and not yet answered.
  std::size_t in_flight() const;

  // Open connections.
  std::size_t connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// --- Client -------------------------------------------------------------------------------

struct ClientResponse {
  int status = 0;
  std::string body;
};

// The parts of an http:// URL a client needs.
struct Endpoint {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  std::uint16_t port = 80;
  std::string target;  // path and query, "/" when the URL has none
};

// Parses http://host[:port][/path][?query] (scheme case-insensitive; IPv6 as [addr]). Throws
// aios::Error HTTP_URL_INVALID for any other scheme (https included), user info, a fragment,
// an empty or out-of-range port, or characters outside visible ASCII.
Endpoint parse_http_url(std::string_view url);

// A keep-alive HTTP/1.1 connection to one host:port, opened on first use.
//
// Every request() is bounded by `timeout` as a whole (connect, write, read); resolving a host
// name (not an IP address) can take longer when the system resolver is slow. Before
// reusing the connection, request() checks that the peer has not closed it (servers close idle
// connections) and reconnects if so. If the peer closes it in the instant between that check
// and the request (the write fails, or the connection ends before a byte of the response), an
// idempotent request (GET, HEAD, PUT, DELETE, OPTIONS) is sent once more on a new connection;
// any other method throws HTTP_UPSTREAM_UNAVAILABLE, since the peer may have acted on it.
// Response bodies over 64 MiB are refused.
//
// Throws aios::Error HTTP_CLIENT_REQUEST_INVALID (method not a token, target not origin-form
// visible ASCII, token not visible ASCII), HTTP_UPSTREAM_UNAVAILABLE (cannot resolve or
// connect, connection reset or closed), HTTP_UPSTREAM_TIMEOUT, HTTP_UPSTREAM_RESPONSE_INVALID.
// After a throw the connection is closed and the next request reconnects. Error details name
// the host and port, never the token or a body.
//
// Thread-safety: not thread-safe; use one Connection per thread. A moved-from Connection may
// only be assigned to or destroyed.
class Connection final {
 public:
  Connection(std::string host, std::uint16_t port, std::chrono::milliseconds timeout);
  ~Connection();
  Connection(Connection&&) noexcept;
  Connection& operator=(Connection&&) noexcept;

  // Sends one request; `target` is origin-form ("/v1/tasks/x/claim"). An empty bearer token
  // sends no Authorization header; a non-empty body is sent as application/json. Returns any
  // HTTP status the peer answers with; throws aios::Error as documented above.
  ClientResponse request(std::string_view method, std::string_view target,
                         std::string_view bearer_token, std::string_view body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One request on a new connection, closed afterwards. `url` as for parse_http_url; its
// target is sent. Throws as parse_http_url and Connection::request, and HTTP_CLIENT_CANCELLED
// when `cancel` turns true while it waits (seen within 250 ms; the connection is closed, so a
// long poll's server sees its client go).
ClientResponse request(std::string_view method, std::string_view url, std::string_view bearer_token,
                       std::string_view body, std::chrono::milliseconds timeout,
                       const std::atomic<bool>* cancel = nullptr);

// True when `error` (from request or a Transport) says the peer was never reached: it could not
// be resolved or refused the connection, so nothing of the request was sent and sending it to
// another replica cannot do it twice.
bool nothing_sent(const Error& error);

// The seam for code that calls another service by URL (the worker's Task API and Bridge
// clients, the rebind service's Bridge resolver): part of the environment bundle
// (environment.hpp), so tests give a recording fake. Any thread may call.
class Transport {
 public:
  virtual ~Transport() = default;
  // As request() above.
  virtual ClientResponse request(std::string_view method, std::string_view url,
                                 std::string_view bearer_token, std::string_view body,
                                 std::chrono::milliseconds timeout) = 0;
  // As request(), given up with HTTP_CLIENT_CANCELLED once `cancel` turns true (a worker's
  // stop during its long poll). A transport that cannot wait answers as request() does.
  virtual ClientResponse cancellable_request(std::string_view method, std::string_view url,
                                             std::string_view bearer_token, std::string_view body,
                                             std::chrono::milliseconds timeout,
                                             const std::atomic<bool>& cancel) {
    (void)cancel;
    return request(method, url, bearer_token, body, timeout);
  }
};

// One new connection per request (request() above).
class SystemTransport final : public Transport {
 public:
  ClientResponse request(std::string_view method, std::string_view url,
                         std::string_view bearer_token, std::string_view body,
                         std::chrono::milliseconds timeout) override {
    return http::request(method, url, bearer_token, body, timeout);
  }
  ClientResponse cancellable_request(std::string_view method, std::string_view url,
                                     std::string_view bearer_token, std::string_view body,
                                     std::chrono::milliseconds timeout,
                                     const std::atomic<bool>& cancel) override {
    return http::request(method, url, bearer_token, body, timeout, &cancel);
  }
};

}  // namespace aios::http
