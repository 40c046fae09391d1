// aiosctl against the real daemons: the scheduler (Task API and Bridge over a real repository)
// and, for rebinds, the rebind service; each subcommand's output and exit code, its refusals,
// `watch` in a pseudo-terminal and `doctor` on a host of files made for the test.
#include "aios/ctl.hpp"

#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "aios/process.hpp"
#include "bridge/bridge_fixture.hpp"
#include "rebind/rebind_daemon.hpp"
#include "support/closed_port.hpp"

namespace aios::bridge_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};

std::filesystem::path ctl_binary() {
  return std::filesystem::path(AIOS_BINARY_DIR) / "tools" / "aiosctl";
}

class CtlTest : public BridgeTest {
 protected:
  // aiosctl with the scheduler's URLs and token, then `args`; `input` on its stdin.
  Ran ctl(const std::vector<std::string>& args, const std::string& input = "",
          const std::vector<std::string>& before = {}) {
    process::Spec spec;
    spec.argv = {ctl_binary().string(),
                 "--api",
                 api(),
                 "--bridge",
                 "http://127.0.0.1:" + std::to_string(scheduler().bridge_port()),
                 "--token-file",
                 (scheduler().dir() / "control_token").string()};
    spec.argv.insert(spec.argv.end(), before.begin(), before.end());
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.environment = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
    spec.working_directory = scheduler().dir().path();
    spec.stdin_data = input;
    spec.timeout = std::chrono::seconds(60);
    Ran ran;
    spec.on_stdout = [&ran](std::string_view chunk) { ran.out.append(chunk); };
    spec.on_stderr = [&ran](std::string_view chunk) { ran.err.append(chunk); };
    ran.code = process::run(spec).exit_code;
    return ran;
  }

  std::string api() const { return "http://127.0.0.1:" + std::to_string(port()); }

  // A task of tenant `tenant`: a source capture of the repository's base.
  Json tenant_task(const std::string& task_id, const std::string& tenant) const {
    auto body = source_capture_task(binding(task_id, "agent/" + task_id));
    body["scope_type"] = "tenant";
    body["tenant_id"] = tenant;
    return body;
  }

  // Claims `task_id` for worker-w1 and submits a result: the task is VERIFYING.
  void returned(const std::string& task_id) {
    register_worker(agent(), "worker-capture", {"git.read"}, {"source_capture"}, 1);
    const auto lease = claim_for(task_id, "worker-capture");
    require(agent().post("/v1/tasks/" + task_id + "/result",
                         taskapi_test::result_body(lease, lease.at("execution_digest"),
                                                   task_id + "-result", {{"summary", "done"}})),
            201, "result " + task_id);
  }
};

