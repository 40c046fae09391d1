// A worker on another host: the real scheduler in one network namespace, the real worker,
// executor and broker in another, joined by a veth pair on a test network, with the authority
// repository's path covered by an empty file system in the worker host's view. Over mutual TLS they
// run a task of each kind to SUCCEEDED, the worker filling its mirror of the repository through the
// Bridge; the server's certificate is replaced and reloaded halfway; refusals across the
// network keep their codes. Needs root (namespaces, veth); CI runs as root.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <thread>
#include <tuple>

#include "bridge/bridge_fixture.hpp"
#include "remote/remote_fixture.hpp"

namespace aios::remote_test {
namespace {

using taskapi_test::Json;
using taskapi_test::require;

constexpr auto kReadableByAll =
    std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
    std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
    std::filesystem::perms::others_exec;

const Json kWriter = {"git.read", "git.test", "governed.write.branch", "governed.write.file"};

void run_or_throw(const std::string& command) {
  const auto result = test::run_command(command);
  if (result.exit_code != 0) throw std::runtime_error(command + ": " + result.output);
}

// Two hosts as network namespaces joined by a veth pair: the control plane's, which the test's
// thread enters for the test's life (so the scheduler it starts and the owner's calls live
// there, on its loopback and at kControlPlaneAddress), and the worker's, at
// kWorkerHostAddress, where the worker, executor and broker run. Tests that make one take a lock
// first, since the addresses are fixed.
class TestNetwork {
 public:
  TestNetwork() {
    lock_ = ::open("/tmp/aios-remote-worker-test.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_ < 0 || ::flock(lock_, LOCK_EX) != 0) throw std::runtime_error("lock");
    const auto suffix = test::random_token(6);
    control_plane_ = "aios-cp-" + suffix;
    name_ = "aios-wh-" + suffix;
    const std::string link = "awh" + suffix;
    run_or_throw("ip netns add " + control_plane_);
    run_or_throw("ip netns add " + name_);
    run_or_throw("ip link add " + link + "c netns " + control_plane_ + " type veth peer name " +
                 link + "w netns " + name_);
    for (const auto& [ns, address, device] :
         {std::tuple{control_plane_, kControlPlaneAddress, link + "c"},
          std::tuple{name_, kWorkerHostAddress, link + "w"}}) {
      run_or_throw("ip -n " + ns + " addr add " + address + "/24 dev " + device);
      run_or_throw("ip -n " + ns + " link set " + device + " up");
      run_or_throw("ip -n " + ns + " link set lo up");
    }
    original_ = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    const int target = ::open(("/run/netns/" + control_plane_).c_str(), O_RDONLY | O_CLOEXEC);
    if (original_ < 0 || target < 0 || ::setns(target, CLONE_NEWNET) != 0) {
      throw std::runtime_error("enter the control plane's namespace");
    }
    ::close(target);
  }
  ~TestNetwork() {
    ::setns(original_, CLONE_NEWNET);
    ::close(original_);
    test::run_command("ip netns del " + name_);
    test::run_command("ip netns del " + control_plane_);
    ::close(lock_);
  }
  TestNetwork(const TestNetwork&) = delete;
  TestNetwork& operator=(const TestNetwork&) = delete;

  // `binary args...` run on the worker host, with `hidden` (the control plane's repository)
  // covered by an empty tmpfs in its view of the file system.
  test::DaemonOptions daemon(const std::filesystem::path& binary, std::vector<std::string> args,
                             const std::filesystem::path& hidden) const {
    test::DaemonOptions options;
    options.binary = "/usr/sbin/ip";
    options.args = {
        "netns",
        "exec",
        name_,
        "/bin/sh",
        "-c",
        R"(mount -t tmpfs -o size=64k,mode=0755 aios-not-here "$1" && shift && exec "$@")",
        "sh",
        hidden.string(),
        binary.string()};
    options.args.insert(options.args.end(), args.begin(), args.end());
    return options;
  }

  // `argv` run the same way to its end: its exit code and output.
  test::CommandResult run(const std::vector<std::string>& argv,
                          const std::filesystem::path& hidden) const {
    std::string command = "ip netns exec " + name_ +
                          " /bin/sh -c 'mount -t tmpfs -o size=64k aios-not-here \"$0\" && exec "
                          "\"$@\"' " +
                          quoted(hidden.string());
    for (const auto& arg : argv) command += " " + quoted(arg);
    return test::run_command(command);
  }

 private:
  static std::string quoted(const std::string& arg) {
    std::string out = "'";
    for (const char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }

  int lock_ = -1;
  int original_ = -1;
  std::string control_plane_;
  std::string name_;  // the worker host's
};

// A demo agent (the executor's hermes profile) and an engineering backend (the broker's codex):
// neither reaches the network.
constexpr std::string_view kAgent = R"PY(import json, sys
request = json.load(sys.stdin)
print(json.dumps({"answer": "remote agent read: " + request.get("goal", "")}))
)PY";
constexpr std::string_view kBackend = R"PY(import json, sys
json.load(sys.stdin)
with open("docs/BASE.md", "w") as out:
    out.write("edited on the worker host\n")
print(json.dumps({"schema": "aios.online-agent.runtime-result.v1", "status": "COMPLETED",
                  "summary": "rewrote docs/BASE.md",
                  "verification": [{"label": "smoke", "argv": ["/usr/bin/true"], "cwd": ".",
                                    "timeout_seconds": 30}],
                  "evidence": {"root_cause": "the note was stale"}}))
)PY";

// An https (or plaintext) GET from the worker host: prints the status and the error code.
constexpr std::string_view kProbe = R"PY(import json, ssl, sys, urllib.request, urllib.error
url, ca, token = sys.argv[1:4]
context = ssl.create_default_context(cafile=ca) if url.startswith("https") else None
request = urllib.request.Request(url)
if token:
    request.add_header("Authorization", "Bearer " + token)
try:
    print(urllib.request.urlopen(request, context=context, timeout=10).status)
except urllib.error.HTTPError as error:
    print(error.code, json.loads(error.read()).get("error"))
)PY";

class RemoteWorkerTest : public TlsSchedulerTest {
 protected:
  std::string listen_hosts() const override {
    return std::string("127.0.0.1,") + kControlPlaneAddress;
  }

