// The batch calls: each item checked as its single call checks it, then applied under a
// savepoint of its own inside one transaction.
#include <set>

#include "aios/envelope.hpp"
#include "fleet/internal.hpp"

namespace aios {

namespace {

// Rethrows `error` unless it is an aios::Error: an item's refusal.
void rethrow_unless_refusal(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error&) {
  }
}

// An item the edge could not parse is refused with the code its parse met.
template <class Call>
void check_item(const TaskPlane::BatchItem<Call>& item) {
  if (item.refused) std::rethrow_exception(item.refused);
  if (!item.call) envelope::fail(ErrorCode::REQUEST_INVALID);
}

}  // namespace

std::vector<std::exception_ptr> fleet::run_batch(
    store::Store& store, std::size_t count, const std::function<void(std::size_t)>& check,
    const std::function<void(store::Transaction&, std::size_t)>& apply,
    const std::function<void(store::Transaction&)>& then) {
  std::vector<std::exception_ptr> checked(count);
  for (std::size_t i = 0; i < count; ++i) {
    try {
      check(i);
    } catch (const Error&) {
      checked[i] = std::current_exception();
    }
  }
  std::vector<std::exception_ptr> refused;
  store.write([&](store::Transaction& tx) {
    refused = checked;  // a re-run body starts over
    for (std::size_t i = 0; i < count; ++i) {
      if (refused[i]) continue;
      refused[i] = tx.attempt([&](store::Transaction& step) { apply(step, i); });
      if (refused[i]) rethrow_unless_refusal(refused[i]);
    }
    if (then) then(tx);
  });
  return refused;
}

nlohmann::json fleet::refused_item(const std::string& task_id, const std::exception_ptr& error) {
  std::string code;
  try {
    std::rethrow_exception(error);
  } catch (const Error& refusal) {
    code = refusal.code();
  }
  return {{"task_id", task_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(task_id)},
          {"error", code}};
}

nlohmann::json TaskPlane::create_tasks(const std::vector<BatchItem<fleet::TaskSubmission>>& tasks) {
  const auto now = store_.now();
  std::vector<std::optional<fleet::NewTask>> checked(tasks.size());
  std::set<std::string> seen;
  std::vector<std::pair<int, nlohmann::json>> answers(tasks.size());
  const auto outcome = fleet::run_batch(
      store_, tasks.size(),
      [&](std::size_t i) {
        check_item(tasks[i]);
        checked[i] = fleet::new_task(*tasks[i].call, resolver_, now);
        // The second of two items under one id is not a replay of the first.
        if (!seen.insert(checked[i]->row.task_id).second) {
          envelope::fail(ErrorCode::TASK_ALREADY_EXISTS);
        }
      },
      [&](store::Transaction& tx, std::size_t i) {
        answers[i] = fleet::store_new_task(tx, *checked[i]);
      });
  nlohmann::json out = nlohmann::json::array();
  std::size_t created = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (outcome[i]) {
      out.push_back(fleet::refused_item(tasks[i].task_id, outcome[i]));
      continue;
    }
    if (answers[i].first == 201) ++created;
    out.push_back(std::move(answers[i].second));
  }
  if (created > 0) queue_changed({.claims = created, .worker_id = {}});
  return {{"tasks", std::move(out)}};
}

TaskPlane::ResultsThenClaims TaskPlane::submit_results(
    const Agent& agent, const std::vector<BatchItem<fleet::ResultSubmission>>& results,
    const std::string& worker_id, std::size_t max_tasks) {
  const auto now = store_.now();
  auto grants = new_grants(worker_id.empty() ? 0 : max_tasks);
  std::vector<fleet::ResultApplied> applied(results.size());
  ResultsThenClaims out;
  const auto outcome = fleet::run_batch(
      store_, results.size(), [&](std::size_t i) { check_item(results[i]); },
      [&](store::Transaction& tx, std::size_t i) {
        applied[i] = fleet::apply_result(tx, agent, results[i].task_id, *results[i].call, now);
      },
      [&](store::Transaction& tx) {
        out.claims.clear();
        out.claim_error = nullptr;
        if (worker_id.empty()) return;
        out.claim_error = tx.attempt([&](store::Transaction& step) {
          out.claims = claim_next_in(step, agent, worker_id, grants, /*liveness=*/true);
        });
      });
  std::vector<std::string> freed;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (outcome[i]) {
      out.results.push_back(fleet::refused_item(results[i].task_id, outcome[i]));
      continue;
    }
    if (applied[i].status == 201) {
      ++out.stored;
      out.stored_items.push_back(i);
    }
    freed.push_back(applied[i].freed_worker);
    out.results.push_back(std::move(applied[i].answer));
  }
  results_committed(freed);
  if (out.claim_error) out.claims.clear();
  claims_committed(out.claims);
  return out;
}

nlohmann::json TaskPlane::verify_many(
    const std::vector<BatchItem<fleet::Verification>>& verifications) {
  const std::string now_iso = format_iso8601(store_.now());
  std::vector<fleet::VerificationApplied> applied(verifications.size());
  const auto outcome = fleet::run_batch(
      store_, verifications.size(), [&](std::size_t i) { check_item(verifications[i]); },
      [&](store::Transaction& tx, std::size_t i) {
        applied[i] = fleet::apply_verification(tx, verifications[i].task_id, *verifications[i].call,
                                               now_iso);
      });
  nlohmann::json out = nlohmann::json::array();
  std::size_t requeued = 0;
  for (std::size_t i = 0; i < verifications.size(); ++i) {
    if (outcome[i]) {
      out.push_back(fleet::refused_item(verifications[i].task_id, outcome[i]));
      continue;
    }
    if (applied[i].requeued) ++requeued;
    out.push_back(std::move(applied[i].view));
  }
  if (requeued > 0) queue_changed({.claims = requeued, .worker_id = {}});
  return {{"verifications", std::move(out)}};
}

}  // namespace aios
