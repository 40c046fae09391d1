// A forwarding proxy's client connection: Beast's parser and serializer over a buffer_body, so
// an answer passes through piece by piece as it arrives (the relay pattern of Beast's own
// examples), with every step bounded by its deadline on one private io_context.
#include <unistd.h>

#include <array>
#include <atomic>

#include "aios/http.hpp"
#include "http/client_connection.hpp"
#include "http/response.hpp"
#include "http/url.hpp"

namespace aios::http {

namespace bhttp = detail::beast::http;
namespace net = detail::net;
using detail::Clock;
using detail::tcp;

std::string_view ProxyRequest::header(std::string_view name) const {
  return detail::header_value(headers, name);
}

bool same_header_name(std::string_view a, std::string_view b) {
  return detail::iequals(a, b);
}

namespace {

// Hop-by-hop headers, and those the proxy sets itself.
bool owned_by_proxy(std::string_view name) {
  for (const std::string_view owned :
       {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "upgrade", "te",
        "trailer", "proxy-authorization", "proxy-connection", "proxy-authenticate"}) {
    if (detail::iequals(name, owned)) return true;
  }
  return false;
}

std::chrono::milliseconds proxy_elapsed(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

}  // namespace

struct ProxyConnection::Impl {
  Impl(int fd, ProxyOptions proxy_options, ProxyPolicy proxy_policy)
      : options(std::move(proxy_options)),
        policy(std::move(proxy_policy)),
        upstream(options.host, options.port, true, options.tls, &io) {
    detail::beast::error_code ignored;
    inside.assign(tcp::v4(), fd, ignored);
    if (ignored) ::close(fd);
  }

  // One step on the client's socket within `timeout`; false when it failed or timed out.
  template <class Start>
  bool step(std::chrono::milliseconds timeout, Start&& start,
            detail::beast::error_code* error = nullptr) {
    const auto result =
        detail::run_until(io, Clock::now() + timeout, &stopping, std::forward<Start>(start), [&] {
          detail::beast::error_code ignored;
          inside.close(ignored);
        });
    if (!result) return false;
    if (error != nullptr) *error = *result;
    return !*result || *result == bhttp::error::need_buffer;
  }

  bool answer(const Response& response, bool keep_alive) {
    detail::write_head(response, keep_alive, false, head);
    const std::array<net::const_buffer, 2> buffers = {net::buffer(head),
                                                      net::buffer(response.body)};
    return step(options.idle_timeout,
                [&](auto handler) { net::async_write(inside, buffers, handler); }) &&
           keep_alive;
  }

  // Forwards one request and passes its answer back; false when the connection must end.
  bool forward(ProxyDecision& decision, bool keep_alive) {
    const auto started = Clock::now();
    ProxyOutcome outcome;
    detail::ClientConnection::Message message;
    message.version(11);
    message.method_string(method);
    message.target(decision.forward.target);
    for (const auto& [name, value] : decision.forward.headers) {
      if (!owned_by_proxy(name)) message.insert(name, value);
    }
    message.body() = std::move(decision.forward.body);
    message.prepare_payload();
    outcome.bytes_up = message.body().size();
    const auto end = [&](std::string error) {
      outcome.error = std::move(error);
      outcome.duration = proxy_elapsed(started);
      if (decision.call) decision.call->on_end(outcome);
    };
    detail::ClientConnection::StreamParser* parser = nullptr;
    try {
      parser = &upstream.start_stream(message, options.answer_timeout, &stopping);
    } catch (const Error& error) {
      end(error.code());
      return answer(error_response(error), keep_alive);
    }
    auto& answer_message = parser->get();
    outcome.status = static_cast<int>(answer_message.result_int());
    if (decision.call) {
      const auto type = answer_message[bhttp::field::content_type];
      decision.call->on_response(outcome.status, {type.data(), type.size()});
    }
    for (const auto* name : {"Connection", "Keep-Alive", "Proxy-Connection"}) {
      answer_message.erase(name);
    }
    answer_message.keep_alive(keep_alive);
    bhttp::serializer<false, bhttp::buffer_body> serializer(answer_message);
    if (!step(options.idle_timeout,
              [&](auto handler) { bhttp::async_write_header(inside, serializer, handler); })) {
      end("HTTP_CLIENT_CANCELLED");
      return false;
    }
    std::array<char, 16 * 1024> piece{};
    auto& body = answer_message.body();
    while (!serializer.is_done()) {
      if (!parser->is_done()) {
        body.data = piece.data();
        body.size = piece.size();
        try {
          upstream.read_some(options.stream_timeout, &stopping);
        } catch (const Error& error) {
          end(error.code());
          return false;
        }
        const auto got = piece.size() - body.size;
        body.data = piece.data();
        body.size = got;
        body.more = !parser->is_done();
        outcome.bytes_down += got;
        if (decision.call && got > 0) decision.call->on_body({piece.data(), got});
      } else {
        body.data = nullptr;
        body.size = 0;
        body.more = false;
      }
      if (!step(options.idle_timeout,
                [&](auto handler) { bhttp::async_write(inside, serializer, handler); })) {
        end("HTTP_CLIENT_CANCELLED");
        return false;
      }
    }
    upstream.finish_stream();
    end("");
    return keep_alive;
  }

  void serve() {
    detail::beast::flat_buffer buffer;
    for (;;) {
      bhttp::request_parser<bhttp::string_body> parser;
      parser.body_limit(options.max_body_bytes);
      parser.header_limit(options.max_header_bytes);
      detail::beast::error_code ec;
      if (!step(
              options.idle_timeout,
              [&](auto handler) { bhttp::async_read(inside, buffer, parser, handler); }, &ec)) {
        if (ec == bhttp::error::body_limit) {
          answer(error_response(Error(ErrorCode::REQUEST_SIZE_INVALID)), false);
        } else if (ec && ec != bhttp::error::end_of_stream && ec != net::error::eof &&
                   ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
          answer(error_response(Error(ErrorCode::REQUEST_INVALID)), false);
        }
        return;
      }
      auto request = parser.release();
      ProxyRequest read;
      const auto verb = request.method_string();
      read.method.assign(verb.data(), verb.size());
      read.target.assign(request.target().data(), request.target().size());
      for (const auto& field : request) {
        read.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
      read.body = std::move(request.body());
      const bool keep_alive = request.keep_alive();
      method = read.method;
      ProxyDecision decision = policy(read);
      const bool more =
          decision.answer ? answer(*decision.answer, keep_alive) : forward(decision, keep_alive);
      if (!more || stopping) return;
    }
  }

  ProxyOptions options;
  ProxyPolicy policy;
  std::atomic<bool> stopping{false};
  net::io_context io{1};
  tcp::socket inside{io};
  detail::ClientConnection upstream;
  std::string method;
  std::string head;
};

ProxyConnection::ProxyConnection(int fd, ProxyOptions options, ProxyPolicy policy)
    : impl_(std::make_unique<Impl>(fd, std::move(options), std::move(policy))) {}

ProxyConnection::~ProxyConnection() = default;

void ProxyConnection::serve() {
  impl_->serve();
  detail::beast::error_code ignored;
  impl_->inside.shutdown(tcp::socket::shutdown_both, ignored);
  impl_->inside.close(ignored);
}

void ProxyConnection::stop() {
  impl_->stopping = true;
}

}  // namespace aios::http