// Given tasks of two tenants, we should list them (all, by status, by tenant), show one, say
// why each worker may or may not take it, and show its events, each as a table or as the API's
// JSON with --json.
TEST_F(CtlTest, ListsShowsAndExplainsTasks) {
  create_task(tenant_task("ctl-acme", "acme"));
  create_task(tenant_task("ctl-beta", "beta"));
  const auto all = ctl({"tasks"});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_THAT(all.out, HasSubstr("ctl-acme"));
  EXPECT_THAT(all.out, HasSubstr("ctl-beta"));
  EXPECT_THAT(all.out, HasSubstr("QUEUED"));
  const auto acme = ctl({"tasks", "--tenant", "acme"});
  EXPECT_THAT(acme.out, HasSubstr("ctl-acme"));
  EXPECT_THAT(acme.out, Not(HasSubstr("ctl-beta")));
  EXPECT_EQ(ctl({"tasks", "--status", "SUCCEEDED"}).out, "no tasks\n");
  const auto prefixed = ctl({"tasks", "--prefix", "ctl-b"});
  EXPECT_THAT(prefixed.out, HasSubstr("ctl-beta"));
  EXPECT_THAT(prefixed.out, Not(HasSubstr("ctl-acme")));
  const auto bad_prefix = ctl({"tasks", "--prefix", "-x"});
  EXPECT_EQ(bad_prefix.code, 6) << bad_prefix.out;
  EXPECT_THAT(bad_prefix.err, HasSubstr("TASK_ID_PREFIX_INVALID"));
  const auto json = ctl({"--json", "tasks", "--tenant", "beta"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(Json::parse(json.out), require(owner().get("/v1/tasks?tenant=beta"), 200, "list"));

  const auto show = ctl({"task", "show", "ctl-acme"});
  EXPECT_THAT(show.out, HasSubstr("status        QUEUED"));
  EXPECT_THAT(show.out, HasSubstr("source_capture/source_capture"));
  const auto why = ctl({"task", "why", "ctl-acme"});
  ASSERT_EQ(why.code, 0) << why.err;
  EXPECT_THAT(why.out, HasSubstr("ctl-acme is QUEUED"));
  EXPECT_THAT(why.out, HasSubstr("worker-w1"));  // a deterministic-only worker: not eligible
  EXPECT_THAT(why.out, HasSubstr("adapter_not_allowed"));
  const auto events = ctl({"task", "events", "ctl-acme"});
  EXPECT_THAT(events.out, HasSubstr("TASK_CREATED"));
}

// Given a returned task, verify at a stale revision should be a conflict (exit 5) and at the
// current one move it to SUCCEEDED; cancel of a queued task ends it, a second cancel conflicts.
TEST_F(CtlTest, VerifiesAndCancelsUnderTheirCasRules) {
  create_task(tenant_task("ctl-verify", "acme"));
  const auto stale = task("ctl-verify").at("revision").get<long long>();
  returned("ctl-verify");
  const auto conflict = ctl({"task", "verify", "ctl-verify", "PASS", "--reason", "reviewed",
                             "--revision", std::to_string(stale)});
  EXPECT_EQ(conflict.code, ctl::kConflict);
  EXPECT_THAT(conflict.err, HasSubstr("TASK_REVISION_CONFLICT"));
  const auto passed = ctl({"task", "verify", "ctl-verify", "PASS", "--reason", "reviewed"});
  ASSERT_EQ(passed.code, 0) << passed.err;
  EXPECT_EQ(task("ctl-verify").at("status"), "SUCCEEDED");

  create_task(tenant_task("ctl-cancel", "acme"));
  EXPECT_EQ(ctl({"task", "cancel", "ctl-cancel", "--reason", "superseded"}).code, 0);
  EXPECT_EQ(task("ctl-cancel").at("status"), "CANCELLED");
  EXPECT_EQ(ctl({"task", "cancel", "ctl-cancel"}).code, ctl::kConflict);
}

// Given refusals of every class, we should exit with its code and name the refusal.
TEST_F(CtlTest, RefusalsMapToTheirExitCodes) {
  const auto missing = ctl({"task", "show", "ctl-none"});
  EXPECT_EQ(missing.code, ctl::kNotFound);
  EXPECT_THAT(missing.err, HasSubstr("TASK_NOT_FOUND"));
  test::write_token_file(scheduler().dir() / "other_token");
  EXPECT_EQ(ctl({"tasks"}, "", {"--token-file", (scheduler().dir() / "other_token").string()}).code,
            ctl::kNotAllowed);
  EXPECT_EQ(ctl({"tasks"}, "", {"--token-file", "/nonexistent/token"}).code, ctl::kNotAllowed);
  const auto down = ctl({"tasks"}, "", {"--api", test::closed_loopback_url()});
  EXPECT_EQ(down.code, ctl::kUnavailable);
  EXPECT_THAT(down.err, HasSubstr("HTTP_UPSTREAM_UNAVAILABLE"));
  EXPECT_EQ(ctl({"prune", "--older-than", "10m"}).code, ctl::kInvalid);
  EXPECT_EQ(ctl({"prune", "--older-than", "soon"}).code, ctl::kUsage);
  EXPECT_EQ(ctl({"task", "verify", "x", "MAYBE", "--reason", "r"}).code, ctl::kUsage);
  EXPECT_EQ(ctl({"no-such-command"}).code, ctl::kUsage);
  const auto help = ctl({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_THAT(help.out, HasSubstr("doctor"));
}

// Given a task and a plan as files or standard input, and agents created, rotated, bound and
// revoked through aiosctl, each should take effect as the API's own call would.
TEST_F(CtlTest, CreatesTasksPlansAndAgents) {
  test::write_text_file(scheduler().dir() / "task.json", tenant_task("ctl-created", "acme").dump());
  const auto created = ctl({"create", (scheduler().dir() / "task.json").string()});
  ASSERT_EQ(created.code, 0) << created.err;
  EXPECT_EQ(created.out, "ctl-created QUEUED\n");
  EXPECT_EQ(ctl({"create", "-"}, tenant_task("ctl-stdin", "acme").dump()).code, 0);
  EXPECT_EQ(task("ctl-stdin").at("status"), "QUEUED");
  EXPECT_EQ(ctl({"create", "-"}, "7").code, ctl::kUsage);
  EXPECT_EQ(ctl({"create", "-"}, "[]").code, ctl::kUsage);
  // A list goes in one batch: a line per task, and the exit class of the first refusal.
  const Json many = {tenant_task("ctl-many-1", "acme"), tenant_task("ctl-many-2", "acme"), 1,
                     tenant_task("ctl-many-1", "acme")};
  const auto batch = ctl({"create", "-"}, many.dump());
  EXPECT_EQ(batch.code, ctl::kInvalid) << batch.err;
  EXPECT_EQ(batch.out,
            "ctl-many-1 QUEUED\nctl-many-2 QUEUED\n- refused REQUEST_INVALID\n"
            "ctl-many-1 refused TASK_ALREADY_EXISTS\n");
  EXPECT_EQ(task("ctl-many-2").at("status"), "QUEUED");
  test::write_text_file(
      scheduler().dir() / "plan.json",
      Json({{"task_id", "ctl-created"}, {"change_set", {write_file("docs/CTL.md", "planned\n")}}})
          .dump());
  const auto plan = ctl({"plans", "register", (scheduler().dir() / "plan.json").string()});
  ASSERT_EQ(plan.code, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("ctl-created plan "));
  const auto plans = ctl({"plans", "list"});
  ASSERT_EQ(plans.code, 0) << plans.err;
  EXPECT_THAT(plans.out, ::testing::ContainsRegex("ctl-created +1 "));
  const auto shown = ctl({"plans", "show", "ctl-created"});
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("change        write_file docs/CTL.md\n"));
  EXPECT_EQ(ctl({"plans", "show", "ctl-stdin"}).code, ctl::kNotFound);
  EXPECT_EQ(ctl({"plans", "list", "--after", "ctl-created"}).out, "no plans\n");

  const auto agent_made =
      ctl({"--json", "agents", "create", "agent-ctl", "--capability", "git.read", "--tenant",
           "acme", "--certificate-uri", "aios:agent:agent-ctl"});
  ASSERT_EQ(agent_made.code, 0) << agent_made.err;
  const auto issued = Json::parse(agent_made.out);
  EXPECT_EQ(issued.at("client_certificate").at("uri"), "aios:agent:agent-ctl");
  EXPECT_EQ(ctl({"agents", "certificate", "agent-ctl"}).code, 0);  // none recorded now
  auto as_agent = client(issued.at("token"));
  EXPECT_EQ(as_agent
                .post("/v1/workers/register", {{"worker_id", "w-ctl"},
                                               {"capabilities", {"git.read"}},
                                               {"allowed_adapters", {"source_capture"}}})
                .status,
            200);
  const auto rotated = ctl({"agents", "rotate", "agent-ctl"});
  ASSERT_EQ(rotated.code, 0) << rotated.err;
  EXPECT_THAT(rotated.out, HasSubstr("new token aios_"));
  EXPECT_EQ(as_agent.get("/v1/tasks/ctl-created").status, 401);  // the old token is gone
  const auto listed = ctl({"agents", "list"});
  ASSERT_EQ(listed.code, 0) << listed.err;
  EXPECT_THAT(listed.out, ::testing::ContainsRegex("agent-ctl +git.read +acme +w-ctl +- +live"));
  EXPECT_EQ(ctl({"agents", "revoke", "agent-ctl"}).code, 0);
  EXPECT_EQ(ctl({"agents", "revoke", "agent-none"}).code, ctl::kNotFound);
  EXPECT_THAT(ctl({"agents", "list"}).out, ::testing::ContainsRegex("agent-ctl .* revoked 20"));
  const auto json_list = Json::parse(ctl({"agents", "list", "--json"}).out);
  EXPECT_EQ(json_list.dump().find("token"), std::string::npos) << "no token nor its digest";
}

// Given a fleet at work, we should show its workers, the fleet-wide events, the store's status
// and prune nothing that is not old enough.
TEST_F(CtlTest, ShowsTheFleetEventsAndStatusAndPrunes) {
  create_task(tenant_task("ctl-fleet", "acme"));
  const auto workers = ctl({"workers"});
  ASSERT_EQ(workers.code, 0) << workers.err;
  EXPECT_THAT(workers.out, HasSubstr("worker-w1"));
  EXPECT_THAT(workers.out, HasSubstr("0/4"));
  EXPECT_THAT(ctl({"fleet"}).out, HasSubstr("worker-w2"));
  // One worker changed from the command line: quarantined, its slots, released, its circuit.
  const auto parked = ctl({"fleet", "worker", "quarantine", "worker-w1"});
  ASSERT_EQ(parked.code, 0) << parked.err;
  EXPECT_EQ(parked.out, "worker-w1 slots 4, quarantined\n");
  EXPECT_EQ(ctl({"fleet", "worker", "slots", "worker-w1", "2"}).out,
            "worker-w1 slots 2, quarantined\n");
  EXPECT_EQ(ctl({"fleet", "worker", "release", "worker-w1"}).out, "worker-w1 slots 2\n");
  EXPECT_EQ(ctl({"fleet", "worker", "reset-circuit", "worker-w1"}).code, 0);
  EXPECT_EQ(ctl({"fleet", "worker", "slots", "worker-w1", "0"}).code, ctl::kUsage);
  EXPECT_EQ(ctl({"fleet", "worker", "quarantine", "worker-none"}).code, ctl::kNotFound);
  const auto events = ctl({"events"});
  EXPECT_THAT(events.out, HasSubstr("ctl-fleet"));
  EXPECT_THAT(events.out, HasSubstr("TASK_CREATED"));
  const auto status = ctl({"status"});
  ASSERT_EQ(status.code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("schema " + std::to_string(store::kSchemaVersion)));
  EXPECT_THAT(status.out, HasSubstr("integrity ok"));
  EXPECT_THAT(status.out, HasSubstr("QUEUED"));
  const auto pruned = ctl({"prune", "--older-than", "1h"});
  ASSERT_EQ(pruned.code, 0) << pruned.err;
  EXPECT_THAT(pruned.out, HasSubstr("pruned 0 ended tasks"));
}

// Given an exchange and workspaces on this host, prune should remove the old answers and left-
// over workspaces of tasks that ended, and keep those of a live task, a young one and one the
// Task API does not know.
TEST_F(CtlTest, PrunesThisHostsFilesOfEndedTasksOnly) {
  create_task(tenant_task("ctl-ended", "acme"));
  create_task(tenant_task("ctl-live", "acme"));
  EXPECT_EQ(ctl({"task", "cancel", "ctl-ended"}).code, 0);
  const auto exchange = scheduler().dir() / "exchange";
  const auto workspaces = scheduler().dir() / "workspaces";
  for (const auto* sub : {"results", "started"})
    std::filesystem::create_directories(exchange / sub);
  const auto hours_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  const auto answer = [&](const std::string& id, const std::string& task_id, bool old) {
    for (const auto& file :
         {exchange / "results" / (id + ".json"), exchange / "results" / (id + ".json.mac"),
          exchange / "started" / (id + ".json")}) {
      test::write_text_file(file, Json({{"task_id", task_id}}).dump());
      if (old) std::filesystem::last_write_time(file, hours_ago);
    }
  };
  answer("external-hermes-ended", "ctl-ended", true);
  answer("external-hermes-live", "ctl-live", true);
  answer("external-hermes-young", "ctl-ended", false);
  answer("external-hermes-unknown", "ctl-never", true);
  for (const auto* name : {"ctl-ended-0123456789ab", "ctl-live-0123456789ab"}) {
    std::filesystem::create_directories(workspaces / name / "worktree");
    std::filesystem::last_write_time(workspaces / name, hours_ago);
  }
  const auto pruned = ctl({"prune", "--older-than", "1h", "--exchange-root", exchange.string(),
                           "--workspace-root", workspaces.string()});
  ASSERT_EQ(pruned.code, 0) << pruned.err;
  EXPECT_THAT(pruned.out, HasSubstr("1 exchange answers, 1 workspaces"));
  EXPECT_FALSE(std::filesystem::exists(exchange / "results" / "external-hermes-ended.json"));
  EXPECT_FALSE(std::filesystem::exists(exchange / "results" / "external-hermes-ended.json.mac"));
  EXPECT_FALSE(std::filesystem::exists(exchange / "started" / "external-hermes-ended.json"));
  for (const auto* kept :
       {"external-hermes-live", "external-hermes-young", "external-hermes-unknown"}) {
    EXPECT_TRUE(std::filesystem::exists(exchange / "results" / (std::string(kept) + ".json")))
        << kept;
  }
  EXPECT_FALSE(std::filesystem::exists(workspaces / "ctl-ended-0123456789ab"));
  EXPECT_TRUE(std::filesystem::exists(workspaces / "ctl-live-0123456789ab"));
}

// Given a returned task and its registered plan, a rebind through the rebind service should
// take its compare-and-swap fields from the task, the digest from the Bridge, and answer a
// second time as already done.
TEST_F(CtlTest, RebindsThroughTheRebindService) {
  create_task(tenant_task("ctl-rebind", "acme"));
  returned("ctl-rebind");
  verify("ctl-rebind", "NEEDS_REWORK");
  const std::string plan_digest =
      require(bridge().post("/v2/plans", {{"task_id", "ctl-rebind"},
                                          {"change_set", {write_file("docs/R.md", "r\n")}}}),
              201, "plan")
          .at("execution_digest");
  test::Daemon rebind(rebind_test::rebind_options(
                          {scheduler().store_location(), scheduler().dir() / "control_token",
                           "http://127.0.0.1:" + std::to_string(scheduler().bridge_port())}),
                      scheduler().dir().path(), "rebind");
  rebind.start();
  const std::vector<std::string> to_rebind = {"--rebind",
                                              "http://127.0.0.1:" + std::to_string(rebind.port())};
  const std::vector<std::string> args = {"task",
                                         "rebind",
                                         "ctl-rebind",
                                         "--authorization-id",
                                         std::string(rebind_test::kDaemonAuthorization),
                                         "--reason",
                                         "the plan came after the projection"};
  auto stale = args;
  stale.insert(stale.end(), {"--revision", "1", "--idempotency-key", "rebind-ctl-stale"});
  const auto refused = ctl(stale, "", to_rebind);
  EXPECT_EQ(refused.code, ctl::kConflict) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("EXECUTION_REBIND_CAS_MISMATCH"));
  const auto done = ctl(args, "", to_rebind);
  ASSERT_EQ(done.code, 0) << done.err << rebind.log();
  EXPECT_THAT(done.out, HasSubstr("rebound to " + plan_digest));
  EXPECT_EQ(task("ctl-rebind").at("execution_digest"), plan_digest);
}

// Reads what the pseudo-terminal's other side wrote until `text` shows up or `timeout` passes.
bool read_until(int master, std::string& screen, const std::vector<std::string>& texts,
                std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto all_there = [&] {
    for (const auto& text : texts) {
      if (screen.find(text) == std::string::npos) return false;
    }
    return true;
  };
  while (!all_there() && std::chrono::steady_clock::now() < deadline) {
    char buffer[4096];
    const auto n = ::read(master, buffer, sizeof buffer);
    if (n > 0) {
      screen.append(buffer, static_cast<std::size_t>(n));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return all_there();
}

// Given a terminal, watch should draw the queue, the workers and the latest events, redraw as
// tasks move, and stop with exit 0 on Ctrl-C; piped, it should write plain lines.
TEST_F(CtlTest, WatchDrawsALiveViewInATerminal) {
  create_task(tenant_task("ctl-watched", "acme"));
  int master = -1;
  const pid_t child = ::forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string bridge = "http://127.0.0.1:" + std::to_string(scheduler().bridge_port());
    const std::string token = (scheduler().dir() / "control_token").string();
    const std::string api_url = api();
    ::execl(ctl_binary().c_str(), "aiosctl", "--api", api_url.c_str(), "--token-file",
            token.c_str(), "watch", "--interval-ms", "200", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::fcntl(master, F_SETFL, ::fcntl(master, F_GETFL) | O_NONBLOCK);
  std::string screen;
  EXPECT_TRUE(read_until(master, screen, {"QUEUED", "worker-w1", "latest events", "ctl-watched"},
                         std::chrono::seconds(20)))
      << screen;
  EXPECT_THAT(screen, HasSubstr("\x1b[H"));  // redrawn in place
  create_task(tenant_task("ctl-later", "acme"));
  screen.clear();
  EXPECT_TRUE(read_until(master, screen, {"ctl-later"}, std::chrono::seconds(20))) << screen;
  ASSERT_EQ(::write(master, "\x03", 1), 1);  // Ctrl-C
  int status = 0;
  for (int i = 0; i < 200 && ::waitpid(child, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::close(master);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  const auto plain = ctl({"watch", "--rounds", "2", "--interval-ms", "100"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_THAT(plain.out, HasSubstr("queue QUEUED=2"));
  EXPECT_THAT(plain.out, HasSubstr("event "));
  EXPECT_THAT(plain.out, Not(HasSubstr("\x1b[")));
}

// Given a host of files made for the test (a profile whose CLI answers its version probe, a
// state directory, no units), doctor should pass; a profile validated against another version,
// a profile others may write and a service that does not answer should each be a FAIL (exit 8)
// with its fix.
TEST_F(CtlTest, DoctorFindsWhatIsWrongAndSaysTheFix) {
  const auto host = scheduler().dir() / "host";
  const auto profiles = host / "profiles";
  std::filesystem::create_directories(profiles);
  std::filesystem::create_directories(host / "units");
  std::string version;
  process::Spec spec;
  spec.argv = {"/usr/bin/python3", "--version"};
  spec.working_directory = "/";
  spec.timeout = std::chrono::seconds(10);
  spec.on_stdout = [&version](std::string_view chunk) { version.append(chunk); };
  process::run(spec);
  version = version.substr(version.find(' ') + 1);
  version = version.substr(0, version.find('\n'));
  test::write_text_file(host / "agent.py", "print(1)\n");
  const auto write_profile = [&](const std::string& validated) {
    test::write_text_file(profiles / "hermes.json",
                          Json({{"schema", "aios.external-agent-runtime.profile.v1"},
                                {"runtime", "hermes"},
                                {"argv", {"/usr/bin/python3", (host / "agent.py").string()}},
                                {"validated_version", validated}})
                              .dump());
  };
  write_profile(version);
  const std::vector<std::string> on_host = {
      "doctor",      "--profile-root", profiles.string(),        "--state-dir",
      host.string(), "--unit-dir",     (host / "units").string()};
  const auto rebind_url = std::vector<std::string>{"--rebind", api()};  // answers /health
  const auto healthy = ctl(on_host, "", rebind_url);
  ASSERT_EQ(healthy.code, 0) << healthy.out << healthy.err;
  EXPECT_THAT(healthy.out, HasSubstr("agent CLI hermes"));
  EXPECT_THAT(healthy.out, HasSubstr("Python " + version));
  // No unit files in --unit-dir: those checks say they were skipped and what runs them.
  EXPECT_THAT(healthy.out, ::testing::ContainsRegex("units +skip .*--unit-dir DIR"));
  const auto elsewhere = ctl({"--json", "doctor", "--profile-root", (host / "none").string(),
                              "--state-dir", (host / "none").string()},
                             "", rebind_url);
  std::map<std::string, std::string> states;
  for (const auto& finding : Json::parse(elsewhere.out))
    states[finding.at("check")] = finding.at("state");
  EXPECT_EQ(states["profiles"], "skip") << elsewhere.out;
  EXPECT_EQ(states["disk"], "skip") << elsewhere.out;
  EXPECT_THAT(healthy.out, Not(HasSubstr("FAIL")));

  write_profile("0.0.1-never");
  const auto drifted = ctl(on_host, "", rebind_url);
  EXPECT_EQ(drifted.code, ctl::kFindings);
  EXPECT_THAT(drifted.out, HasSubstr("validated against 0.0.1-never"));
  EXPECT_THAT(drifted.out, HasSubstr("re-run the --help/version probes"));

  write_profile(version);
  std::filesystem::permissions(profiles / "hermes.json", std::filesystem::perms::others_write,
                               std::filesystem::perm_options::add);
  const auto writable = ctl(on_host, "", rebind_url);
  EXPECT_EQ(writable.code, ctl::kFindings);
  EXPECT_THAT(writable.out, HasSubstr("chmod 644"));

  std::filesystem::permissions(profiles / "hermes.json", std::filesystem::perms::others_write,
                               std::filesystem::perm_options::remove);
  const auto no_rebind = ctl(on_host, "", {"--rebind", test::closed_loopback_url()});
  EXPECT_EQ(no_rebind.code, ctl::kFindings);
  EXPECT_THAT(no_rebind.out, HasSubstr("systemctl status aios-agent-task-execution-rebind"));
}

// Given the shipped Hermes profile in front of the Hermes stand-in, doctor should find its
// version and every flag the profile passes in its --help; a flag the CLI does not have should
// be a FAIL naming it.
TEST_F(CtlTest, DoctorChecksTheHermesProfilesFlagsAgainstTheCli) {
  namespace fs = std::filesystem;
  const auto host = scheduler().dir() / "hermes-host";
  const auto profiles = host / "profiles";
  const auto bin = host / "opt" / "bin";
  fs::create_directories(profiles);
  fs::create_directories(bin);
  fs::create_directories(host / "home");
  fs::copy_file(fs::path(AIOS_SOURCE_DIR) / "tests" / "executor" / "hermes_standin.py",
                bin / "hermes");
  fs::permissions(bin / "hermes", fs::perms::owner_all | fs::perms::others_read |
                                      fs::perms::others_exec | fs::perms::group_read |
                                      fs::perms::group_exec);
  const fs::path config = fs::path(AIOS_SOURCE_DIR) / "config" / "external-agent-runtime.d";
  auto profile = Json::parse(test::read_text_file(config / "hermes.profile.json"));
  profile["argv"][0] = (bin / "hermes").string();
  profile["state_template"]["from"] = (host / "home").string();
  profile["validated_version"] = "v0.21.0";
  const auto write_profile = [&] {
    test::write_text_file(profiles / "hermes.json", profile.dump());
  };
  write_profile();
  const std::vector<std::string> on_host = {"doctor",
                                            "--profile-root",
                                            profiles.string(),
                                            "--executable-root",
                                            (host / "opt").string(),
                                            "--state-dir",
                                            host.string(),
                                            "--unit-dir",
                                            host.string()};
  const auto rebind_url = std::vector<std::string>{"--rebind", api()};
  const auto healthy = ctl(on_host, "", rebind_url);
  EXPECT_EQ(healthy.code, 0) << healthy.out << healthy.err;
  EXPECT_THAT(healthy.out, HasSubstr("Hermes Agent v0.21.0"));
  EXPECT_THAT(healthy.out, HasSubstr("every flag of the profile is in --help"));

  profile["argv"].push_back("--non-interactive");
  write_profile();
  const auto unknown = ctl(on_host, "", rebind_url);
  EXPECT_EQ(unknown.code, ctl::kFindings);
  EXPECT_THAT(unknown.out,
              HasSubstr("the profile passes --non-interactive, which --help does not"));
}

// Given the habits of an operator's scripts, aiosctl should take --json after the command too,
// a status in any case (and refuse one that is none, as the API does), name a mistyped command,
// say how to read past a full page, and name what a worker lacks and what an event says.
TEST_F(CtlTest, TakesTheCommandLinesScriptsWrite) {
  create_task(tenant_task("ctl-script-1", "acme"));
  create_task(tenant_task("ctl-script-2", "acme"));
  const auto json = ctl({"tasks", "--tenant", "acme", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(Json::parse(json.out), require(owner().get("/v1/tasks?tenant=acme"), 200, "list"));
  EXPECT_THAT(ctl({"tasks", "--status", "queued"}).out, HasSubstr("ctl-script-2"));
  const auto bogus = ctl({"tasks", "--status", "bogus"});
  EXPECT_EQ(bogus.code, ctl::kUsage);
  EXPECT_THAT(bogus.err, testing::StartsWith("--status: unknown status 'BOGUS'\n"));
  const auto refused = owner().get("/v1/tasks?status=queued");
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.body.value("error", ""), "TASK_STATUS_INVALID");
  const auto typo = ctl({"task", "shw", "ctl-script-1"});
  EXPECT_EQ(typo.code, ctl::kUsage);
  EXPECT_THAT(typo.err, HasSubstr("unknown command 'shw' of 'task'"));

  const auto page = ctl({"tasks", "--tenant", "acme", "--limit", "1"});
  EXPECT_THAT(page.out, HasSubstr("ctl-script-1"));
  const auto next = page.out.substr(page.out.find("more: --after ") + 14);
  const auto rest = ctl({"tasks", "--tenant", "acme", "--after", next.substr(0, next.find('\n'))});
  EXPECT_THAT(rest.out, HasSubstr("ctl-script-2"));
  EXPECT_THAT(rest.out, Not(HasSubstr("ctl-script-1")));
  EXPECT_THAT(rest.out, Not(HasSubstr("more:")));

  register_worker(agent(), "worker-bare", {"git.test"}, {"source_capture"}, 1);
  const auto why = ctl({"task", "why", "ctl-script-1"});
  EXPECT_THAT(why.out, HasSubstr("adapter_not_allowed (source_capture)"));
  EXPECT_THAT(why.out, HasSubstr("capability_missing (repo.read)"));
  EXPECT_EQ(ctl({"task", "cancel", "ctl-script-1", "--reason", "superseded-by-2"}).code, 0);
  const auto events = ctl({"task", "events", "ctl-script-1"});
  EXPECT_THAT(events.out, HasSubstr("DETAIL"));
  EXPECT_THAT(events.out, HasSubstr("superseded-by-2"));
  const auto requeued =
      ctl({"task", "requeue", "ctl-script-1", "--reason", "again", "--attempts", "2"});
  ASSERT_EQ(requeued.code, 0) << requeued.err;
  EXPECT_EQ(requeued.out, "ctl-script-1 QUEUED (attempt 0 of 2)\n");
  const auto twice = ctl({"task", "requeue", "ctl-script-1"});
  EXPECT_EQ(twice.code, ctl::kConflict);
  EXPECT_THAT(twice.err, HasSubstr("TASK_NOT_REQUEUEABLE"));

  // watch --json: each event a JSON line with its own time, the summary once while unchanged.
  const auto watched = ctl({"watch", "--rounds", "3", "--interval-ms", "100", "--json"});
  ASSERT_EQ(watched.code, 0) << watched.err;
  Json cancelled_at;
  const auto recorded = require(owner().get("/v1/tasks/ctl-script-1/events"), 200, "events");
  for (const auto& event : recorded.at("events")) {
    if (event.at("event_type") == "TASK_CANCELLED") cancelled_at = event.at("created_at");
  }
  std::istringstream lines(watched.out);
  int summaries = 0;
  int cancels = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto value = Json::parse(line);
    summaries += value.contains("summary") ? 1 : 0;
    if (value.value("event_type", "") == "TASK_CANCELLED") {
      ++cancels;
      EXPECT_EQ(value.at("created_at"), cancelled_at);
    }
  }
  EXPECT_EQ(summaries, 1) << watched.out;
  EXPECT_EQ(cancels, 1) << watched.out;
}

// Given a returned task whose result holds an answer, a commit and a failed test, task show
// should print them: the answer on one line, the commit, the failing command with its output.
TEST_F(CtlTest, ShowsTheAnswerTheCommitAndTheFailedTest) {
  create_task(tenant_task("ctl-shown", "acme"));
  register_worker(agent(), "worker-capture", {"git.read"}, {"source_capture"}, 1);
  const auto lease = claim_for("ctl-shown", "worker-capture");
  const Json result = {{"output_text", "The layout is\nsrc/ and tests/"},
                       {"commit_oid", std::string(40, 'a')},
                       {"tests",
                        {{{"label", "lint"}, {"passed", true}, {"exit_code", 0}, {"output", ""}},
                         {{"label", "unit"},
                          {"passed", false},
                          {"exit_code", 1},
                          {"output", "ok 1\nFAIL: test_x\n"}}}}};
  require(agent().post("/v1/tasks/ctl-shown/result",
                       taskapi_test::result_body(lease, lease.at("execution_digest"),
                                                 "result-ctl-shown", result)),
          201, "result");
  const auto show = ctl({"task", "show", "ctl-shown"});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("answer        The layout is src/ and tests/\n"));
  EXPECT_THAT(show.out, HasSubstr("commit        " + std::string(40, 'a') + "\n"));
  EXPECT_THAT(show.out, HasSubstr("failed test   unit (exit 1): FAIL: test_x\n"));
}

}  // namespace
}  // namespace aios::bridge_test
