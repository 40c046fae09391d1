// TLS on the http module's server and client: certificates made at test time, loopback sockets.
#include <gtest/gtest.h>

#include "http/http_test_support.hpp"
#include "support/certificates.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"

namespace aios::http {
namespace {

using namespace std::chrono_literals;
using testing::echo;
using testing::RawClient;
using testing::started;

// Answers what the server learned of the connection.
Response identity(const Request& request) {
  nlohmann::json uris = nlohmann::json::array();
  for (const auto& uri :
       request.client_certificate ? request.client_certificate->uris : std::vector<std::string>{}) {
    uris.push_back(uri);
  }
  return json_response(
      200, {{"tls", request.tls},
            {"resumed", request.tls_session_resumed},
            {"verifies_clients", request.verifies_clients},
            {"certificate", request.client_certificate ? request.client_certificate->sha256 : ""},
            {"uris", uris},
            {"port", request.remote_port}});
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_.write_certificate(dir_ / "ca.pem");
    other_ca_.write_certificate(dir_ / "other-ca.pem");
    server_ = ca_.issue(dir_.path(), "server", {.ips = {"127.0.0.1"}, .server = true});
    client_ = ca_.issue(dir_.path(), "client", {.uris = {"aios:agent:agent-a"}});
    expired_ =
        ca_.issue(dir_.path(), "expired",
                  {.uris = {"aios:agent:agent-a"}, .valid_from_days = -10, .valid_until_days = -1});
    stranger_ = other_ca_.issue(dir_.path(), "stranger", {.uris = {"aios:agent:agent-a"}});
  }

  ServerOptions tls_options(bool verify_clients) {
    ServerOptions options;
    options.tls = std::make_shared<TlsServerCredentials>(
        TlsServerFiles{server_.certificate, server_.key, verify_clients ? dir_ / "ca.pem" : ""});
    return options;
  }

  std::shared_ptr<TlsClientCredentials> client(const test::IssuedCertificate* shown = nullptr,
                                               const std::string& ca = "ca.pem") {
    return std::make_shared<TlsClientCredentials>(
        TlsClientFiles{dir_ / ca, shown ? shown->certificate : "", shown ? shown->key : ""});
  }

  static nlohmann::json get(std::uint16_t port, std::shared_ptr<TlsClientCredentials> tls) {
    Connection connection("127.0.0.1", port, 5s, std::move(tls));
    const auto response = connection.request("GET", "/x", "", "");
    EXPECT_EQ(response.status, 200) << response.body;
    return nlohmann::json::parse(response.body);
  }

  test::ScopedTempDir dir_{"aios-tls-test"};
  test::CertificateAuthority ca_{"aios test CA"};
  test::CertificateAuthority other_ca_{"another CA"};
  test::IssuedCertificate server_, client_, expired_, stranger_;
};

// Given TLS credentials, we should serve over TLS to a client that trusts the CA, and the
// handler should see a TLS connection without a client certificate.
TEST_F(TlsTest, ServesAClientThatTrustsTheCa) {
  const auto server = started(identity, tls_options(false));
  const auto seen = get(server->port(), client());
  EXPECT_TRUE(seen["tls"]);
  EXPECT_FALSE(seen["verifies_clients"]);
  EXPECT_EQ(seen["certificate"], "");
}

// Given a server whose certificate chains to another CA, or does not name the host, we
// should refuse the handshake on the client side with TLS_HANDSHAKE_FAILED.
TEST_F(TlsTest, ClientRefusesAServerItCannotVerify) {
  const auto server = started(identity, tls_options(false));
  EXPECT_EQ(test::code_of([&] { get(server->port(), client(nullptr, "other-ca.pem")); }),
            "TLS_HANDSHAKE_FAILED");
  const auto misnamed =
      ca_.issue(dir_.path(), "misnamed", {.dns = {"elsewhere.invalid"}, .server = true});
  ServerOptions options;
  options.tls = std::make_shared<TlsServerCredentials>(
      TlsServerFiles{misnamed.certificate, misnamed.key, ""});
  const auto wrong_name = started(identity, options);
  EXPECT_EQ(test::code_of([&] { get(wrong_name->port(), client()); }), "TLS_HANDSHAKE_FAILED");
}

// Given a plaintext request on a TLS listener, we should answer 400 TLS_PLAINTEXT_REQUEST in
// plaintext and never call the handler.
TEST_F(TlsTest, AnswersPlaintextWithItsCode) {
  std::atomic<int> calls{0};
  const auto server = started(
      [&](const Request& request) {
        ++calls;
        return echo(request);
      },
      tls_options(false));
  const auto response = request("GET", testing::url(server->port(), "/x"), "", "", 5s);
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body, R"({"error":"TLS_PLAINTEXT_REQUEST"})");
  EXPECT_EQ(calls.load(), 0);
}