  void SetUp() override {
    if (::geteuid() != 0 || !std::filesystem::exists("/usr/sbin/ip")) {
      GTEST_SKIP() << "needs root and iproute2 for network namespaces";
    }
    host_.emplace();
    TlsSchedulerTest::SetUp();
    repo_ = scheduler().authority_git_dir();
    const auto work = (scheduler().dir() / "seed").string();
    bridge_test::seed_authority(repo_.string(), work);
    // Some code for the interface map beside the seed's notes.
    base_ = bridge_test::git_ok(
        "-C " + work + " status -s && mkdir -p " + work + "/src && printf 'class Scheduler:\\n" +
        "    def claim(self, lease):\\n        return lease\\n' > " + work +
        "/src/scheduler.py && git -C " + work + " add -A && git -C " + work +
        " -c user.name=seed -c user.email=seed@example.invalid commit -q -m code && git -C " +
        work + " push -q " + repo_.string() + " main && git -C " + work + " rev-parse HEAD");
    std::filesystem::permissions(remote_.path(), kReadableByAll);
  }

  std::string api_url(std::uint16_t on) const {
    return "https://" + std::string(kControlPlaneAddress) + ":" + std::to_string(on);
  }

  // The executor and the broker of the worker host, serving its exchange directories.
  void start_runtimes() {
    const auto& dir = remote_.path();
    for (const auto* sub : {"profiles", "exchange", "broker", "broker-config", "workspaces",
                            "executor-tmp", "broker-tmp", "state"}) {
      std::filesystem::create_directories(dir / sub);
      std::filesystem::permissions(dir / sub, kReadableByAll);
    }
    test::write_text_file(dir / "agent.py", std::string(kAgent), kReadableByAll);
    test::write_text_file(dir / "backend.py", std::string(kBackend), kReadableByAll);
    test::write_text_file(dir / "profiles" / "hermes.json",
                          Json({{"schema", "aios.external-agent-runtime.profile.v1"},
                                {"runtime", "hermes"},
                                {"argv", {"/usr/bin/python3", (dir / "agent.py").string()}},
                                {"input_mode", "stdin_json"},
                                {"output_mode", "stdout_json"},
                                {"timeout_seconds", 60},
                                {"max_output_bytes", 65536}})
                              .dump());
    test::write_text_file(dir / "broker-config" / "agent-runtime-codex.conf",
                          Json({{"schema", "aios.agent-runtime-broker.backend.v1"},
                                {"backend", "codex"},
                                {"protocol", "runtime-result"},
                                {"argv", {"/usr/bin/python3", (dir / "backend.py").string()}},
                                {"timeout_seconds", 60}})
                              .dump());
    const auto key = test::exchange_key_file(dir).string();
    auto executor = host_->daemon(test::daemon_binary("aios-external-agent-executor"),
                                  {"--root", (dir / "exchange").string(), "--profile-root",
                                   (dir / "profiles").string(), "--exchange-key-file", key},
                                  repo_);
    executor.env = {"TMPDIR=" + (dir / "executor-tmp").string()};
    executor.ready_event = "EXTERNAL_AGENT_EXECUTOR_SERVING";
    executor.port_field.clear();
    executor_ = std::make_unique<test::Daemon>(executor, dir, "remote-executor");
    executor_->start();
    auto broker = host_->daemon(test::daemon_binary("aios-external-agent-executor"),
                                {"--broker", "--root", (dir / "broker").string(), "--config-root",
                                 (dir / "broker-config").string(), "--worktree-root",
                                 (dir / "workspaces").string(), "--exchange-key-file", key},
                                repo_);
    broker.env = {"TMPDIR=" + (dir / "broker-tmp").string()};
    broker.ready_event = "EXTERNAL_AGENT_EXECUTOR_SERVING";
    broker.port_field.clear();
    broker_ = std::make_unique<test::Daemon>(broker, dir, "remote-broker");
    broker_->start();
  }

