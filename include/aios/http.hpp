#pragma once
// HTTP/1.1 for every daemon: a Boost.Beast server that calls one pure handler per request, and
// a small synchronous client for internal calls, each over plaintext or TLS (OpenSSL 3).
//
// The server serves plaintext on loopback only; any other address needs TLS credentials. It
// limits request bodies and headers, closes idle connections after a read timeout, and answers
// every refusal with the registry's JSON error body {"error": "CODE"} and its HTTP status.
// Boost types never appear in this header.
//
// Error codes (see include/aios/error_codes.inc, section HTTP):
//   REQUEST_INVALID (400)            malformed HTTP, a bad request-target or query escape
//   REQUEST_SIZE_INVALID (413)       request body over ServerOptions::max_body_bytes (or its
//                                    target's max_body_bytes_for)
//   HTTP_HEADER_TOO_LARGE (400)      request line and headers over max_header_bytes
//   HTTP_BIND_FAILED (500)           Server::start could not listen on host:port
//   HTTP_PLAINTEXT_NOT_LOOPBACK (500) Server::start refused a non-loopback host without TLS
//   HTTP_URL_INVALID (500)           a client URL that is not http(s)://host[:port][/path][?query]
//   HTTP_CLIENT_REQUEST_INVALID (500) a client method, target or token that cannot be sent
//   HTTP_UPSTREAM_UNAVAILABLE (502)  the peer refused, reset or closed the connection
//   HTTP_UPSTREAM_RESPONSE_INVALID (502) the peer's answer is not HTTP/1.1 or is too large
//   HTTP_UPSTREAM_TIMEOUT (503)      the peer did not answer within the client timeout
//   HTTP_CLIENT_CANCELLED (503)      the caller gave up a request while it waited
//   HTTP_CONNECTION_LIMIT (503)      no room for a connection (ServerOptions::max_connections)
//   HTTP_BODY_BUDGET_EXHAUSTED (503) bodies held past ServerOptions::max_body_bytes_held
//   HTTP_HOST_NOT_ALLOWED (421)      a Host that is neither loopback nor allowed_hosts
//   INTERNAL_ERROR (500)             a handler threw something other than aios::Error
// and, section TLS: TLS_CREDENTIALS_INVALID, TLS_PLAINTEXT_REQUEST, TLS_CLIENT_CERTIFICATE_*
// (a TLS listener's refusals of a client before its request reaches the handler) and
// TLS_HANDSHAKE_FAILED (the client's).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aios/error.hpp"

namespace aios::http {

// --- TLS ----------------------------------------------------------------------------------

// What a TLS listener proves itself with and whom it admits. PEM files.
struct TlsServerFiles {
  std::filesystem::path certificate;  // the server's chain, leaf first
  std::filesystem::path private_key;
  // Set: every client must present a certificate that chains to these CAs (mutual TLS); a
  // connection without one, or with one that does not verify, has each request refused with
  // its TLS_CLIENT_CERTIFICATE_* code before the handler sees it. Empty: no client certificate
  // is asked for.
  std::filesystem::path client_ca;
};

// A listener's TLS credentials: TLS 1.2 or 1.3 (1.3 preferred), forward-secret AEAD ciphers
// only, session tickets for resumption. reload() replaces them while the listener serves: an
// open connection keeps the credentials it was accepted with, the next one gets the new ones.
// Thread-safe.
class TlsServerCredentials {
 public:
  // Throws aios::Error TLS_CREDENTIALS_INVALID (a file missing or unreadable, not PEM, the key
  // not the certificate's).
  explicit TlsServerCredentials(TlsServerFiles files);
  ~TlsServerCredentials();
  TlsServerCredentials(const TlsServerCredentials&) = delete;
  TlsServerCredentials& operator=(const TlsServerCredentials&) = delete;

  // Reads the files again. On failure throws as the constructor and keeps serving the
  // credentials in use.
  void reload();
  bool verifies_clients() const { return !files_.client_ca.empty(); }

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  TlsServerFiles files_;
  std::unique_ptr<Impl> impl_;
};

// What a client trusts and shows over https://. PEM files.
struct TlsClientFiles {
  std::filesystem::path ca_bundle{};    // the CAs a server must chain to; empty: the system's
  std::filesystem::path certificate{};  // optional: the client certificate (mutual TLS)
  std::filesystem::path private_key{};  // with `certificate`
  // ca_bundle is the very certificate the server presents, trusted as it is whatever name it
  // carries: a daemon checking its own listener (its watchdog), which it reaches by address.
  bool pinned = false;

