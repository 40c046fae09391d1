// TLS contexts from PEM files, the client certificate a server was shown, and the client's
// remembered sessions.
#include "http/tls.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "aios/canonical.hpp"

namespace aios::http {
namespace {

namespace fs = std::filesystem;
namespace net = detail::net;
namespace beast = detail::beast;

// A certificate chain, a CA bundle or a key: larger files are not credentials.
constexpr std::size_t kMaxPemBytes = 1024 * 1024;
// What a handler is shown of a certificate's subjectAltName URIs.
constexpr int kMaxUris = 16;
constexpr std::size_t kMaxUriBytes = 1024;
// Remembered sessions, one per host:port a process talks to.
constexpr std::size_t kMaxSessions = 256;
// TLS 1.2: forward-secret key exchange and AEAD ciphers only (TLS 1.3's suites are all such).
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
// How long a server's session ticket may be offered again: a resumption skips the certificate
// check, so it is bounded well below a certificate's life.
constexpr long kSessionSeconds = 3600;

// Verification failures seen in one handshake (the SSL's ex_data).
constexpr std::uintptr_t kExpired = 1;
constexpr std::uintptr_t kUntrusted = 2;

[[noreturn]] void invalid(const fs::path& path, std::string_view why) {
  ERR_clear_error();
  throw Error(ErrorCode::TLS_CREDENTIALS_INVALID, path.string() + ": " + std::string(why));
}

std::string read_pem(const fs::path& path, bool private_key) {
  if (path.empty()) throw Error(ErrorCode::TLS_CREDENTIALS_INVALID, "a TLS file is not named");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) invalid(path, std::strerror(errno));
  std::string content;
  struct stat info {};
  const bool regular = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  const auto size = static_cast<std::size_t>(info.st_size);
  if (regular && size <= kMaxPemBytes &&
      !(private_key && (info.st_mode & (S_IRWXG | S_IRWXO)) != 0)) {
    content.resize(size);
    std::size_t got = 0;
    ssize_t n = 0;
    while (got < size && (n = ::read(fd, content.data() + got, size - got)) > 0) {
      got += static_cast<std::size_t>(n);
    }
    content.resize(got);
  }
  ::close(fd);
  if (!regular) invalid(path, "not a regular file");
  if (size > kMaxPemBytes) invalid(path, "larger than 1 MiB");
  if (private_key && (info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    invalid(path, "the private key grants its group or every user access (chmod 600 it)");
  }
  return content;
}

template <typename Step>
void with_openssl(const fs::path& path, Step step) {
  try {
    step();
  } catch (const boost::system::system_error& error) {
    invalid(path, error.code().message());
  }
}

void harden(ssl::context& context) {
  context.set_options(ssl::context::default_workarounds | ssl::context::no_compression);
  SSL_CTX* native = context.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_cipher_list(native, kTls12Ciphers);
}

void use_identity(ssl::context& context, const fs::path& certificate, const fs::path& key) {
  const auto chain = read_pem(certificate, false);
  const auto pem_key = read_pem(key, true);
  with_openssl(certificate, [&] { context.use_certificate_chain(net::buffer(chain)); });
  with_openssl(key, [&] { context.use_private_key(net::buffer(pem_key), ssl::context::pem); });
  if (SSL_CTX_check_private_key(context.native_handle()) != 1) {
    invalid(key, "the private key is not the certificate's");
  }
}

void trust(ssl::context& context, const fs::path& authorities) {
  const auto pem = read_pem(authorities, false);
  with_openssl(authorities, [&] { context.add_certificate_authority(net::buffer(pem)); });
}

int verify_flags_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// asio keeps its own verify callback in the SSL_CTX's app data, so ours has an index of its own.
int credentials_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

int session_key_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

std::uintptr_t flag_of(long verify_error) {
  return verify_error == X509_V_ERR_CERT_HAS_EXPIRED ||
                 verify_error == X509_V_ERR_CERT_NOT_YET_VALID
             ? kExpired
             : kUntrusted;
}

// The handshake goes on whatever the client's certificate is, so that the refusal reaches the
// client as an HTTP answer with its code; what failed is noted for client_identity.
int note_verify_error(int preverify_ok, X509_STORE_CTX* store) {
  if (preverify_ok == 1) return 1;
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  if (ssl != nullptr) {
    const auto seen = reinterpret_cast<std::uintptr_t>(SSL_get_ex_data(ssl, verify_flags_index()));
    const auto flags = seen | flag_of(X509_STORE_CTX_get_error(store));
    SSL_set_ex_data(ssl, verify_flags_index(), reinterpret_cast<void*>(flags));
  }
  return 1;
}

int remember_session(SSL* ssl, SSL_SESSION* session) {
  const auto* key = static_cast<const std::string*>(SSL_get_ex_data(ssl, session_key_index()));
  auto* credentials = static_cast<TlsClientCredentials::Impl*>(
      SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), credentials_index()));
  if (key == nullptr || credentials == nullptr) return 0;
  const std::lock_guard lock(credentials->mutex);
  auto& sessions = credentials->sessions;
  if (sessions.size() >= kMaxSessions && !sessions.contains(*key)) {
    for (auto& [name, kept] : sessions) SSL_SESSION_free(kept);
    sessions.clear();
  }
  auto& slot = sessions[*key];
  if (slot != nullptr) SSL_SESSION_free(slot);
  slot = session;
  return 1;  // the reference is the cache's now
}