// Given mutual TLS, we should hand the handler the client certificate's SHA-256 and URIs, and
// flag a connection without a certificate so the handler can refuse it.
TEST_F(TlsTest, ShowsTheVerifiedClientCertificate) {
  const auto server = started(identity, tls_options(true));
  const auto seen = get(server->port(), client(&client_));
  EXPECT_TRUE(seen["verifies_clients"]);
  EXPECT_EQ(seen["certificate"], client_.sha256);
  EXPECT_EQ(seen["uris"], nlohmann::json::array({"aios:agent:agent-a"}));
  const auto anonymous = get(server->port(), client());
  EXPECT_TRUE(anonymous["verifies_clients"]);
  EXPECT_EQ(anonymous["certificate"], "");
}

// Given an expired client certificate or one from another CA, we should refuse every request
// on the connection with its code before the handler runs.
TEST_F(TlsTest, RefusesExpiredAndUntrustedClientCertificates) {
  std::atomic<int> calls{0};
  const auto server = started(
      [&](const Request& request) {
        ++calls;
        return identity(request);
      },
      tls_options(true));
  for (const auto& [shown, code] : {std::pair{&expired_, "TLS_CLIENT_CERTIFICATE_EXPIRED"},
                                    std::pair{&stranger_, "TLS_CLIENT_CERTIFICATE_UNTRUSTED"}}) {
    SCOPED_TRACE(code);
    Connection connection("127.0.0.1", server->port(), 5s, client(shown));
    const auto response = connection.request("POST", "/x", "", R"({"a":1})");
    EXPECT_EQ(response.status, 401);
    EXPECT_EQ(response.body, std::string(R"({"error":")") + code + "\"}");
  }
  EXPECT_EQ(calls.load(), 0);
}

// Given a client that connected once, we should resume its session on the next connection
// (no full handshake), and keep one connection for consecutive requests of a SystemTransport.
TEST_F(TlsTest, ResumesSessionsAndKeepsConnectionsAlive) {
  const auto server = started(identity, tls_options(true));
  const auto credentials = client(&client_);
  EXPECT_FALSE(get(server->port(), credentials)["resumed"]);
  const auto again = get(server->port(), credentials);
  EXPECT_TRUE(again["resumed"]);
  EXPECT_EQ(again["certificate"], client_.sha256);  // kept across resumption

  SystemTransport transport(credentials);
  const auto address = "https://127.0.0.1:" + std::to_string(server->port()) + "/x";
  const auto first = nlohmann::json::parse(transport.request("GET", address, "", "", 5s).body);
  const auto second = nlohmann::json::parse(transport.request("POST", address, "", "{}", 5s).body);
  EXPECT_EQ(first["port"], second["port"]);  // one connection
  EXPECT_EQ(server->connections(), 1u);
}