  bool empty() const { return ca_bundle.empty() && certificate.empty() && private_key.empty(); }
};

// A client's TLS context: the server's certificate must chain to the CA bundle and name the
// host of the URL (DNS name or IP address). Shared by every connection of a process, so that a
// reconnect resumes the last session instead of a full handshake. Thread-safe.
class TlsClientCredentials {
 public:
  // Throws aios::Error TLS_CREDENTIALS_INVALID.
  explicit TlsClientCredentials(TlsClientFiles files);
  ~TlsClientCredentials();
  TlsClientCredentials(const TlsClientCredentials&) = delete;
  TlsClientCredentials& operator=(const TlsClientCredentials&) = delete;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// A verified client certificate as a handler sees it.
struct ClientCertificate {
  std::string sha256;             // lower-case hex SHA-256 of the DER certificate
  std::vector<std::string> uris;  // its subjectAltName URIs, e.g. "aios:agent:worker-1"
};

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
  bool tls = false;                  // the connection is TLS
  bool tls_session_resumed = false;  // its handshake resumed an earlier session (no full one)
  // The listener asks every client for a certificate (mutual TLS): an agent's request must
  // come with one bound to the agent.
  bool verifies_clients = false;
  // Set on a mutual-TLS connection: the client certificate, verified against the listener's
  // client CA (a connection whose certificate fails never reaches the handler).
  std::optional<ClientCertificate> client_certificate;
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

// True when `address` (Request::remote_address) is 127.0.0.0/8, ::1 or ::ffff:127.x.
bool is_loopback_address(std::string_view address);

// The owner's control token and where it counts: from a loopback peer only, unless the operator
// allows remote owners (a TLS listener on a network address whose owner works from elsewhere).
class OwnerToken {
 public:
  OwnerToken(std::string token, bool remote_allowed = false)  // NOLINT: a token converts
      : token_(std::move(token)), remote_allowed_(remote_allowed) {}

  // True when the request carries the owner's token. Throws aios::Error OWNER_NOT_LOOPBACK
  // when it does from a peer that is not loopback and remote owners are not allowed.
  bool matches(const Request& request) const;
  // matches() without the throw, for ServerOptions::admits.
  bool admits(const Request& request) const;