std::vector<std::string> uris_of(X509* certificate) {
  std::vector<std::string> uris;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return uris;
  const int count = sk_GENERAL_NAME_num(names);
  for (int i = 0; i < count && static_cast<int>(uris.size()) < kMaxUris; ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_URI) continue;
    const ASN1_STRING* text = name->d.uniformResourceIdentifier;
    const auto length = static_cast<std::size_t>(ASN1_STRING_length(text));
    if (length == 0 || length > kMaxUriBytes) continue;
    uris.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)), length);
  }
  GENERAL_NAMES_free(names);
  return uris;
}

std::string der_sha256(X509* certificate) {
  const int length = i2d_X509(certificate, nullptr);
  if (length <= 0) return {};
  std::string der(static_cast<std::size_t>(length), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_X509(certificate, &out);
  return sha256_hex(der);
}

}  // namespace

// --- Server ----------------------------------------------------------------------------------

std::shared_ptr<ssl::context> detail::server_context(const TlsServerFiles& files) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  harden(*context);
  use_identity(*context, files.certificate, files.private_key);
  SSL_CTX* native = context->native_handle();
  // Resumption with client certificates needs a session context; without one OpenSSL fails
  // the resuming handshake.
  static constexpr unsigned char kSessionContext[] = "aios-http";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
  SSL_CTX_set_num_tickets(native, 1);
  SSL_CTX_set_timeout(native, kSessionSeconds);
  if (!files.client_ca.empty()) {
    trust(*context, files.client_ca);
    SSL_CTX_set_verify(native, SSL_VERIFY_PEER, note_verify_error);
  }
  return context;
}

detail::ClientIdentity detail::client_identity(SSL* ssl) {
  X509* certificate = SSL_get0_peer_certificate(ssl);
  if (certificate == nullptr) return {};
  auto flags = reinterpret_cast<std::uintptr_t>(SSL_get_ex_data(ssl, verify_flags_index()));
  // A resumed session was not verified again: its stored result stands, and the certificate's
  // dates are checked now, since it may have expired since.
  if (SSL_session_reused(ssl) == 1 && SSL_get_verify_result(ssl) != X509_V_OK) {
    flags |= flag_of(SSL_get_verify_result(ssl));
  }
  if (X509_cmp_current_time(X509_get0_notAfter(certificate)) <= 0 ||
      X509_cmp_current_time(X509_get0_notBefore(certificate)) >= 0) {
    flags |= kExpired;
  }
  if ((flags & kUntrusted) != 0) return {{}, ErrorCode::TLS_CLIENT_CERTIFICATE_UNTRUSTED};
  if ((flags & kExpired) != 0) return {{}, ErrorCode::TLS_CLIENT_CERTIFICATE_EXPIRED};
  return {ClientCertificate{der_sha256(certificate), uris_of(certificate)}, std::nullopt};
}

TlsServerCredentials::TlsServerCredentials(TlsServerFiles files)
    : files_(std::move(files)), impl_(std::make_unique<Impl>()) {
  impl_->context = detail::server_context(files_);
}

TlsServerCredentials::~TlsServerCredentials() = default;

void TlsServerCredentials::reload() {
  auto fresh = detail::server_context(files_);
  const std::lock_guard lock(impl_->mutex);
  impl_->context = std::move(fresh);
}

// --- Client ----------------------------------------------------------------------------------

TlsClientCredentials::Impl::Impl(const TlsClientFiles& files) : context(ssl::context::tls_client) {
  harden(context);
  context.set_verify_mode(ssl::verify_peer);
  if (files.ca_bundle.empty()) {
    with_openssl("the system's CA store", [&] { context.set_default_verify_paths(); });
  } else {
    trust(context, files.ca_bundle);
  }
  pinned = files.pinned;
  if (pinned) {
    // The pinned certificate is an anchor of its own, not the end of a chain to a root.
    X509_STORE_set_flags(SSL_CTX_get_cert_store(context.native_handle()),
                         X509_V_FLAG_PARTIAL_CHAIN);
  }
  if (!files.certificate.empty() || !files.private_key.empty()) {
    if (files.certificate.empty() || files.private_key.empty()) {
      throw Error(ErrorCode::TLS_CREDENTIALS_INVALID,
                  "a client certificate needs both its certificate and its private key");
    }
    use_identity(context, files.certificate, files.private_key);
  }
  SSL_CTX* native = context.native_handle();
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(native, remember_session);
  SSL_CTX_set_ex_data(native, credentials_index(), this);
}

TlsClientCredentials::Impl::~Impl() {
  for (auto& [key, session] : sessions) SSL_SESSION_free(session);
}

TlsClientCredentials::TlsClientCredentials(TlsClientFiles files)
    : impl_(std::make_unique<Impl>(files)) {}

TlsClientCredentials::~TlsClientCredentials() = default;

void detail::prepare_client(TlsClientCredentials::Impl& credentials, SSL* ssl,
                            const std::string& host, const std::string& session_key) {
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (credentials.pinned) return;
  beast::error_code not_an_address;
  net::ip::make_address(host, not_an_address);
  if (!not_an_address) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    // SSL_set_tlsext_host_name, without the macro's C cast.
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(host.c_str()));
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    SSL_set1_host(ssl, host.c_str());
  }
  SSL_set_ex_data(ssl, session_key_index(), const_cast<std::string*>(&session_key));
  const std::lock_guard lock(credentials.mutex);
  if (const auto found = credentials.sessions.find(session_key);
      found != credentials.sessions.end()) {
    SSL_set_session(ssl, found->second);
  }
}

std::string detail::server_verification_error(SSL* ssl) {
  const long result = SSL_get_verify_result(ssl);
  return result == X509_V_OK ? std::string() : X509_verify_cert_error_string(result);
}

}  // namespace aios::http
