// The real scheduler with its Task API and Bridge over mutual TLS on loopback: agents bound to
// client certificates, every refusal with its code, the owner held to loopback, and a reload of
// the server certificate on SIGHUP while connections stay open.
#include <signal.h>

#include "remote/remote_fixture.hpp"

namespace aios::remote_test {
namespace {

using taskapi_test::ApiClient;
using taskapi_test::Json;
using taskapi_test::require;

class TlsApiTest : public TlsSchedulerTest {
 protected:
  // A client of the Task API (or of `port`) as `token`, showing `shown` (none: no certificate).
  ApiClient as(const std::string& token, const test::IssuedCertificate* shown,
               std::uint16_t on = 0) {
    return ApiClient(on != 0 ? on : port(), token, tls_client(shown));
  }

  std::string bound_agent(const std::string& agent_id, const Json& binding) {
    return require(owner().post("/v1/agents", {{"agent_id", agent_id},
                                               {"granted_capabilities", {"git.read"}},
                                               {"client_certificate", binding}}),
                   201, "create " + agent_id)
        .at("token");
  }

  static Json register_body(const std::string& worker_id) {
    return {{"worker_id", worker_id}, {"capabilities", {"git.read"}}};
  }
};

// Given agents bound to client certificates (by URI at creation, by fingerprint afterwards), we
// should serve each with its own certificate and refuse every other way in with its code.
TEST_F(TlsApiTest, AgentsMustShowTheirOwnCertificate) {
  const auto token_a = bound_agent("agent-a", {{"uri", "aios:agent:agent-a"}});
  const auto token_b = create_agent("agent-b", Json::array({"git.read"}));
  const auto bound = require(owner().post("/v1/agents/agent-b/client-certificate",
                                          {{"sha256", fingerprint(pki().agent_b)}}),
                             200, "bind agent-b");
  EXPECT_EQ(bound.at("client_certificate").at("sha256"), fingerprint(pki().agent_b));
  const auto token_c = create_agent("agent-c", Json::array({"git.read"}));  // none recorded

  EXPECT_EQ(as(token_a, &pki().agent_a).post("/v1/workers/register", register_body("w-a")).status,
            200);
  EXPECT_EQ(as(token_b, &pki().agent_b).post("/v1/workers/register", register_body("w-b")).status,
            200);
  const struct {
    const std::string& token;
    const test::IssuedCertificate* shown;
    int status;
    const char* code;
  } refused[] = {
      {token_a, nullptr, 401, "TLS_CLIENT_CERTIFICATE_REQUIRED"},
      {token_a, &pki().agent_b, 403, "AGENT_CERTIFICATE_MISMATCH"},
      {token_b, &pki().agent_a, 403, "AGENT_CERTIFICATE_MISMATCH"},
      {token_a, &pki().expired, 401, "TLS_CLIENT_CERTIFICATE_EXPIRED"},
      {token_a, &pki().stranger, 401, "TLS_CLIENT_CERTIFICATE_UNTRUSTED"},
      {token_c, &pki().agent_a, 403, "AGENT_CERTIFICATE_MISMATCH"},
      {token_c, nullptr, 401, "TLS_CLIENT_CERTIFICATE_REQUIRED"},
  };
  for (const auto& c : refused) {
    SCOPED_TRACE(c.code);
    for (const auto on : {port(), scheduler().bridge_port()}) {
      auto client = as(c.token, c.shown, on);
      const auto reply = on == port()
                             ? client.post("/v1/workers/register", register_body("w-x"))
                             : client.post("/v2/execution-envelope", {{"task_id", "t-none"}});
      EXPECT_EQ(reply.status, c.status) << taskapi_test::describe(reply);
      EXPECT_EQ(reply.code(), c.code);
    }
  }
  // The worker refused above was never registered.
  for (const auto& worker : fleet_workers()) EXPECT_NE(worker.at("worker_id"), "w-x");
}

// Given a client that does not trust the scheduler's CA, or one speaking plaintext, we should
// see the handshake fail on the client and plaintext refused by the server.
TEST_F(TlsApiTest, RefusesPlaintextAndIsRefusedByAStrangerCa) {
  http::Connection plaintext("127.0.0.1", port(), std::chrono::seconds(5));
  const auto answer = plaintext.request("GET", "/health", "", "");
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.body, R"({"error":"TLS_PLAINTEXT_REQUEST"})");
  auto stranger = std::make_shared<http::TlsClientCredentials>(
      http::TlsClientFiles{pki().dir / "other-ca.pem"});
  http::Connection distrusting("127.0.0.1", port(), std::chrono::seconds(5), stranger);
  EXPECT_EQ(test::code_of([&] { distrusting.request("GET", "/health", "", ""); }),
            "TLS_HANDSHAKE_FAILED");
}

// Given a malformed certificate binding, we should refuse it with its code and record nothing.
TEST_F(TlsApiTest, RefusesMalformedBindings) {
  for (const auto& binding :
       {Json{{"sha256", "abc"}}, Json{{"uri", ""}}, Json{{"uri", "no scheme"}},
        Json{{"uri", "aios:agent:x"}, {"serial", "1"}}, Json("aios:agent:x"), Json{{"uri", 7}}}) {
    SCOPED_TRACE(binding.dump());
    const auto reply = owner().post("/v1/agents", {{"agent_id", "agent-bad"},
                                                   {"granted_capabilities", {"git.read"}},
                                                   {"client_certificate", binding}});
    EXPECT_EQ(reply.code(), "AGENT_CERTIFICATE_BINDING_INVALID");
  }
  EXPECT_EQ(owner().post("/v1/agents/agent-none/client-certificate", {{"uri", "aios:x"}}).code(),
            "AGENT_NOT_FOUND");
  // Colons and upper case, as openssl prints a fingerprint, are stored as plain lower hex.
  std::string printed;
  for (std::size_t i = 0; i < 64; i += 2) {
    printed += (i ? ":" : "") + fingerprint(pki().agent_a).substr(i, 2);
  }
  std::transform(printed.begin(), printed.end(), printed.begin(), ::toupper);
  const auto token = bound_agent("agent-printed", {{"sha256", printed}});
  EXPECT_EQ(as(token, &pki().agent_a).post("/v1/workers/register", register_body("w-p")).status,
            200);
}

// Given SIGHUP after the certificate files changed, we should serve new connections with the
// new certificate while an open connection goes on, and log the reload.
TEST_F(TlsApiTest, ReloadsTheServerCertificateOnSighup) {
  auto kept = ApiClient(port(), scheduler().control_token(), tls_client(nullptr));
  ASSERT_EQ(kept.get("/v1/fleet").status, 200);
  const test::CertificateAuthority next("next CA");
  next.write_certificate(pki().dir / "next-ca.pem");
  renew_server_certificate(next);
  EXPECT_EQ(kept.get("/v1/fleet").status, 200);  // the open connection keeps its session
  auto trusts_next =
      std::make_shared<http::TlsClientCredentials>(http::TlsClientFiles{pki().dir / "next-ca.pem"});
  EXPECT_EQ(ApiClient(port(), scheduler().control_token(), trusts_next).get("/v1/fleet").status,
            200);
  EXPECT_EQ(ApiClient(scheduler().bridge_port(), scheduler().control_token(), trusts_next)
                .get("/health")
                .status,
            200);
  EXPECT_EQ(test::code_of([&] {
              ApiClient(port(), scheduler().control_token(), tls_client(nullptr)).get("/health");
            }),
            "TLS_HANDSHAKE_FAILED");
}

// Given a non-loopback address without TLS, we should refuse to start with its code.
TEST(SchedulerStartup, RefusesPlaintextOnANetworkAddress) {
  test::ScopedTempDir dir("aios-plaintext");
  test::write_token_file(dir / "token");
  test::DaemonOptions options;
  options.binary = test::scheduler_binary();
  options.args = {"--db",
                  (dir / "state.sqlite3").string(),
                  "--control-token-file",
                  (dir / "token").string(),
                  "--api-host",
                  "127.0.0.1,192.0.2.1"};
  test::Daemon daemon(options, dir.path(), "plaintext");
  daemon.spawn();
  const auto status = daemon.wait_exit(std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value()) << daemon.log();
  EXPECT_TRUE(status->exited_with(69)) << status->describe();
  const auto line = daemon.find_event("START_FAILED");
  ASSERT_TRUE(line.has_value()) << daemon.log();
  EXPECT_EQ(line->at("error"), "HTTP_PLAINTEXT_NOT_LOOPBACK");
}

}  // namespace
}  // namespace aios::remote_test