 private:
  std::string token_;
  bool remote_allowed_;
};

// Called concurrently from the server's io threads, one call per request. A handler may throw:
// aios::Error becomes error_response(error); anything else becomes 500 {"error":
// "INTERNAL_ERROR"} without its what() text. A handler that blocks holds one io thread.
using Handler = std::function<Response(const Request&)>;

// Receives the what() text of an exception that became INTERNAL_ERROR, for the daemon log.
// Called from io threads; the text never reaches the wire.
using UnhandledExceptionObserver = std::function<void(std::string_view what)>;

struct ServerOptions {
  // An IP address, "localhost" for 127.0.0.1, or several separated by commas (one listener
  // each, all on one port: loopback for local callers beside a network address for remote ones).
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0 = an ephemeral port; see Server::port()
  std::size_t max_body_bytes = 512 * 1024;
  // A request target's own body limit (the batch endpoints take more than the single calls);
  // 0 or unset: max_body_bytes. Called from io threads with the target as sent.
  std::function<std::size_t(std::string_view target)> max_body_bytes_for;
  std::size_t max_header_bytes = 16 * 1024;  // request line plus headers
  // Idle keep-alive connections and slow requests are closed after this long without a
  // complete request; also bounds each response write.
  std::chrono::milliseconds read_timeout{30000};
  // How long stop() waits for requests already read to be answered.
  std::chrono::milliseconds drain_timeout{10000};
  // Open connections at most, in all and from one peer address. With `admits` set, a connection
  // none of whose requests was admitted yet is unauthenticated: it waits for its next request
  // at most unauthenticated_idle_timeout, and when a new connection finds either bound reached,
  // the longest-waiting unauthenticated one (of that peer, for the peer's bound) is closed to
  // make room, so connections without a token cannot hold the capacity of callers with one
  // (every local user can bind any 127.x address: a per-address bound alone is no defence).
  // A connection that finds no room even so is answered 503 HTTP_CONNECTION_LIMIT and closed at
  // once, so a flood costs one descriptor per connection for an instant and never a session.
  std::size_t max_connections = 1024;
  std::size_t max_connections_per_peer = 512;
  std::chrono::milliseconds unauthenticated_idle_timeout{5000};
  // Request bodies held in memory at once, over all connections: a body over admit_before_bytes
  // (or of unknown length: then the target's limit) is counted at its length before it is read,
  // until its answer is made. One that does not fit is answered 503
  // HTTP_BODY_BUDGET_EXHAUSTED unread. Smaller bodies are bounded by the connection caps.
  std::size_t max_body_bytes_held = 64 * 1024 * 1024;
  // The names a request's Host header may carry besides loopback ones (localhost, 127.0.0.0/8,
  // ::1) and the listener's own addresses: those remote callers of a TLS listener use (names
  // and IP literals, compared without case). Any other Host is answered 421
  // HTTP_HOST_NOT_ALLOWED before the handler runs, so a web page that rebinds its DNS name to
  // the listener reads nothing through the operator's browser. A request without Host (HTTP/1.0)
  // passes.
  std::vector<std::string> allowed_hosts;
  // Asked once a request's headers are read, before a body over admit_before_bytes (or of
  // unknown length, chunked) is read: false answers 401 UNAUTHORIZED and closes the connection
  // without reading the body, so a caller without a valid token cannot make the server buffer
  // a large one. Unset: every request is read. Called from io threads.
  std::function<bool(const Request&)> admits;
  std::size_t admit_before_bytes = 64 * 1024;
  unsigned threads = 4;  // io threads (0 is taken as 1)
  // Set: the listener speaks TLS only (a plaintext request is answered 400
  // TLS_PLAINTEXT_REQUEST in plaintext and closed). Unset: plaintext, and start() refuses any
  // address but 127/8 and ::1.
  std::shared_ptr<TlsServerCredentials> tls;
  // A TLS handshake not done within this long closes the connection; until then it counts
  // against the connection caps like any other.
  std::chrono::milliseconds handshake_timeout{10000};
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