  // The worker of agent `agent_id`, bound to `shown`, on the worker host.
  void start_worker(const std::string& token, const test::IssuedCertificate& shown) {
    const auto& dir = remote_.path();
    test::write_text_file(dir / "agent.token", token);
    auto options = host_->daemon(
        test::daemon_binary("aios-online-agent-worker"),
        {"--api-url",
         api_url(port()),
         "--bridge-url",
         api_url(scheduler().bridge_port()),
         "--tls-ca-file",
         (pki().dir / "ca.pem").string(),
         "--tls-certificate-file",
         shown.certificate.string(),
         "--tls-key-file",
         shown.key.string(),
         "--repository-from-bridge",
         "--agent-token-file",
         (dir / "agent.token").string(),
         "--agent-id",
         "remote-worker",
         "--capabilities",
         "git.read,git.test,governed.write.branch,governed.write.file,agent.runtime.hermes",
         "--allowed-adapters",
         "deterministic,source_capture,hermes,codex",
         "--executor-root",
         (dir / "exchange").string(),
         "--broker-root",
         (dir / "broker").string(),
         "--workspace-root",
         (dir / "workspaces").string(),
         "--exchange-key-file",
         test::exchange_key_file(dir).string(),
         "--state-root",
         (dir / "state").string(),
         "--heartbeat-ms",
         "500"},
        repo_);
    options.ready_event = "WORKER_READY";
    options.port_field.clear();
    options.ready_timeout = std::chrono::seconds(60);
    worker_ = std::make_unique<test::Daemon>(options, dir, "remote-worker");
    worker_->start();
  }

