// Every file and row reader refuses JSON nested 10^4, 10^5 and 10^6 levels deep with a code,
// never with a crash: runtime profiles, backend configurations, executor requests, sealed results,
// agent and backend output, worker checkpoints and stored task rows. (The HTTP bodies of the
// three services: hostile_json_test.cpp.)
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <functional>
#include <string>

#include "aios/executor.hpp"
#include "executor/exchange_core.hpp"
#include "fleet/internal.hpp"
#include "store/sqlite/database.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"
#include "worker/internal.hpp"

namespace aios::security_test {
namespace {

namespace fs = std::filesystem;
using aios::test::code_of;
using aios::test::write_text_file;

// {"a":[[[…]]]}: an object, so a reader that wants one gets past its first check.
std::string nested(std::size_t depth) {
  return "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
}

class DeepReadersTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  // `read` refuses with codes[i] at 10^(4+i) levels: the nesting bound where the text is
  // within the reader's size bound, the size bound past it. A crash fails the whole binary.
  void expect_refused(const char* reader, const std::function<void()>& read,
                      const std::array<const char*, 3>& codes) const {
    const std::size_t i = GetParam() == 10000 ? 0 : GetParam() == 100000 ? 1 : 2;
    EXPECT_EQ(code_of(read), codes[i]) << reader << " at " << GetParam() << " levels";
  }
  fs::path dir() const { return dir_.path(); }
  aios::test::ScopedTempDir dir_{"aios-deep-readers"};
};

TEST_P(DeepReadersTest, EveryReaderRefusesItWithACode) {
  const std::string deep = nested(GetParam());

  fs::create_directories(dir() / "profiles");
  write_text_file(dir() / "profiles" / "hermes.json", deep);
  expect_refused("runtime profile",
                 [&] { executor::load_profile("hermes", dir() / "profiles", {"/usr/bin"}); },
                 {"JSON_NESTING_TOO_DEEP", "EXTERNAL_AGENT_PROFILE_UNAVAILABLE",
                  "EXTERNAL_AGENT_PROFILE_UNAVAILABLE"});

  fs::create_directories(dir() / "broker");
  write_text_file(dir() / "broker" / "agent-runtime-codex.conf", deep);
  expect_refused("backend configuration",
                 [&] { broker::load_backend("codex", dir() / "broker", {}); },
                 {"JSON_NESTING_TOO_DEEP", "RUNTIME_BROKER_BACKEND_CONFIG_UNAVAILABLE",
                  "RUNTIME_BROKER_BACKEND_CONFIG_UNAVAILABLE"});

  write_text_file(dir() / "request.json", deep);
  executor::ExecuteOptions options;
  options.profile_root = dir() / "profiles";
  options.temporary_root = dir();
  options.environment = &system_environment();
  expect_refused(
      "executor request", [&] { executor::run_request(dir() / "request.json", options); },
      {"JSON_NESTING_TOO_DEEP", "JSON_NESTING_TOO_DEEP", "EXTERNAL_AGENT_REQUEST_TOO_LARGE"});

  aios::test::write_token_file(dir() / "key", 64);
  const auto key = executor::ExchangeKey::from_file(dir() / "key");
  fs::create_directories(dir() / "exchange" / "results");
  executor::write_answer(dir() / "exchange" / "results" / "external-hermes-0123456789abcdef.json",
                         deep, key);
  const executor::Exchange exchange(dir() / "exchange", key);
  expect_refused("sealed result",
                 [&] {
                   exchange.execute({.request_id = "external-hermes-0123456789abcdef",
                                     .runtime = "hermes",
                                     .task_id = "task-deep",
                                     .execution_digest = std::string(64, 'd'),
                                     .payload = {{"goal", "Return ok."}}});
                 },
                 {"JSON_NESTING_TOO_DEEP", "JSON_NESTING_TOO_DEEP", "JSON_NESTING_TOO_DEEP"});

  expect_refused("backend output", [&] { broker::parse_runtime_result(deep); },
                 {"JSON_NESTING_TOO_DEEP", "JSON_NESTING_TOO_DEEP", "JSON_NESTING_TOO_DEEP"});

  const fs::path checkpoints = dir() / "checkpoints.sqlite3";
  {
    worker::CheckpointStore store(checkpoints, system_environment().clock);
    SQLite::Database db(checkpoints.string(), SQLite::OPEN_READWRITE);
    SQLite::Statement insert(db,
                             "INSERT INTO worker_checkpoints VALUES "
                             "('task-deep',?,1,'lease','claimed',?,'now')");
    insert.bind(1, std::string(64, 'd'));
    insert.bind(2, deep);
    insert.exec();
    expect_refused("worker checkpoint", [&] { store.load("task-deep"); },
                   {"JSON_NESTING_TOO_DEEP", "JSON_NESTING_TOO_DEEP", "JSON_NESTING_TOO_DEEP"});
  }

  expect_refused("stored row", [&] { task::parse_column(deep, nlohmann::json::object()); },
                 {"STORE_FAILURE", "STORE_FAILURE", "STORE_FAILURE"});
}

INSTANTIATE_TEST_SUITE_P(Depths, DeepReadersTest, ::testing::Values(10000, 100000, 1000000));

}  // namespace
}  // namespace aios::security_test