  // Binds, listens and starts `threads` io threads. Throws aios::Error
  // HTTP_PLAINTEXT_NOT_LOOPBACK when a host is not loopback and the options have no TLS,
  // HTTP_BIND_FAILED when a host is not an IP address or a socket cannot be bound (for
  // instance EADDRINUSE), and INTERNAL_ERROR when called a second time. A Server is started at
  // most once.
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

// The parts of an http:// or https:// URL a client needs.
struct Endpoint {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  std::uint16_t port = 80;
  std::string target;  // path and query, "/" when the URL has none
  bool https = false;
};

// Parses http(s)://host[:port][/path][?query] (scheme case-insensitive; IPv6 as [addr]; the
// port defaults to 80 or 443). Throws aios::Error HTTP_URL_INVALID for any other scheme, user
// info, a fragment, an empty or out-of-range port, or characters outside visible ASCII.
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
  // With `tls`, the connection speaks TLS and verifies the server against those credentials
  // (its name or IP address must be `host`); a failed handshake throws TLS_HANDSHAKE_FAILED.
  Connection(std::string host, std::uint16_t port, std::chrono::milliseconds timeout,
             std::shared_ptr<TlsClientCredentials> tls = nullptr);
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
// long poll's server sees its client go). An https:// URL is verified against `tls`, or the
// system's CA store without it.
ClientResponse request(std::string_view method, std::string_view url, std::string_view bearer_token,
                       std::string_view body, std::chrono::milliseconds timeout,
                       const std::atomic<bool>* cancel = nullptr,
                       std::shared_ptr<TlsClientCredentials> tls = nullptr);

// --- Forwarding proxy ---------------------------------------------------------------------

// One request a forwarding proxy read from its client.
struct ProxyRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent
  std::string body;
  // The value of the first header named `name` (ASCII case-insensitive), or "" when absent.
  std::string_view header(std::string_view name) const;
};

// What goes upstream instead. The proxy sets Host, Content-Length and Connection itself and
// drops any of them (and Transfer-Encoding, Keep-Alive, Proxy-*) given here.
struct ProxyForward {
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// How one forwarded request ended.
struct ProxyOutcome {
  int status = 0;                // the upstream's; 0 when none came
  std::uint64_t bytes_up = 0;    // request body bytes sent upstream
  std::uint64_t bytes_down = 0;  // answer body bytes passed to the client
  std::chrono::milliseconds duration{0};
  std::string error;  // the code, when the upstream failed or the client went away mid-answer
};

// Watches one forwarded request: the answer's status and content type, then each piece of its
// body as it is passed on, then the end (always called once).
class ProxyCall {
 public:
  virtual ~ProxyCall() = default;
  virtual void on_response(int status, std::string_view content_type) = 0;
  virtual void on_body(std::string_view piece) = 0;
  virtual void on_end(const ProxyOutcome& outcome) = 0;
};

// ASCII case-insensitive equality, as header names compare.
bool same_header_name(std::string_view a, std::string_view b);

// The policy's answer to a request: `answer` (a refusal) is sent and nothing forwarded;
// otherwise `forward` goes upstream and `call` (may be null) watches it.
struct ProxyDecision {
  std::optional<Response> answer;
  ProxyForward forward;
  std::unique_ptr<ProxyCall> call;
};
using ProxyPolicy = std::function<ProxyDecision(ProxyRequest&)>;

struct ProxyOptions {
  std::string host;  // the upstream, reached over TLS with `tls`, else plaintext
  std::uint16_t port = 0;
  std::shared_ptr<TlsClientCredentials> tls;
  std::size_t max_body_bytes = 32 * 1024 * 1024;  // a client's request body
  std::uint32_t max_header_bytes = 64 * 1024;
  // Waiting for a client's next request, and for a client to take a piece of an answer.
  std::chrono::milliseconds idle_timeout{300'000};
  // Connecting, sending a request and waiting for the answer's header (a model may think long).
  std::chrono::milliseconds answer_timeout{600'000};
  // Between two pieces of an answer's body.
  std::chrono::milliseconds stream_timeout{300'000};
};

// One client connection of a forwarding proxy (the executor's provider gateway): reads each
// request (bounded: 413 REQUEST_SIZE_INVALID, 400 for malformed HTTP), asks the policy, and
// forwards it to the one upstream over a keep-alive connection of its own, passing the answer
// back as it arrives (a text/event-stream unbuffered, chunked stays chunked). An upstream that
// cannot be reached or times out before its answer's header is answered with
// HTTP_UPSTREAM_UNAVAILABLE (502), HTTP_UPSTREAM_TIMEOUT (503) or TLS_HANDSHAKE_FAILED; one that
// fails mid-answer cuts the client's connection. Not thread-safe, but for stop().
class ProxyConnection {
 public:
  // Takes the connected socket `fd`.
  ProxyConnection(int fd, ProxyOptions options, ProxyPolicy policy);
  ~ProxyConnection();
  ProxyConnection(const ProxyConnection&) = delete;
  ProxyConnection& operator=(const ProxyConnection&) = delete;

  // Serves until the client closes, a timeout, a failure or stop(); then closes both sides.
  void serve();
  // Any thread: makes serve() return within 250 ms.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

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

// Requests as request() above, over keep-alive connections it pools per scheme, host and port:
// a worker pays one connection (and one TLS handshake, after which sessions are resumed) for
// many calls. A connection goes back to the pool only after a whole answer; one idle for
// kMaxIdle is closed rather than reused (servers close idle connections), and one the peer
// closed meanwhile is noticed before reuse. https:// URLs are verified against `tls`, or the
// system's CA store without it. Thread-safe.
class SystemTransport final : public Transport {
 public:
  static constexpr std::chrono::seconds kMaxIdle{15};

  explicit SystemTransport(std::shared_ptr<TlsClientCredentials> tls = nullptr);
  ~SystemTransport() override;
  SystemTransport(const SystemTransport&) = delete;
  SystemTransport& operator=(const SystemTransport&) = delete;

  ClientResponse request(std::string_view method, std::string_view url,
                         std::string_view bearer_token, std::string_view body,
                         std::chrono::milliseconds timeout) override;
  ClientResponse cancellable_request(std::string_view method, std::string_view url,
                                     std::string_view bearer_token, std::string_view body,
                                     std::chrono::milliseconds timeout,
                                     const std::atomic<bool>& cancel) override;

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

}  // namespace aios::http