  // Creates the task, passes its verification once the worker's result is in, and waits for
  // SUCCEEDED.
  void run_to_success(Json task) {
    const std::string task_id = task.at("task_id");
    task["binding"] = bridge_test::binding_from(base_, task_id, "agent/" + task_id);
    require(owner().post("/v1/tasks", task), 201, "create " + task_id);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    for (;;) {
      const auto view = this->task(task_id);
      const std::string status = view.at("status");
      if (status == "SUCCEEDED") return;
      if (status == "VERIFYING") {
        EXPECT_EQ(view.at("result").value("status", ""), "SUCCEEDED") << view.dump();
        require(owner().post("/v1/tasks/" + task_id + "/verification",
                             {{"expected_revision", view.at("revision")},
                              {"decision", "PASS"},
                              {"reason", "checked by the remote worker test"}}),
                200, "verify " + task_id);
        continue;
      }
      if (status == "FAILED" || status == "CANCELLED" ||
          std::chrono::steady_clock::now() > deadline) {
        FAIL() << task_id << " ended " << status << "\n" << view.dump() << "\n" << worker_->log();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  std::optional<TestNetwork> host_;
  test::ScopedTempDir remote_{"aios-worker-host"};
  std::filesystem::path repo_;
  std::string base_;
  std::unique_ptr<test::Daemon> executor_, broker_, worker_;
};

// Given a worker on another host bound to its certificate, we should run a deterministic, a
// source_capture, an agent_runtime and an engineering task to SUCCEEDED across the network, the
// repository reaching the worker only through the Bridge, and keep serving it after the server
// certificate is replaced and reloaded.
TEST_F(RemoteWorkerTest, RunsEveryKindOfTaskAcrossTheNetwork) {
  const auto agent = test::CertificateSpec{.uris = {"aios:agent:remote"}};
  const auto shown = ca().issue(remote_.path(), "remote", agent);
  const auto token =
      require(owner().post("/v1/agents", {{"agent_id", "agent-remote"},
                                          {"granted_capabilities",
                                           {"git.read", "git.test", "governed.write.branch",
                                            "governed.write.file", "agent.runtime.hermes"}},
                                          {"client_certificate", {{"uri", "aios:agent:remote"}}}}),
              201, "agent")
          .at("token")
          .get<std::string>();
  // The worker host cannot see the control plane's repository.
  EXPECT_NE(host_->run({"/usr/bin/test", "-e", (repo_ / "HEAD").string()}, repo_).exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(repo_ / "HEAD"));

  start_runtimes();
  start_worker(token, shown);
  run_to_success({{"task_id", "remote-deterministic"},
                  {"goal", "Write the remote note"},
                  {"execution",
                   {{"action", "deterministic"},
                    {"adapter", "deterministic"},
                    {"capability_scope", kWriter},
                    {"change_set",
                     {{{"path", "docs/REMOTE.md"},
                       {"operation", "write_file"},
                       {"content", "Written by a worker on another host.\n"}}}},
                    {"verification",
                     {{{"label", "note exists"},
                       {"argv", {"/usr/bin/test", "-f", "docs/REMOTE.md"}},
                       {"cwd", "."},
                       {"timeout_seconds", 30}}}}}}});
  run_to_success({{"task_id", "remote-capture"},
                  {"goal", "Capture the interface"},
                  {"required_capabilities", {"git.read"}},
                  {"execution",
                   {{"action", "source_capture"},
                    {"adapter", "source_capture"},
                    {"capability_scope", {"git.read"}},
                    {"source_signals", {"scheduler claim lease"}}}}});
  ASSERT_TRUE(worker_->find_event("REPOSITORY_BASE_FETCHED").has_value()) << worker_->log();

  // The server's certificate is renewed while the worker keeps its connections.
  const auto renewed = renew_server_certificate(ca());
  auto pinned = std::make_shared<http::TlsClientCredentials>(
      http::TlsClientFiles{renewed.certificate, "", "", true});
  http::Connection fresh("127.0.0.1", port(), std::chrono::seconds(5), pinned);
  EXPECT_EQ(fresh.request("GET", "/health", "", "").status, 200);  // the renewed one is served

  run_to_success({{"task_id", "remote-hermes"},
                  {"goal", "Summarize the layout of the repository"},
                  {"required_capabilities", {"agent.runtime.hermes"}},
                  {"execution", {{"action", "agent_runtime"}, {"adapter", "hermes"}}}});
  run_to_success(
      {{"task_id", "remote-engineering"},
       {"goal", "Rewrite docs/BASE.md"},
       {"instructions", "Keep it short."},
       {"success_criteria", {{{"id", "note"}, {"description", "docs/BASE.md is rewritten"}}}},
       {"max_attempts", 1},
       {"execution",
        {{"action", "engineering"},
         {"adapter", "codex"},
         {"capability_scope", kWriter},
         {"verification",
          {{{"label", "smoke"},
            {"argv", {"/usr/bin/true"}},
            {"cwd", "."},
            {"timeout_seconds", 30}}}}}}});
  // Both writing tasks committed into the control plane's repository through the Bridge.
  for (const auto* branch : {"agent/remote-deterministic", "agent/remote-engineering"}) {
    EXPECT_EQ(test::run_command("git --git-dir=" + repo_.string() +
                                " rev-parse --verify -q refs/heads/" + branch)
                  .exit_code,
              0)
        << branch;
  }
  // One fetch filled the mirror: every later task found its base there.
  int fetches = 0;
  for (const auto& line : worker_->events())
    fetches += line.value("event", "") == "REPOSITORY_BASE_FETCHED";
  EXPECT_EQ(fetches, 1);
}

// Given callers on the worker host, we should refuse plaintext, the owner's token from a peer
// that is not loopback, and an agent without its certificate, each with its code.
TEST_F(RemoteWorkerTest, RefusesAcrossTheNetworkWithCodes) {
  const auto token = create_agent("agent-plain", Json::array({"git.read"}));
  const auto ca = (pki().dir / "ca.pem").string();
  test::write_text_file(remote_.path() / "probe.py", std::string(kProbe), kReadableByAll);
  const auto ask = [&](const std::string& url, const std::string& bearer) {
    const auto result = host_->run(
        {"/usr/bin/python3", (remote_.path() / "probe.py").string(), url, ca, bearer}, repo_);
    std::string out = result.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  };
  const std::string plain =
      "http://" + std::string(kControlPlaneAddress) + ":" + std::to_string(port()) + "/v1/fleet";
  EXPECT_EQ(ask(plain, scheduler().control_token()), "400 TLS_PLAINTEXT_REQUEST");
  EXPECT_EQ(ask(api_url(port()) + "/v1/fleet", scheduler().control_token()),
            "403 OWNER_NOT_LOOPBACK");
  EXPECT_EQ(ask(api_url(port()) + "/metrics", token), "403 FORBIDDEN");
  EXPECT_EQ(ask(api_url(port()) + "/v1/tasks/t-1", token), "401 TLS_CLIENT_CERTIFICATE_REQUIRED");
  EXPECT_EQ(ask(api_url(scheduler().bridge_port()) + "/health", ""), "200");
}

}  // namespace
}  // namespace aios::remote_test
