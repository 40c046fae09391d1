// Database::write's group commit: writes queued while another commits share its successor's
// transaction, each in its own savepoint, so every acknowledged write is durable, a failing
// write rolls back alone, and a write from inside a write is refused instead of waiting for
// itself.

#include <SQLiteCpp/SQLiteCpp.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

void insert_event(SQLite::Database& connection, const std::string& task_id) {
  store::Prepared insert(connection, "INSERT INTO task_events(task_id,event_type) VALUES (?,'W')");
  insert->bind(1, task_id);
  insert->exec();
}

class GroupCommitTest : public ::testing::Test {
 protected:
  std::set<std::string> tasks_with_events() {
    std::set<std::string> tasks;
    db_.read([&](SQLite::Database& connection) {
      SQLite::Statement query(connection, "SELECT task_id FROM task_events");
      while (query.executeStep()) tasks.insert(query.getColumn(0).getString());
    });
    return tasks;
  }

  ScopedTempDir dir_;
  Database db_{DatabaseOptions{.path = dir_.path() / "state.sqlite3"}};
};

TEST_F(GroupCommitTest, EveryWriteOfManyConcurrentWritersCommits) {
  // Given 8 threads writing 40 rows each at once, every acknowledged row should be there.
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t) {
    writers.emplace_back([this, t] {
      for (int i = 0; i < 40; ++i) {
        db_.write([&](SQLite::Database& connection) {
          insert_event(connection, "t" + std::to_string(t) + "-" + std::to_string(i));
        });
      }
    });
  }
  for (auto& writer : writers) writer.join();
  EXPECT_EQ(tasks_with_events().size(), 320U);
}

TEST_F(GroupCommitTest, AFailingWriteInABatchRollsBackAloneAndTheOthersCommit) {
  // Given a write that holds the writer until seven other threads have queued theirs, the
  // queued writes should be committed together by one leader, and the one that fails after
  // inserting its row should lose that row and report its own error, the others not.
  constexpr int kQueued = 7;
  constexpr int kFailing = 3;
  std::atomic<bool> holding{false};
  std::atomic<int> calling{0};
  std::vector<std::thread::id> ran_on(kQueued);
  std::vector<std::thread::id> called_from(kQueued);
  std::vector<std::string> codes(kQueued);
  std::thread first([&] {
    db_.write([&](SQLite::Database& connection) {
      insert_event(connection, "first");
      holding = true;
      while (calling.load() < kQueued) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      // The callers are between announcing themselves and queueing: give them time to queue.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    });
  });
  std::vector<std::thread> queued;
  for (int w = 0; w < kQueued; ++w) {
    queued.emplace_back([&, w] {
      const auto index = static_cast<std::size_t>(w);
      while (!holding.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      called_from[index] = std::this_thread::get_id();
      ++calling;
      codes[index] = code_of([&] {
        db_.write([&](SQLite::Database& connection) {
          ran_on[index] = std::this_thread::get_id();
          insert_event(connection, "queued-" + std::to_string(w));
          if (w == kFailing) throw Error(ErrorCode::TASK_REVISION_CONFLICT, "refused on purpose");
        });
      });
    });
  }
  first.join();
  for (auto& writer : queued) writer.join();

  std::set<std::thread::id> leaders(ran_on.begin(), ran_on.end());
  EXPECT_EQ(leaders.size(), 1U) << "the queued writes should have run in one batch";
  int run_by_another_thread = 0;
  for (std::size_t i = 0; i < ran_on.size(); ++i)
    run_by_another_thread += ran_on[i] != called_from[i];
  EXPECT_EQ(run_by_another_thread, kQueued - 1);

  std::set<std::string> expected = {"first"};
  for (int w = 0; w < kQueued; ++w) {
    const auto index = static_cast<std::size_t>(w);
    if (w == kFailing) {
      EXPECT_EQ(codes[index], "TASK_REVISION_CONFLICT");
    } else {
      EXPECT_EQ(codes[index], kOk) << "writer " << w;
      expected.insert("queued-" + std::to_string(w));
    }
  }
  EXPECT_EQ(tasks_with_events(), expected);
}

TEST_F(GroupCommitTest, AFailedWriteLeavesNoOpenSavepointForTheNext) {
  // Given a write that failed, the next write on the same pool should commit normally and
  // alone, with nothing of the failed one.
  EXPECT_EQ(code_of([&] {
              db_.write([](SQLite::Database& connection) {
                insert_event(connection, "failed");
                connection.exec("INSERT INTO no_such_table VALUES (1)");
              });
            }),
            "STORE_FAILURE");
  db_.write([](SQLite::Database& connection) { insert_event(connection, "next"); });
  EXPECT_EQ(tasks_with_events(), (std::set<std::string>{"next"}));
}

TEST_F(GroupCommitTest, AWriteFromInsideAWriteIsRefusedInsteadOfWaitingForItself) {
  // Given a body that calls write, the inner write should fail with STORE_FAILURE and the outer
  // one, which lets it propagate, should commit nothing.
  EXPECT_EQ(code_of([&] {
              db_.write([&](SQLite::Database& connection) {
                insert_event(connection, "outer");
                db_.write([](SQLite::Database& inner) { insert_event(inner, "inner"); });
              });
            }),
            "STORE_FAILURE");
  EXPECT_TRUE(tasks_with_events().empty());
}

}  // namespace
}  // namespace aios::fleet_test
