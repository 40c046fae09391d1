#include <CLI/CLI.hpp>
#include <cstdlib>

#include "aios/executor.hpp"

namespace aios::executor {
namespace {

std::optional<std::filesystem::path> env_path(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::filesystem::path(value);
}

}  // namespace

struct CommandLine::Values {
  std::string root = kDefaultExchangeRoot.string();
  const CLI::Option* root_option = nullptr;
  std::string profile_root = kDefaultProfileRoot.string();
  std::string request;
  std::string result;
  unsigned concurrency = 1;
  std::vector<std::string> executable_roots;
  std::string key_file = credential_file("exchange_result_key");
  bool broker = false;
  std::string config_root = broker::kDefaultConfigRoot.string();
  std::string worktree_root = broker::kDefaultWorktreeRoot.string();
  std::string self_test;
  const Environment* environment = nullptr;
};

CommandLine::CommandLine(CLI::App& app, const Environment& environment)
    : values_(std::make_unique<Values>()) {
  auto& v = *values_;
  v.environment = &environment;
  v.root_option = app.add_option("--root", v.root,
                                 "Exchange directory (requests/, results/, failed/, started/)")
                      ->capture_default_str();
  app.add_option("--profile-root", v.profile_root, "Root-owned runtime profile directory")
      ->capture_default_str();
  auto* request_option = app.add_option("--request", v.request, "Run this one request file");
  auto* result_option = app.add_option("--result", v.result, "Write the one request's result here");
  request_option->needs(result_option);
  result_option->needs(request_option);
  app.add_option("--concurrency", v.concurrency, "Serve mode: requests run at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--exchange-key-file", v.key_file,
                 "Serve mode: the exchange key (at least 32 bytes, root-provisioned, shared\n"
                 "with the worker; default $CREDENTIALS_DIRECTORY/exchange_result_key)");
  app.add_flag("--broker", v.broker,
               "Engineering runtime broker mode (aios-agent-runtime-broker.service):\n"
               "runtime-request.v1 in, the backend of <config-root>/agent-runtime-\n"
               "<backend>.conf run in the request's worktree, runtime-result.v1 out;\n"
               "--root defaults to /var/lib/aios-agent-runtime-broker");
  app.add_option("--config-root", v.config_root,
                 "Broker: root-owned backend configuration directory")
      ->capture_default_str();
  app.add_option("--worktree-root", v.worktree_root,
                 "Broker: directory a request's worktree must lie under")
      ->capture_default_str();
  app.add_option("--self-test", v.self_test,
                 "Broker: run the disposable self-test against this backend, print its\n"
                 "report and exit (0 when the backend changed the worktree and HEAD\n"
                 "stayed at the base commit)");
  app.add_option("--executable-root", v.executable_roots,
                 "Directory a profile's executable and node script must resolve\n"
                 "under; repeat for several. Replaces the built-in list: /usr/bin,\n"
                 "/usr/local/bin, /opt/aios/bin, /opt/hermes, /opt/openclaw,\n"
                 "/opt/aios-hermes-agent, /opt/aios/openclaw-engineering");
}

CommandLine::~CommandLine() = default;

CommandLine::Mode CommandLine::mode() const {
  if (!values_->self_test.empty()) return Mode::self_test;
  if (!values_->request.empty()) return Mode::one_request;
  return Mode::serve;
}

bool CommandLine::broker() const {
  return values_->broker;
}
const std::string& CommandLine::request() const {
  return values_->request;
}
const std::string& CommandLine::result() const {
  return values_->result;
}
const std::string& CommandLine::self_test_backend() const {
  return values_->self_test;
}

std::filesystem::path CommandLine::root() const {
  if (values_->broker && values_->root_option->count() == 0) return broker::kDefaultExchangeRoot;
  return values_->root;
}

ExecuteOptions CommandLine::execute_options() const {
  ExecuteOptions execute;
  execute.profile_root = values_->profile_root;
  if (!values_->executable_roots.empty()) {
    execute.executable_roots.assign(values_->executable_roots.begin(),
                                    values_->executable_roots.end());
  }
  execute.credentials_directory = env_path("CREDENTIALS_DIRECTORY");
  execute.temporary_root = env_path("TMPDIR").value_or("/tmp");
  execute.environment = values_->environment;
  return execute;
}

broker::BrokerOptions CommandLine::broker_options() const {
  const auto execute = execute_options();
  return {.config_root = values_->config_root,
          .executable_roots = execute.executable_roots,
          .credentials_directory = execute.credentials_directory,
          .temporary_root = execute.temporary_root,
          .worktree_root = values_->worktree_root};
}

ServeOptions CommandLine::serve_options() const {
  auto key = ExchangeKey::from_file(values_->key_file);
  if (values_->broker) {
    return broker::serve_options(root(), broker_options(), values_->concurrency, std::move(key),
                                 execute_options());
  }
  return {.root = root(),
          .execute = execute_options(),
          .concurrency = values_->concurrency,
          .key = std::move(key)};
}

}  // namespace aios::executor
