#pragma once
// The scheduler over mutual TLS, for the remote-worker suites: certificates made at test time
// (a CA, the server's for loopback and the test network's address, two agents' client
// certificates, an expired one and one from another CA) and a fresh scheduler per test whose
// listeners speak TLS only and ask for client certificates.

#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "support/certificates.hpp"
#include "support/code_of.hpp"
#include "taskapi/client.hpp"

namespace aios::remote_test {

// The address of the control-plane end of the test network (TEST-NET-1, RFC 5737: documentation
// addresses, never routed; the network exists only between namespaces the test makes).
inline constexpr const char* kControlPlaneAddress = "192.0.2.1";
inline constexpr const char* kWorkerHostAddress = "192.0.2.2";

inline test::CertificateSpec server_spec() {
  return {.ips = {"127.0.0.1", kControlPlaneAddress}, .server = true};
}

struct Pki {
  std::filesystem::path dir;
  test::IssuedCertificate server, agent_a, agent_b, expired, stranger;
};

class TlsSchedulerTest : public taskapi_test::SchedulerTest {
 protected:
  TlsSchedulerTest() {
    ca_.write_certificate(pki_.dir / "ca.pem");
    other_ca_.write_certificate(pki_.dir / "other-ca.pem");
    pki_.server = ca_.issue(pki_.dir, "server", server_spec());
    pki_.agent_a = ca_.issue(pki_.dir, "agent-a", {.uris = {"aios:agent:agent-a"}});
    pki_.agent_b = ca_.issue(pki_.dir, "agent-b", {.uris = {"aios:agent:agent-b"}});
    pki_.expired =
        ca_.issue(pki_.dir, "expired",
                  {.uris = {"aios:agent:agent-a"}, .valid_from_days = -10, .valid_until_days = -1});
    pki_.stranger = other_ca_.issue(pki_.dir, "stranger", {.uris = {"aios:agent:agent-a"}});
  }

  // Where both listeners listen (one port each for all addresses).
  virtual std::string listen_hosts() const { return "127.0.0.1"; }

  test::SchedulerConfig config() const override {
    test::SchedulerConfig result;
    result.extra_args = {"--api-host",
                         listen_hosts(),
                         "--bridge-host",
                         listen_hosts(),
                         "--tls-certificate-file",
                         pki_.server.certificate.string(),
                         "--tls-key-file",
                         pki_.server.key.string(),
                         "--tls-client-ca-file",
                         (pki_.dir / "ca.pem").string(),
                         "--verification-executables",
                         "/usr/bin/true,/usr/bin/test"};
    return result;
  }

  std::shared_ptr<http::TlsClientCredentials> client_tls() const override {
    return tls_client(nullptr);
  }

  // A client's credentials: the test CA, and `shown` as its certificate (none: nullptr).
  std::shared_ptr<http::TlsClientCredentials> tls_client(
      const test::IssuedCertificate* shown) const {
    return std::make_shared<http::TlsClientCredentials>(
        http::TlsClientFiles{pki_.dir / "ca.pem", shown != nullptr ? shown->certificate : "",
                             shown != nullptr ? shown->key : ""});
  }

  // Replaces the server's certificate and key files with a new pair `issuer` signs, reloads
  // them with SIGHUP and waits for the scheduler to say so; returns the new pair.
  test::IssuedCertificate renew_server_certificate(const test::CertificateAuthority& issuer) {
    const auto renewed = issuer.issue(pki_.dir, "renewed", server_spec());
    std::filesystem::copy_file(renewed.certificate, pki_.server.certificate,
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(renewed.key, pki_.server.key,
                               std::filesystem::copy_options::overwrite_existing);
    ::kill(scheduler().process().pid(), SIGHUP);
    if (!scheduler().process().wait_for_event("TLS_CREDENTIALS_RELOADED",
                                              std::chrono::seconds(10))) {
      throw std::runtime_error("no reload\n" + scheduler().process().log());
    }
    return renewed;
  }

  const Pki& pki() const { return pki_; }
  const test::CertificateAuthority& ca() const { return ca_; }
  static const std::string& fingerprint(const test::IssuedCertificate& issued) {
    return issued.sha256;
  }

 private:
  test::ScopedTempDir dir_{"aios-pki"};
  test::CertificateAuthority ca_{"aios test CA"};
  test::CertificateAuthority other_ca_{"another CA"};
  Pki pki_{dir_.path(), {}, {}, {}, {}, {}};
};

}  // namespace aios::remote_test
