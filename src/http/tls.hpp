#pragma once
// The OpenSSL side of TlsServerCredentials and TlsClientCredentials: building contexts from PEM
// files, what a server learns of a client's certificate after the handshake, and the client's
// per-connection set-up (server name, verification, a remembered session). Internal to
// src/http.

#include <openssl/ssl.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "aios/http.hpp"
#include "http/beast.hpp"

namespace aios::http {

namespace ssl = detail::ssl;

struct TlsServerCredentials::Impl {
  mutable std::mutex mutex;
  std::shared_ptr<ssl::context> context;  // replaced whole by reload()

  // The context a connection accepted now is served with; it lives as long as that connection.
  std::shared_ptr<ssl::context> current() const {
    const std::lock_guard lock(mutex);
    return context;
  }
};

struct TlsClientCredentials::Impl {
  explicit Impl(const TlsClientFiles& files);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  ssl::context context;
  bool pinned = false;  // TlsClientFiles::pinned: no name is checked
  // The last session each host:port gave this process, offered again on the next connection
  // to it (an abbreviated handshake instead of a full one).
  std::mutex mutex;
  std::map<std::string, SSL_SESSION*> sessions;
};

namespace detail {

// Builds a server context from `files`. Throws TLS_CREDENTIALS_INVALID.
std::shared_ptr<ssl::context> server_context(const TlsServerFiles& files);

// What a listener that asks for client certificates learned in one handshake: the verified
// certificate, or the refusal each request on the connection gets instead of an answer.
struct ClientIdentity {
  std::optional<ClientCertificate> certificate;
  std::optional<ErrorCode> refusal;
};
ClientIdentity client_identity(SSL* ssl);

// Prepares a client connection's `ssl` for `host` (SNI for names, the certificate's name or IP
// address checked) and offers the session last remembered under `session_key`, under which the
// session the server hands out is remembered in turn. `session_key` must outlive `ssl`.
void prepare_client(TlsClientCredentials::Impl& credentials, SSL* ssl, const std::string& host,
                    const std::string& session_key);

// Why the server's certificate was refused (the client side of a failed handshake), or "".
std::string server_verification_error(SSL* ssl);

}  // namespace detail
}  // namespace aios::http
