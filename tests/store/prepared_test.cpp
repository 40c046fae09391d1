// store::Prepared: a statement kept by a pooled connection behaves on every use as a freshly
// prepared one (no pending row, no old bindings), two uses of one SQL text at once are
// independent, a failed transaction leaves nothing behind for the next, and it works on a
// connection that is not a Database's.

#include <SQLiteCpp/SQLiteCpp.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

constexpr const char* kEvents = "SELECT event_type FROM task_events WHERE task_id=?1 ORDER BY 1";

class PreparedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_.write([](SQLite::Database& connection) {
      connection.exec(
          "INSERT INTO task_events(task_id,event_type) VALUES ('t1','A'),('t1','B'),('t1','C'),"
          "('t2','X')");
    });
  }

  std::vector<std::string> events(SQLite::Database& connection, const std::string& task_id) {
    store::Prepared query(connection, kEvents);
    query->bind(1, task_id);
    std::vector<std::string> types;
    while (query->executeStep()) types.push_back(query->getColumn(0).getString());
    return types;
  }

  ScopedTempDir dir_;
  // One connection, so every use below meets the statements the earlier ones left.
  Database db_{DatabaseOptions{.path = dir_.path() / "state.sqlite3", .connections = 1}};
};

TEST_F(PreparedTest, KeptStatementStartsFreshAfterAnAbandonedIteration) {
  // Given a use that stops after the first row, the next use of the same SQL should read from
  // the first row again, in this transaction and in the next one.
  db_.read([&](SQLite::Database& connection) {
    store::Prepared query(connection, kEvents);
    query->bind(1, "t1");
    ASSERT_TRUE(query->executeStep());
    EXPECT_EQ(query->getColumn(0).getString(), "A");
  });
  db_.read([&](SQLite::Database& connection) {
    EXPECT_EQ(events(connection, "t1"), (std::vector<std::string>{"A", "B", "C"}));
    EXPECT_EQ(events(connection, "t1"), (std::vector<std::string>{"A", "B", "C"}));
  });
}

TEST_F(PreparedTest, BindingsOfAnEarlierUseAreCleared) {
  // Given a use that bound 't2', an unbound use of the same SQL should match nothing (NULL),
  // as a freshly prepared statement would, not the earlier task's rows.
  db_.read([&](SQLite::Database& connection) {
    EXPECT_EQ(events(connection, "t2"), (std::vector<std::string>{"X"}));
    store::Prepared unbound(connection, kEvents);
    EXPECT_FALSE(unbound->executeStep());
  });
}

TEST_F(PreparedTest, SameSqlInUseTwiceAtOnceIsTwoStatements) {
  // Given two cursors on the same SQL open together (as the poll's group cursors are), each
  // should walk its own rows.
  db_.read([&](SQLite::Database& connection) {
    store::Prepared first(connection, kEvents);
    store::Prepared second(connection, kEvents);
    first->bind(1, "t1");
    second->bind(1, "t2");
    ASSERT_TRUE(first->executeStep());
    ASSERT_TRUE(second->executeStep());
    ASSERT_TRUE(first->executeStep());
    EXPECT_EQ(first->getColumn(0).getString(), "B");
    EXPECT_EQ(second->getColumn(0).getString(), "X");
    EXPECT_FALSE(second->executeStep());
  });
}

TEST_F(PreparedTest, FailedWriteLeavesTheKeptStatementUsable) {
  // Given a write that steps a kept statement and then fails (rolled back), the next write
  // should use the same SQL normally and see none of the failed write's rows.
  const std::string insert = "INSERT INTO task_events(task_id,event_type) VALUES (?1,?2)";
  EXPECT_THROW(db_.write([&](SQLite::Database& connection) {
    store::Prepared statement(connection, insert);
    statement->bind(1, "t3");
    statement->bind(2, "LOST");
    statement->exec();
    throw std::runtime_error("body failed");
  }),
               std::runtime_error);
  db_.write([&](SQLite::Database& connection) {
    store::Prepared statement(connection, insert);
    statement->bind(1, "t3");
    statement->bind(2, "KEPT");
    EXPECT_EQ(statement->exec(), 1);
  });
  db_.read([&](SQLite::Database& connection) {
    EXPECT_EQ(events(connection, "t3"), (std::vector<std::string>{"KEPT"}));
  });
}

TEST_F(PreparedTest, PlainConnectionGetsAStatementOfItsOwn) {
  // Given a connection that is not one of a Database's (a tool or test opening the file), the
  // same call should work, prepared for that use only.
  SQLite::Database plain((dir_.path() / "state.sqlite3").string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(events(plain, "t1"), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(events(plain, "t2"), (std::vector<std::string>{"X"}));
}

}  // namespace
}  // namespace aios::fleet_test
