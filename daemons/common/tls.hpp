#pragma once
// TLS for the daemons that listen (the scheduler, the rebind service): the options naming their
// certificate, key and client CA (files: under systemd, credentials, LoadCredential= and
// %d/<name>; never the PEM itself on the command line or in the environment), the reload on
// SIGHUP, and the watchdog's health check of a TLS listener.

#include <signal.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "aios/http.hpp"
#include "aios/log.hpp"
#include "lifecycle.hpp"
#include "signals.hpp"

namespace aios::daemon {

struct TlsListenerFlags {
  std::string certificate;
  std::string key;
  std::string client_ca;
  std::vector<std::string> allowed_hosts;

  void add_to(CLI::App& app) {
    app.add_option("--tls-certificate-file", certificate,
                   "TLS: the listeners' certificate chain (PEM, leaf first). With it (and the "
                   "key) the listeners speak TLS only and may take network addresses")
        ->envname("AIOS_TLS_CERTIFICATE_FILE");
    app.add_option("--tls-key-file", key,
                   "TLS: the certificate's private key (PEM, not readable by every user)")
        ->envname("AIOS_TLS_KEY_FILE");
    app.add_option("--tls-client-ca-file", client_ca,
                   "Mutual TLS: the CA bundle (PEM) client certificates must chain to; every "
                   "agent request must then come with the certificate recorded for its agent")
        ->envname("AIOS_TLS_CLIENT_CA_FILE");
    app.add_option("--allowed-hosts", allowed_hosts,
                   "Names (and IP literals) a request's Host header may carry besides loopback "
                   "ones and the listeners' own addresses, comma-separated: what remote callers "
                   "of a TLS listener use. Any other Host is answered 421 HTTP_HOST_NOT_ALLOWED")
        ->delimiter(',')
        ->envname("AIOS_ALLOWED_HOSTS");
  }

  // The credentials the options name, or nullptr when none is named. TLS_CREDENTIALS_INVALID
  // when a client CA comes without a certificate and key, or a file does not load.
  std::shared_ptr<http::TlsServerCredentials> load() const {
    if (certificate.empty() && key.empty() && client_ca.empty()) return nullptr;
    return std::make_shared<http::TlsServerCredentials>(
        http::TlsServerFiles{certificate, key, client_ca});
  }
};

inline void add_remote_owner_flag(CLI::App& app, bool& remote_owner) {
  app.add_flag("--allow-remote-owner", remote_owner,
               "Honour the owner's control token from peers that are not loopback (a TLS "
               "listener on a network address); refused with OWNER_NOT_LOOPBACK otherwise")
      ->envname("AIOS_ALLOW_REMOTE_OWNER");
}

// Waits for SIGTERM or SIGINT and returns it. Each SIGHUP meanwhile reloads `tls` (when set):
// new connections get the files as they are now, open ones keep theirs, and a reload that
// fails keeps what is served.
inline int wait_reloading(const TerminationSignals& signals, http::TlsServerCredentials* tls) {
  for (;;) {
    const int signal = signals.wait();
    if (signal != SIGHUP) return signal;
    if (tls == nullptr) {
      log::info("RELOAD_IGNORED", {{"reason", "no TLS credentials to reload"}});
      continue;
    }
    try {
      tls->reload();
      log::info("TLS_CREDENTIALS_RELOADED");
    } catch (const Error& error) {
      log::error("TLS_RELOAD_FAILED", {{"error", error.code()}, {"detail", error.detail()}});
    }
  }
}

// The watchdog's check of a listener on `hosts` (the first one is asked): over TLS when
// `certificate` names the listener's certificate, which the check then trusts as it is.
inline bool answers_health(const std::string& hosts, std::uint16_t port,
                           const std::string& certificate) {
  const std::string host = hosts.substr(0, hosts.find(','));
  if (certificate.empty()) return answers_health(host, port);
  try {
    return answers_health(host, port,
                          std::make_shared<http::TlsClientCredentials>(
                              http::TlsClientFiles{certificate, "", "", true}));
  } catch (const Error&) {
    return false;
  }
}

}  // namespace aios::daemon
