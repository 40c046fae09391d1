// The aios-external-agent-executor daemon in serve mode on a temporary exchange directory:
// inotify pickup, failed/ for bad requests, concurrency, at-most-once across a crash, drain on
// SIGTERM, refusal of a secret-carrying environment, and the one-request command line.
#include <signal.h>

#include <algorithm>
#include <thread>

#include "aios/canonical.hpp"
#include "aios/process.hpp"
#include "executor/exchange_core.hpp"
#include "executor/fixture.hpp"
#include "support/witness.hpp"

namespace aios::executor::test {
namespace {

using aios::test::Daemon;
using aios::test::DaemonOptions;

// Waits up to 20 s for `path` to exist.
bool wait_for(const std::filesystem::path& path) {
  for (int i = 0; i < 4000; ++i) {
    if (std::filesystem::exists(std::filesystem::symlink_status(path))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

class Serve : public ExecutorTest {
 protected:
  Serve() { std::filesystem::create_directories(root()); }

  std::filesystem::path root() const { return dir_ / "exchange"; }
  std::filesystem::path requests() const { return root() / "requests"; }
  std::filesystem::path results() const { return root() / "results"; }
  std::filesystem::path failed() const { return root() / "failed"; }

  Daemon& start(unsigned concurrency = 1, std::vector<std::string> env = {}) {
    DaemonOptions options = aios::test::executor_options(root(), profiles(), dir_.path());
    options.args.insert(options.args.end(), {"--concurrency", std::to_string(concurrency)});
    options.env = std::move(env);
    options.env.push_back("TMPDIR=" + temporary().string());
    daemon_ = std::make_unique<Daemon>(options, dir_.path(), "executor");
    daemon_->start();
    return *daemon_;
  }

  // A request handed in the way the worker does it: written aside, renamed into requests/.
  void hand_in(const std::string& name, const json& request) {
    std::filesystem::create_directories(requests());
    const auto staging = requests() / ("." + name + ".tmp");
    write_text_file(staging, canonical_json(request));
    std::filesystem::rename(staging, requests() / name);
  }

  json request_named(const std::string& id) const {
    return request_value("hermes", default_payload(), "external-hermes-" + id);
  }

  json read_json(const std::filesystem::path& path) const {
    return json::parse(read_text_file(path));
  }

  std::unique_ptr<Daemon> daemon_;
};

// Given a running executor, a request renamed into requests/ should be answered in results/
// and the request removed.
TEST_F(Serve, PicksUpRenamedRequests) {
  write_profile("hermes",
                python_profile("hermes", write_script("ok.py", "print('{\"ok\": 1}')\n")));
  start();
  hand_in("external-hermes-0000000000000001.json", request_named("0000000000000001"));
  const auto result = results() / "external-hermes-0000000000000001.json";
  ASSERT_TRUE(wait_for(result)) << daemon_->log();
  EXPECT_EQ(read_json(result)["output_json"], json({{"ok", 1}}));
  // Removed once the result is durable, after it: the stop drains until then.
  EXPECT_TRUE(daemon_->stop().exited_with(0));
  EXPECT_FALSE(std::filesystem::exists(requests() / "external-hermes-0000000000000001.json"));
  EXPECT_TRUE(std::filesystem::is_empty(root() / "started"));
  EXPECT_TRUE(std::filesystem::is_empty(temporary()));
}

// Given malformed, symlinked and invalid requests, each should go to failed/ with its code and
// the executor should keep serving the next good one.
TEST_F(Serve, BadRequestsGoToFailedAndServingContinues) {
  write_profile("hermes", python_profile("hermes", write_script("ok.py", "print('{}')\n")));
  start();
  std::filesystem::create_directories(requests());
  write_text_file(requests() / "garbage.json", "{not json");
  write_text_file(dir_ / "target.json", canonical_json(request_named("0000000000000002")));
  std::filesystem::create_symlink(dir_ / "target.json", requests() / "linked.json");
  auto unsupported = request_named("0000000000000003");
  unsupported["runtime"] = "codex";
  hand_in("unsupported.json", unsupported);
  hand_in("good.json", request_named("0000000000000004"));
  ASSERT_TRUE(wait_for(results() / "good.json")) << daemon_->log();
  for (const auto& [name, error] : std::vector<std::pair<std::string, std::string>>{
           {"garbage.json", "EXTERNAL_AGENT_REQUEST_JSON_INVALID"},
           {"linked.json", "EXTERNAL_AGENT_REQUEST_FILE_INVALID"},
           {"unsupported.json", "EXTERNAL_AGENT_RUNTIME_UNSUPPORTED"}}) {
    ASSERT_TRUE(wait_for(failed() / name)) << name;
    EXPECT_EQ(read_json(failed() / name), json({{"error", error}})) << name;
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(requests() / name)));
  }
  EXPECT_TRUE(std::filesystem::exists(dir_ / "target.json"));  // the link, not its target, went
  EXPECT_TRUE(daemon_->stop().exited_with(0));
}

// Given --concurrency 3 and three requests, all three agents should run at once; with the
// default of 1, never more than one runs. The host sees every sandboxed agent, so the test
// counts them there (an agent has nowhere to leave a mark the others could see).
TEST_F(Serve, RunsUpToConcurrencyRequestsAtOnce) {
  const std::string marker = "aios-serve-concurrency-" + std::to_string(::getpid());
  auto profile = python_profile(
      "hermes", write_script("busy.py", "import time\ntime.sleep(1.5)\nprint('{}')\n"));
  profile["argv"].push_back(marker);
  write_profile("hermes", profile);
  const auto most_at_once = [&](const std::vector<std::string>& ids) {
    for (const auto& id : ids) hand_in(id + ".json", request_named(id));
    int most = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    const auto all_done = [&] {
      return std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
        return std::filesystem::exists(results() / (id + ".json"));
      });
    };
    while (!all_done() && std::chrono::steady_clock::now() < deadline) {
      most = std::max(most, aios::test::processes_with(marker, "/usr/bin/python3"));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(all_done()) << daemon_->log();
    return most;
  };
  start(3);
  EXPECT_EQ(most_at_once({"0000000000000011", "0000000000000012", "0000000000000013"}), 3);
  EXPECT_TRUE(daemon_->stop().exited_with(0));
  start(1);
  EXPECT_EQ(most_at_once({"0000000000000021", "0000000000000022", "0000000000000023"}), 1);
}

// Given a crash while an agent runs, the restarted executor must not run that request again
// (EXTERNAL_AGENT_OUTCOME_INDETERMINATE), but must run a request that never started, once. The
// agent that was running goes with the executor (its sandbox dies with its parent).
TEST_F(Serve, RestartNeverRunsAStartedRequestTwice) {
  const aios::test::Witness witness;
  const std::string marker = "aios-serve-restart-" + std::to_string(::getpid());
  auto profile = python_profile(
      "hermes",
      write_script("slow.py", witness.python() + "import json,sys,time\n"
                                                 "v=json.load(sys.stdin)\n"
                                                 "witness(v['goal'])\n"
                                                 "time.sleep(float(v['goal'].split('-')[1]))\n"
                                                 "print('{}')\n"));
  profile["argv"].push_back(marker);
  profile["network"] = {witness.destination()};
  write_profile("hermes", profile);
  auto& daemon = start();
  auto slow = request_named("0000000000000031");
  slow["payload"]["goal"] = "slow-30";
  hand_in("slow.json", slow);
  ASSERT_TRUE(wait_for(root() / "started" / "slow.json")) << daemon.log();
  // The agent itself is running (it reported), not just about to be spawned.
  for (int i = 0; i < 4000 && witness.count("slow-30") == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(witness.count("slow-30"), 1U) << daemon.log();
  // A request that is queued behind it and has not started when the executor dies.
  auto quick = request_named("0000000000000032");
  quick["payload"]["goal"] = "quick-0";
  hand_in("quick.json", quick);
  daemon.kill();
  for (int i = 0; i < 500 && aios::test::processes_with(marker, "/usr/bin/python3") > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(aios::test::processes_with(marker, "/usr/bin/python3"), 0);
  EXPECT_TRUE(std::filesystem::exists(requests() / "slow.json"));

  start();
  ASSERT_TRUE(wait_for(failed() / "slow.json")) << daemon_->log();
  EXPECT_EQ(read_json(failed() / "slow.json"),
            json({{"error", "EXTERNAL_AGENT_OUTCOME_INDETERMINATE"}}));
  ASSERT_TRUE(wait_for(results() / "quick.json")) << daemon_->log();
  EXPECT_FALSE(std::filesystem::exists(results() / "slow.json"));
  EXPECT_EQ(witness.count("slow-30"), 1U);
  EXPECT_EQ(witness.count("quick-0"), 1U);
  EXPECT_TRUE(daemon_->stop().exited_with(0));
  EXPECT_TRUE(std::filesystem::is_empty(root() / "started"));
  EXPECT_TRUE(std::filesystem::is_empty(requests()));
}

// Given a request whose result was written just before a crash (the request not yet removed),
// a restart should only clean up, not run it again; a result without the seal is no answer.
TEST_F(Serve, RestartSettlesAnsweredRequests) {
  write_profile("hermes", python_profile("hermes", write_script("never.py",
                                                                "import sys\n"
                                                                "sys.exit(9)\n")));
  hand_in("done.json", request_named("0000000000000041"));
  hand_in("forged.json", request_named("0000000000000043"));
  std::filesystem::create_directories(results());
  const auto key = ExchangeKey::from_file(aios::test::exchange_key_file(dir_.path()));
  write_answer(results() / "done.json", "{\"kept\": true}", key);
  // Written by someone without the key: not an answer, so the request runs after all.
  write_text_file(results() / "forged.json", "{\"kept\": true}");
  start();
  hand_in("after.json", request_named("0000000000000042"));
  ASSERT_TRUE(wait_for(failed() / "after.json")) << daemon_->log();  // serving goes on
  ASSERT_TRUE(wait_for(failed() / "forged.json")) << daemon_->log();
  EXPECT_FALSE(std::filesystem::exists(requests() / "done.json"));
  EXPECT_EQ(read_text_file(results() / "done.json"), "{\"kept\": true}");
  EXPECT_FALSE(std::filesystem::exists(failed() / "done.json"));
  EXPECT_FALSE(std::filesystem::exists(results() / "forged.json"));
  EXPECT_NE(read_text_file(failed() / "forged.json").find("EXTERNAL_AGENT_PROCESS_FAILED"),
            std::string::npos);
  const auto removed = daemon_->find_event("EXTERNAL_AGENT_ANSWER_REMOVED");
  ASSERT_TRUE(removed.has_value()) << daemon_->log();
  EXPECT_EQ(removed->at("error"), "EXTERNAL_AGENT_RESULT_MAC_INVALID");
}

// Given SIGTERM while an agent runs, the executor should let it finish, write its result and
// exit 0 (drain), not abandon it.
TEST_F(Serve, DrainsOnSigterm) {
  write_profile("hermes", python_profile("hermes", write_script("slowish.py",
                                                                "import time\n"
                                                                "time.sleep(1)\n"
                                                                "print('{\"done\": true}')\n")));
  auto& daemon = start();
  hand_in("drain.json", request_named("0000000000000051"));
  ASSERT_TRUE(wait_for(root() / "started" / "drain.json")) << daemon.log();
  EXPECT_TRUE(daemon.stop().exited_with(0));
  EXPECT_EQ(read_json(results() / "drain.json")["output_json"], json({{"done", true}}));
  EXPECT_TRUE(daemon.find_event("EXTERNAL_AGENT_EXECUTOR_DRAINING").has_value());
}

// Given a secret-looking variable in its own environment, the executor should refuse to start.
TEST_F(Serve, RefusesSecretEnvironment) {
  DaemonOptions options;
  options.binary = aios::test::daemon_binary("aios-external-agent-executor");
  options.args = {"--root", root().string(), "--profile-root", profiles().string()};
  options.env = {"GITHUB_TOKEN=ghp_example"};
  Daemon daemon(options, dir_.path(), "secret-env");
  daemon.spawn();
  const auto status = daemon.wait_exit(std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->exited_with(69));
  EXPECT_NE(daemon.log().find("EXTERNAL_AGENT_CREDENTIAL_ENV_EXPOSED:GITHUB_TOKEN"),
            std::string::npos)
      << daemon.log();
  EXPECT_EQ(daemon.log().find("ghp_example"), std::string::npos);
}

// Given serve mode without an exchange key (none at the default path, or one too short), the
// executor should refuse to start rather than write answers nobody can check.
TEST_F(Serve, RefusesToServeWithoutTheExchangeKey) {
  write_text_file(dir_ / "short-key", std::string(16, 'k'));
  const std::vector<std::vector<std::string>> cases = {
      {}, {"--exchange-key-file", (dir_ / "short-key").string()}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& key_args = cases[i];
    DaemonOptions options;
    options.binary = aios::test::daemon_binary("aios-external-agent-executor");
    options.args = {"--root", root().string(), "--profile-root", profiles().string()};
    options.args.insert(options.args.end(), key_args.begin(), key_args.end());
    options.env = {"CREDENTIALS_DIRECTORY=" + (dir_ / "no-credentials").string()};
    Daemon daemon(options, dir_.path(), "no-key-" + std::to_string(i));
    daemon.spawn();
    const auto status = daemon.wait_exit(std::chrono::seconds(10));
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(status->exited_with(69));
    EXPECT_NE(daemon.log().find("EXTERNAL_AGENT_EXCHANGE_KEY_INVALID"), std::string::npos)
        << daemon.log();
  }
}

// Given --request and --result, one request runs: 0 and a result, or 1 and the code on stderr.
TEST_F(Serve, OneRequestModeExitsWithTheCode) {
  write_profile("hermes", python_profile("hermes", write_script("ok.py", "print('{}')\n")));
  write_request(request_value("hermes"));
  const auto one = [&](const std::filesystem::path& profile_root) {
    std::string err;
    process::Spec spec;
    spec.argv = {aios::test::daemon_binary("aios-external-agent-executor").string(),
                 "--profile-root",
                 profile_root.string(),
                 "--request",
                 request_path().string(),
                 "--result",
                 result_path().string()};
    spec.environment = {"PATH=/usr/bin", "TMPDIR=" + temporary().string()};
    spec.working_directory = dir_.path();
    spec.timeout = std::chrono::seconds(30);
    spec.on_stderr = [&err](std::string_view chunk) { err.append(chunk); };
    const auto outcome = process::run(spec);
    return std::make_pair(outcome.exit_code, err);
  };
  EXPECT_EQ(one(profiles()), std::make_pair(0, std::string()));
  EXPECT_EQ(read_json(result_path())["output_json"], json::object());
  EXPECT_EQ(one(dir_ / "no-profiles"),
            std::make_pair(1, std::string("EXTERNAL_AGENT_PROFILE_UNAVAILABLE\n")));
}

}  // namespace
}  // namespace aios::executor::test
