// The worker-side exchange against a real Server in this process: results reused across
// restarts, id conflicts, failures reported, answers sealed, result binding and digest verified.
#include <atomic>
#include <thread>

#include "aios/canonical.hpp"
#include "executor/exchange_core.hpp"
#include "executor/fixture.hpp"
#include "support/code_of.hpp"

namespace aios::executor::test {
namespace {

using aios::test::code_of;

// Answers with the goal (the test counts the runs at the handler).
constexpr const char* kCountingHelper =
    "import json,os,sys\n"
    "value=json.load(sys.stdin)\n"
    "print(json.dumps({'answer':'ok','goal':value['goal']}))\n";

class ExchangeTest : public ExecutorTest {
 protected:
  ExchangeTest() {
    aios::test::write_token_file(dir_ / "exchange_result_key", 64);
    key_ = ExchangeKey::from_file(dir_ / "exchange_result_key");
    exchange_ = std::make_unique<Exchange>(root(), key_);
    std::filesystem::create_directories(root());
    write_profile("hermes", python_profile("hermes", write_script("helper.py", kCountingHelper)));
  }
  ~ExchangeTest() override { stop_server(); }

  std::filesystem::path root() const { return dir_ / "exchange"; }

  void start_server() {
    // Runs are counted here: the agent's sandbox has nowhere to leave a mark of its own.
    ServeOptions serve{.root = root(), .execute = options_, .concurrency = 1, .key = key_};
    serve.handler = [this](const std::filesystem::path& request, const ExecuteOptions& execute) {
      ++runs_;
      return run_request(request, execute);
    };
    server_ = std::make_unique<Server>(std::move(serve));
    thread_ = std::thread([this] { server_->run(); });
  }
  void stop_server() {
    if (!server_) return;
    server_->stop();
    thread_.join();
    server_.reset();
  }
  int runs() const { return runs_; }
  Exchange::Call call(const std::string& goal = "Return ok.") const {
    auto payload = default_payload();
    payload["goal"] = goal;
    return {.request_id = "external-hermes-0123456789abcdef",
            .runtime = "hermes",
            .task_id = "task-hermes-runtime",
            .execution_digest = kDigest,
            .payload = payload,
            .timeout = std::chrono::seconds(30)};
  }
  std::filesystem::path result_file() const {
    return root() / "results" / "external-hermes-0123456789abcdef.json";
  }
  std::filesystem::path request_file() const {
    return root() / "requests" / "external-hermes-0123456789abcdef.json";
  }
  // Waits until the server has settled the request (removed it from requests/).
  void wait_settled() const {
    for (int i = 0; i < 1000 && std::filesystem::exists(request_file()); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_FALSE(std::filesystem::exists(request_file()));
  }

  ExchangeKey key_;
  std::unique_ptr<Exchange> exchange_;
  std::unique_ptr<Server> server_;
  std::atomic<int> runs_{0};
  std::thread thread_;
};

// Given a request answered once, the same call after a restart should reuse the durable result
// instead of running the agent again.
TEST_F(ExchangeTest, ReusesTheResultAcrossRestarts) {
  start_server();
  const auto first = exchange_->execute(call());
  EXPECT_EQ(first["output_json"]["answer"], "ok");
  EXPECT_EQ(first["request_sha256"], digest(validate_request(request_value("hermes"))));
  stop_server();
  EXPECT_FALSE(
      std::filesystem::exists(root() / "requests" / "external-hermes-0123456789abcdef.json"));
  const auto again = exchange_->execute(call());  // no server running: answered from results/
  EXPECT_EQ(again, first);
  start_server();
  EXPECT_EQ(exchange_->execute(call()), first);
  EXPECT_EQ(runs(), 1);
}

// Given a different request under an id already in use, the exchange should refuse it.
TEST_F(ExchangeTest, DetectsRequestIdConflicts) {
  std::filesystem::create_directories(root() / "requests");
  const auto request_file = root() / "requests" / "external-hermes-0123456789abcdef.json";
  write_text_file(request_file, canonical_json(validate_request(request_value("hermes"))));
  EXPECT_EQ(code_of([&] { exchange_->execute(call("Another goal.")); }),
            "EXTERNAL_AGENT_REQUEST_ID_CONFLICT");
  write_text_file(request_file, "{broken");
  EXPECT_EQ(code_of([&] { exchange_->execute(call()); }),
            "EXTERNAL_AGENT_EXISTING_REQUEST_INVALID");
  EXPECT_EQ(runs(), 0);
}

// Given sealed results that do not belong to the request or were altered (an executor at fault,
// since only it holds the key), the exchange should refuse them; an invalid call is refused
// before anything is written.
TEST_F(ExchangeTest, VerifiesBindingAndDigest) {
  start_server();
  const auto result = exchange_->execute(call());
  stop_server();
  auto altered = result;
  altered["output_text"] = "something else";
  write_answer(result_file(), canonical_json(altered), key_);
  EXPECT_EQ(code_of([&] { exchange_->execute(call()); }), "EXTERNAL_AGENT_RESULT_DIGEST_INVALID");
  auto rebound = result;
  rebound["task_id"] = "task-other";
  rebound["result_sha256"] = result_digest(rebound);
  write_answer(result_file(), canonical_json(rebound), key_);
  EXPECT_EQ(code_of([&] { exchange_->execute(call()); }), "EXTERNAL_AGENT_RESULT_BINDING_INVALID");
  write_answer(result_file(), canonical_json(result), key_);
  EXPECT_EQ(code_of([&] { exchange_->execute(call("Another goal.")); }),
            "EXTERNAL_AGENT_RESULT_BINDING_INVALID");
  write_answer(result_file(), "not json", key_);
  EXPECT_EQ(code_of([&] { exchange_->execute(call()); }), "EXTERNAL_AGENT_RESULT_INVALID");
  auto bad_call = call();
  bad_call.request_id = "bad/id";
  EXPECT_EQ(code_of([&] { exchange_->execute(bad_call); }), "EXTERNAL_AGENT_REQUEST_ID_INVALID");
}

// Given a request the executor fails, the exchange should raise the recorded code, and keep
// raising it (the failure is durable too).
TEST_F(ExchangeTest, ReportsRecordedFailures) {
  write_profile("hermes", python_profile("hermes", write_script("fail.py",
                                                                "import sys\n"
                                                                "sys.stderr.write('boom')\n"
                                                                "sys.exit(2)\n")));
  start_server();
  try {
    exchange_->execute(call());
    FAIL() << "the failure must be raised";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), "EXTERNAL_AGENT_PROCESS_FAILED");
    EXPECT_EQ(error.detail(), "2:boom");
  }
  EXPECT_EQ(read_text_file(root() / "failed" / "external-hermes-0123456789abcdef.json"),
            "{\"error\": \"EXTERNAL_AGENT_PROCESS_FAILED:2:boom\"}\n");
  stop_server();
  EXPECT_EQ(code_of([&] { exchange_->execute(call()); }), "EXTERNAL_AGENT_PROCESS_FAILED");
}

// Given a failure file without a code of ours (or unreadable), the exchange should say the
// executor failed rather than invent a code.
TEST_F(ExchangeTest, UnknownRecordedFailuresAreExecutorFailed) {
  std::filesystem::create_directories(root() / "failed");
  const auto failed = root() / "failed" / "external-hermes-0123456789abcdef.json";
  for (const char* content : {"{\"error\": \"SOMETHING_ELSE\"}", "{}", "not json"}) {
    write_answer(failed, content, key_);
    EXPECT_EQ(code_of([&] { exchange_->execute(call()); }), "EXTERNAL_AGENT_EXECUTOR_FAILED")
        << content;
  }
}

// Given no executor, the exchange should give up at its timeout, leaving the request queued.
TEST_F(ExchangeTest, TimesOutWithoutAnExecutor) {
  auto quick = call();
  quick.timeout = std::chrono::milliseconds(200);
  EXPECT_EQ(code_of([&] { exchange_->execute(quick); }), "EXTERNAL_AGENT_EXCHANGE_TIMEOUT");
  EXPECT_TRUE(
      std::filesystem::exists(root() / "requests" / "external-hermes-0123456789abcdef.json"));
  // The queued request is run once the executor starts, and the waiting call sees it.
  start_server();
  EXPECT_EQ(exchange_->execute(call())["output_json"]["answer"], "ok");
  EXPECT_EQ(runs(), 1);
}

// Given a missing exchange root or no key, the server refuses to start; without a key the
// worker's side refuses before it writes a request.
TEST_F(ExchangeTest, ServerNeedsTheExchangeRootAndTheKey) {
  EXPECT_EQ(code_of([&] {
              Server({.root = dir_ / "absent", .execute = options_, .concurrency = 1, .key = key_});
            }),
            "EXTERNAL_AGENT_EXCHANGE_UNAVAILABLE");
  // A symlinked root is refused however it is spelled (lstat("link/") would follow it).
  std::filesystem::create_directory_symlink(root(), dir_ / "linked_root");
  for (const std::string tail : {"", "/", "/."}) {
    EXPECT_EQ(code_of([&] {
                Server({.root = (dir_ / "linked_root").string() + tail,
                        .execute = options_,
                        .concurrency = 1,
                        .key = key_});
              }),
              "EXTERNAL_AGENT_EXCHANGE_UNAVAILABLE")
        << tail;
  }
  EXPECT_EQ(code_of([&] {
              Server({.root = root(), .execute = options_, .concurrency = 1, .key = ExchangeKey()});
            }),
            "EXTERNAL_AGENT_EXCHANGE_KEY_INVALID");
  EXPECT_EQ(code_of([&] { Exchange(root(), ExchangeKey()).execute(call()); }),
            "EXTERNAL_AGENT_EXCHANGE_KEY_INVALID");
  EXPECT_FALSE(std::filesystem::exists(request_file()));
  write_text_file(dir_ / "short_key", std::string(31, 'k'));
  EXPECT_EQ(code_of([&] { ExchangeKey::from_file(dir_ / "short_key"); }),
            "EXTERNAL_AGENT_EXCHANGE_KEY_INVALID");
  std::filesystem::create_symlink(dir_ / "exchange_result_key", dir_ / "linked_key");
  EXPECT_EQ(code_of([&] { ExchangeKey::from_file(dir_ / "linked_key"); }),
            "EXTERNAL_AGENT_EXCHANGE_KEY_INVALID");
}

// Given answers someone without the key wrote (no seal, a seal of other bytes, a genuine
// answer renamed to another request, a seal under another key), the worker's side should refuse
// each with EXTERNAL_AGENT_RESULT_MAC_INVALID rather than take it, failures included.
TEST_F(ExchangeTest, RefusesAnswersWithoutTheExecutorsSeal) {
  start_server();
  const auto genuine = exchange_->execute(call());
  stop_server();
  const std::string sealed = read_text_file(result_file());
  const auto sidecar = result_file().string() + ".mac";
  ASSERT_TRUE(std::filesystem::exists(sidecar));

  auto forged = genuine;
  forged["output_text"] = "forged";
  forged["result_sha256"] = result_digest(forged);
  write_text_file(result_file(), canonical_json(forged) + "\n");  // the old seal stays
  EXPECT_EQ(code_of([&] { exchange_->execute(call()); }), "EXTERNAL_AGENT_RESULT_MAC_INVALID");
  std::filesystem::remove(sidecar);
  write_text_file(result_file(), sealed);  // the genuine bytes, but no seal
  EXPECT_EQ(code_of([&] { exchange_->execute(call()); }), "EXTERNAL_AGENT_RESULT_MAC_INVALID");
  aios::test::write_token_file(dir_ / "other_key", 64);
  write_answer(result_file(), sealed, ExchangeKey::from_file(dir_ / "other_key"));
  EXPECT_EQ(code_of([&] { exchange_->execute(call()); }), "EXTERNAL_AGENT_RESULT_MAC_INVALID");
  write_answer(result_file(), sealed, key_);
  EXPECT_EQ(exchange_->execute(call()), genuine);

  // A genuine answer of this request, sealed for its name, is no answer for another.
  auto other = call();
  other.request_id = "external-hermes-fedcba9876543210";
  const auto other_result = root() / "results" / (other.request_id + ".json");
  std::filesystem::copy_file(result_file(), other_result);
  std::filesystem::copy_file(sidecar, other_result.string() + ".mac");
  EXPECT_EQ(code_of([&] { exchange_->execute(other); }), "EXTERNAL_AGENT_RESULT_MAC_INVALID");

  auto failing = call();
  failing.request_id = "external-hermes-aaaaaaaaaaaaaaaa";
  write_text_file(root() / "failed" / (failing.request_id + ".json"),
                  "{\"error\": \"EXTERNAL_AGENT_TIMEOUT\"}\n");
  EXPECT_EQ(code_of([&] { exchange_->execute(failing); }), "EXTERNAL_AGENT_RESULT_MAC_INVALID");
}

// Given a request whose result or failure someone else wrote before the executor got to it,
// the executor should remove the forgery and run the request, not skip it as done.
TEST_F(ExchangeTest, TheExecutorRunsARequestWhoseAnswerWasForged) {
  for (const auto* directory : {"results", "failed"}) {
    SCOPED_TRACE(directory);
    std::filesystem::remove_all(root());
    std::filesystem::create_directories(root() / "requests");
    std::filesystem::create_directories(root() / directory);
    const auto forged = root() / directory / "external-hermes-0123456789abcdef.json";
    write_text_file(forged, "{\"error\": \"EXTERNAL_AGENT_TIMEOUT\"}\n");
    write_text_file(request_file(), canonical_json(validate_request(request_value("hermes"))));
    const int before = runs();
    start_server();
    wait_settled();
    stop_server();
    EXPECT_EQ(runs(), before + 1);
    EXPECT_FALSE(std::filesystem::exists(root() / "failed" / forged.filename()));
    EXPECT_EQ(exchange_->execute(call())["output_json"]["answer"], "ok");
  }
}

}  // namespace
}  // namespace aios::executor::test
