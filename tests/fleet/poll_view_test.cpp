// A poll answers from cached task views (fleet::TaskViewCache). The answer must be the bytes
// the uncached poll gave (nlohmann's dump of {"tasks": [view_of(row)...]}) and must follow every
// change of a row, including writes that keep the revision (a heartbeat's lease, another
// process writing the table); the cache stays within its bound.

#include <SQLiteCpp/SQLiteCpp.h>

#include <string>
#include <vector>

#include "fleet/fleet_fixture.hpp"
#include "fleet/internal.hpp"

namespace aios::fleet_test {
namespace {

class PollViewTest : public PlaneTest {
 protected:
  void SetUp() override {
    agent_ = make_agent("agent-views");
    register_worker(agent_, "worker-views", {{"max_concurrency", 4}});
    register_worker(agent_, "worker-other", {{"max_concurrency", 4}});
  }

  std::string poll_text(const std::string& worker_id = "worker-views") {
    return plane_.poll_text(agent_, fleet::poll_request_of({{"worker_id", worker_id}}));
  }

  // What the poll answered before its views were cached: the dump of the owner's views.
  std::string dump_of_views(const std::vector<std::string>& task_ids) {
    Json tasks = Json::array();
    for (const auto& id : task_ids) tasks.push_back(view(id));
    return Json{{"tasks", tasks}}.dump();
  }

  Agent agent_;
};

TEST_F(PollViewTest, AnswerIsTheDumpOfTheViewsOnEveryPoll) {
  // Given two queued tasks, the first poll (views built) and the second (views cached) should
  // both answer exactly the dump of the tasks' views, and poll() should parse to the same.
  create_task("view-a");
  create_task("view-b");
  const std::string expected = dump_of_views({"view-a", "view-b"});

  EXPECT_EQ(poll_text(), expected);
  EXPECT_EQ(poll_text(), expected);
  const Json polled = plane_.poll(agent_, fleet::poll_request_of({{"worker_id", "worker-views"}}));
  EXPECT_EQ(polled, Json::parse(expected));
}

TEST_F(PollViewTest, EmptyQueueAnswersAnEmptyList) {
  const Json empty = {{"tasks", Json::array()}};
  EXPECT_EQ(poll_text(), empty.dump());
}

TEST_F(PollViewTest, RequeuedTaskShowsItsNewRevisionAndAttempt) {
  // Given a polled task, claimed and released back to the queue, the next poll should show the
  // requeued row (new revision, attempt 1), not the view cached at the first poll. (The
  // releasing worker has the task quarantined, so another worker polls it.)
  create_task("view-requeue");
  const Json before = Json::parse(poll_text("worker-other"));
  ASSERT_EQ(before["tasks"].size(), 1u);
  ASSERT_EQ(before["tasks"][0]["attempt"], 0);

  release(agent_, claim(agent_, "view-requeue", "worker-views"));
  const Json after = Json::parse(poll_text("worker-other"));

  ASSERT_EQ(after["tasks"].size(), 1u);
  EXPECT_EQ(after["tasks"][0]["attempt"], 1);
  EXPECT_GT(after["tasks"][0]["revision"], before["tasks"][0]["revision"]);
  EXPECT_EQ(after["tasks"][0]["status"], "QUEUED");
  EXPECT_EQ(after["tasks"][0], view("view-requeue"));
}

TEST_F(PollViewTest, WriteThatKeepsTheRevisionIsStillSeen) {
  // Given a polled task whose metadata another process rewrites without a new revision, the
  // next poll should show the new metadata: the cache keys on the whole row, not the revision.
  create_task("view-foreign");
  const Json before = Json::parse(poll_text());
  ASSERT_EQ(before["tasks"].size(), 1u);

  Json metadata = before["tasks"][0]["metadata"];
  metadata["note"] = "written elsewhere";
  db_.write([&](SQLite::Database& db) {
    SQLite::Statement update(db, "UPDATE tasks SET metadata_json=? WHERE task_id=?");
    update.bind(1, metadata.dump());
    update.bind(2, "view-foreign");
    update.exec();
  });
  const Json after = Json::parse(poll_text());

  ASSERT_EQ(after["tasks"].size(), 1u);
  EXPECT_EQ(after["tasks"][0]["revision"], before["tasks"][0]["revision"]);
  EXPECT_EQ(after["tasks"][0]["metadata"]["note"], "written elsewhere");
  EXPECT_EQ(poll_text(), dump_of_views({"view-foreign"}));
}

TEST(TaskViewCacheTest, ServesTheViewOfTheRowItIsGiven) {
  // Given one task id at the same revision with two lease times (a heartbeat keeps the
  // revision), the cache should give each row its own view.
  fleet::TaskViewCache cache;
  store::TaskRow row;
  row.task_id = "cached-1";
  row.status = "CLAIMED";
  row.revision = 2;
  row.lease_expires_at = "2030-01-01T00:02:00Z";
  EXPECT_EQ(*cache.get(row), fleet::view_of(row).dump());

  row.lease_expires_at = "2030-01-01T00:04:00Z";
  EXPECT_EQ(*cache.get(row), fleet::view_of(row).dump());
  EXPECT_EQ(cache.size(), 1u);
}

TEST(TaskViewCacheTest, KeepsAtMostItsBound) {
  // Given more distinct tasks than the bound, the cache should hold no more than the bound and
  // still answer each row's own view.
  fleet::TaskViewCache cache;
  for (std::size_t i = 0; i < fleet::TaskViewCache::kMaxEntries + 50; ++i) {
    store::TaskRow row;
    row.task_id = "bound-" + std::to_string(i);
    row.status = "QUEUED";
    row.revision = 1;
    ASSERT_EQ(*cache.get(row), fleet::view_of(row).dump());
    ASSERT_LE(cache.size(), fleet::TaskViewCache::kMaxEntries);
  }
  EXPECT_EQ(cache.size(), fleet::TaskViewCache::kMaxEntries);
}

}  // namespace
}  // namespace aios::fleet_test