// Given a reload with new files, we should serve new connections with the new certificate
// while an open connection goes on with the one it was accepted with.
TEST_F(TlsTest, ReloadServesNewConnectionsWithTheNewCertificate) {
  auto options = tls_options(false);
  const auto credentials = options.tls;
  const auto server = started(identity, options);
  Connection kept("127.0.0.1", server->port(), 5s, client());
  EXPECT_EQ(kept.request("GET", "/x", "", "").status, 200);

  const test::CertificateAuthority next_ca("next CA");
  next_ca.write_certificate(dir_ / "next-ca.pem");
  const auto next = next_ca.issue(dir_.path(), "next", {.ips = {"127.0.0.1"}, .server = true});
  std::filesystem::copy_file(next.certificate, server_.certificate,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(next.key, server_.key,
                             std::filesystem::copy_options::overwrite_existing);
  credentials->reload();

  EXPECT_EQ(kept.request("GET", "/x", "", "").status, 200);
  EXPECT_TRUE(get(server->port(), client(nullptr, "next-ca.pem"))["tls"]);
  EXPECT_EQ(test::code_of([&] { get(server->port(), client()); }), "TLS_HANDSHAKE_FAILED");

  // A reload that fails keeps what is served.
  test::write_text_file(server_.key, "not a key\n");
  EXPECT_EQ(test::code_of([&] { credentials->reload(); }), "TLS_CREDENTIALS_INVALID");
  EXPECT_TRUE(get(server->port(), client(nullptr, "next-ca.pem"))["tls"]);
}

// Given a peer that connects and never completes the handshake, we should close it at the
// handshake timeout, and count it against the connection caps meanwhile.
TEST_F(TlsTest, StalledHandshakesAreBoundedAndCounted) {
  auto options = tls_options(false);
  options.handshake_timeout = 300ms;
  options.max_connections_per_peer = 1;
  const auto server = started(identity, options);
  RawClient stalled(server->port(), 5s);
  RawClient second(server->port(), 5s);
  EXPECT_TRUE(second.read_to_eof());
  EXPECT_NE(second.received().find("HTTP_CONNECTION_LIMIT"), std::string::npos);
  const auto started_at = std::chrono::steady_clock::now();
  EXPECT_TRUE(stalled.read_to_eof());  // closed by the server, not by the 5 s receive timeout
  EXPECT_LT(std::chrono::steady_clock::now() - started_at, 3s);
}

// Given a request and an answer larger than a TLS record, we should carry each whole.
TEST_F(TlsTest, CarriesMessagesLargerThanARecordWhole) {
  const auto server = started(
      [](const Request& request) {
        Response response;
        response.body = std::string(200000, 'x') + std::to_string(request.body.size());
        response.content_type = "text/plain";
        return response;
      },
      tls_options(false));
  Connection connection("127.0.0.1", server->port(), 5s, client());
  const std::string large(300000, 'y');
  EXPECT_EQ(connection.request("POST", "/x", "", large).body, std::string(200000, 'x') + "300000");
  EXPECT_EQ(connection.request("GET", "/x", "", "").body.size(), 200001u);  // kept alive
}

// Given credential files that are missing, not PEM, a key readable by every user or a key of
// another certificate, we should refuse them with TLS_CREDENTIALS_INVALID.
TEST_F(TlsTest, RefusesBadCredentialFiles) {
  const auto server_files = [&](std::filesystem::path certificate, std::filesystem::path key) {
    return [=] { TlsServerCredentials credentials({certificate, key, ""}); };
  };
  EXPECT_EQ(test::code_of(server_files(dir_ / "missing.pem", server_.key)),
            "TLS_CREDENTIALS_INVALID");
  test::write_text_file(dir_ / "junk.pem", "junk\n");
  EXPECT_EQ(test::code_of(server_files(dir_ / "junk.pem", server_.key)), "TLS_CREDENTIALS_INVALID");
  EXPECT_EQ(test::code_of(server_files(server_.certificate, client_.key)),
            "TLS_CREDENTIALS_INVALID");
  std::filesystem::permissions(server_.key, std::filesystem::perms::others_read,
                               std::filesystem::perm_options::add);
  EXPECT_EQ(test::code_of(server_files(server_.certificate, server_.key)),
            "TLS_CREDENTIALS_INVALID");
  EXPECT_EQ(test::code_of([&] {
              TlsClientCredentials credentials({dir_ / "ca.pem", client_.certificate, ""});
            }),
            "TLS_CREDENTIALS_INVALID");
}

// Given several hosts, we should listen on each, on one port.
TEST_F(TlsTest, ListensOnSeveralAddressesOnOnePort) {
  auto options = tls_options(false);
  options.host = "127.0.0.1,127.0.0.2";
  const auto server = started(identity, options);
  const auto credentials = client();
  EXPECT_TRUE(get(server->port(), credentials)["tls"]);
  Connection second("127.0.0.2", server->port(), 5s, credentials);
  // The server's certificate names 127.0.0.1 only: reaching it proves the listener is there.
  EXPECT_EQ(test::code_of([&] { second.request("GET", "/x", "", ""); }), "TLS_HANDSHAKE_FAILED");
}

}  // namespace
}  // namespace aios::http
