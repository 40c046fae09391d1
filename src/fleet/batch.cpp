// The batch calls: each item checked as its single call checks it, then applied under a
// savepoint of its own inside one transaction.
#include <set>

#include "aios/envelope.hpp"
#include "fleet/internal.hpp"

namespace aios {

std::exception_ptr fleet::refusal_of(const std::function<void()>& check) {
  try {
    check();
    return nullptr;
  } catch (const Error&) {
    return std::current_exception();
  }
}

void fleet::apply_each(store::Transaction& tx, std::vector<std::exception_ptr>& refused,
                       const std::function<void(store::Transaction&, std::size_t)>& apply) {
  for (std::size_t i = 0; i < refused.size(); ++i) {
    if (refused[i]) continue;
    refused[i] = tx.attempt([&](store::Transaction& step) { apply(step, i); });
    if (!refused[i]) continue;
    try {
      std::rethrow_exception(refused[i]);
    } catch (const Error&) {
      // the item's own refusal, its writes rolled back
    }
  }
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

nlohmann::json TaskPlane::create_tasks(const std::vector<nlohmann::json>& tasks,
                                       fleet::ClaimResolver* resolver) {
  const auto now = store_.now();
  std::vector<std::exception_ptr> refused(tasks.size());
  std::vector<std::optional<fleet::NewTask>> checked(tasks.size());
  std::vector<std::string> ids(tasks.size());
  std::set<std::string> seen;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (const auto id = tasks[i].find("task_id");
        tasks[i].is_object() && id != tasks[i].end() && id->is_string()) {
      ids[i] = id->get<std::string>();
    }
    refused[i] = fleet::refusal_of([&] {
      checked[i] = fleet::new_task(tasks[i], resolver, now);
      // The second of two items under one id is not a replay of the first.
      if (!seen.insert(checked[i]->row.task_id).second) {
        envelope::fail(ErrorCode::TASK_ALREADY_EXISTS);
      }
    });
  }
  std::vector<std::pair<int, nlohmann::json>> answers(tasks.size());
  std::vector<std::exception_ptr> outcome;
  store_.write([&](store::Transaction& tx) {
    outcome = refused;  // a re-run body starts over
    fleet::apply_each(tx, outcome, [&](store::Transaction& step, std::size_t i) {
      answers[i] = fleet::store_new_task(step, *checked[i]);
    });
  });
  nlohmann::json out = nlohmann::json::array();
  std::size_t created = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (outcome[i]) {
      out.push_back(fleet::refused_item(ids[i], outcome[i]));
      continue;
    }
    if (answers[i].first == 201) ++created;
    out.push_back(std::move(answers[i].second));
  }
  if (created > 0) queue_changed({.claims = created, .worker_id = {}});
  return {{"tasks", std::move(out)}};
}

TaskPlane::ResultsThenClaims TaskPlane::submit_results(const Agent& agent,
                                                       const std::vector<BatchItem>& results,
                                                       const std::string& worker_id,
                                                       std::size_t max_tasks,
                                                       fleet::ClaimResolver* resolver) {
  const auto now = store_.now();
  std::vector<std::exception_ptr> refused(results.size());
  std::vector<std::optional<fleet::ResultSubmission>> checked(results.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    refused[i] = fleet::refusal_of([&] {
      checked[i] = fleet::result_submission_of(results[i].body, options_.max_result_bytes);
    });
  }
  const auto grants = new_grants(worker_id.empty() ? 0 : max_tasks);
  std::vector<fleet::ResultApplied> applied(results.size());
  std::vector<std::exception_ptr> outcome;
  ResultsThenClaims out;
  store_.write([&](store::Transaction& tx) {
    outcome = refused;
    fleet::apply_each(tx, outcome, [&](store::Transaction& step, std::size_t i) {
      applied[i] = fleet::apply_result(step, agent, results[i].task_id, *checked[i], *facts_, now);
    });
    out.claims.clear();
    out.claim_error = nullptr;
    if (worker_id.empty()) return;
    out.claim_error = tx.attempt([&](store::Transaction& step) {
      out.claims = claim_next_in(step, agent, worker_id, resolver, grants, /*liveness=*/true);
    });
  });
  std::vector<std::string> freed;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (outcome[i]) {
      out.results.push_back(fleet::refused_item(results[i].task_id, outcome[i]));
      continue;
    }
    if (applied[i].status == 201) ++out.stored;
    freed.push_back(applied[i].freed_worker);
    out.results.push_back(std::move(applied[i].answer));
  }
  results_committed(freed);
  if (out.claim_error) out.claims.clear();
  claims_committed(out.claims);
  return out;
}

nlohmann::json TaskPlane::verify_many(const std::vector<BatchItem>& verifications) {
  const std::string now_iso = format_iso8601(store_.now());
  std::vector<std::exception_ptr> refused(verifications.size());
  std::vector<std::optional<fleet::Verification>> checked(verifications.size());
  for (std::size_t i = 0; i < verifications.size(); ++i) {
    refused[i] =
        fleet::refusal_of([&] { checked[i] = fleet::verification_of(verifications[i].body); });
  }
  std::vector<fleet::VerificationApplied> applied(verifications.size());
  std::vector<std::exception_ptr> outcome;
  store_.write([&](store::Transaction& tx) {
    outcome = refused;
    fleet::apply_each(tx, outcome, [&](store::Transaction& step, std::size_t i) {
      applied[i] = fleet::apply_verification(step, verifications[i].task_id, *checked[i], now_iso);
    });
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
