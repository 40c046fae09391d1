// The claims and results of a worker's slots, each gathered into as few Task API requests as
// the moment allows: a request out collects the next ones behind it (as the store's group
// commit does with writes).
#include "aios/error.hpp"
#include "worker/internal.hpp"

namespace aios::worker {

ClaimQueue::ClaimQueue(const JsonService& api, std::string worker_id)
    : api_(api), worker_id_(std::move(worker_id)) {}

std::optional<nlohmann::json> ClaimQueue::take() {
  const std::lock_guard lock(mutex_);
  if (claims_.empty()) return std::nullopt;
  auto claim = std::move(claims_.front());
  claims_.pop_front();
  return claim;
}

void ClaimQueue::add(const nlohmann::json& claims) {
  if (claims.empty()) return;
  const std::lock_guard lock(mutex_);
  for (const auto& claim : claims) claims_.push_back(claim);
  changed_.notify_all();
}

std::optional<nlohmann::json> ClaimQueue::next(std::chrono::milliseconds wait,
                                               const std::atomic<bool>* cancel) {
  std::unique_lock lock(mutex_);
  ++asking_;
  const auto take_one = [&]() -> std::optional<nlohmann::json> {
    --asking_;
    if (claims_.empty()) return std::nullopt;
    auto claim = std::move(claims_.front());
    claims_.pop_front();
    return claim;
  };
  for (;;) {
    if (!claims_.empty()) return take_one();
    if (!polling_) break;
    // Another slot's claim-next is out: its answer may bring this slot's claim too; when it
    // brings none for this one, this one asks next.
    const auto poll = polls_;
    changed_.wait(lock, [&] { return !claims_.empty() || polls_ != poll; });
  }
  // A stopping worker asks for nothing more: each slot waiting would otherwise make its own
  // request only for the stop to give it up.
  if (cancel != nullptr && cancel->load()) return take_one();
  polling_ = true;
  const auto slots = asking_;
  lock.unlock();
  nlohmann::json claims = nlohmann::json::array();
  std::exception_ptr failure;
  try {
    const nlohmann::json body = {
        {"worker_id", worker_id_}, {"wait_ms", wait.count()}, {"max_tasks", slots}};
    claims = api_.require("POST", "/v1/tasks/claim-next", &body, {.extra = wait, .cancel = cancel})
                 .at("claims");
  } catch (...) {
    failure = std::current_exception();
  }
  lock.lock();
  polling_ = false;
  ++polls_;
  for (auto& claim : claims) claims_.push_back(std::move(claim));
  changed_.notify_all();
  if (failure) {
    --asking_;
    std::rethrow_exception(failure);
  }
  return take_one();
}

ResultSender::ResultSender(const JsonService& api, std::string worker_id, ClaimQueue& claims)
    : api_(api), worker_id_(std::move(worker_id)), claims_(claims) {}

nlohmann::json ResultSender::submit(const std::string& task_id, nlohmann::json body,
                                    bool claim_next) {
  Pending pending{task_id, std::move(body), claim_next, {}};
  auto answer = pending.answer.get_future();
  std::unique_lock lock(mutex_);
  waiting_.push_back(&pending);
  if (sending_) {
    // The slot whose request is out sends this one next, with whatever else waits by then.
    lock.unlock();
    return answer.get();
  }
  sending_ = true;
  while (!waiting_.empty()) {
    std::vector<Pending*> batch;
    batch.swap(waiting_);
    lock.unlock();
    send(batch);
    lock.lock();
  }
  sending_ = false;
  lock.unlock();
  return answer.get();
}

void ResultSender::send(std::vector<Pending*>& batch) {
  std::size_t asking = 0;
  for (const auto* pending : batch) asking += pending->claim_next ? 1 : 0;
  std::size_t settled = 0;
  try {
    if (batch.size() == 1) {
      auto& only = *batch.front();
      nlohmann::json body = std::move(only.body);
      if (only.claim_next) body["claim_next"] = {{"worker_id", worker_id_}};
      auto answer = api_.require("POST", "/v1/tasks/" + only.task_id + "/result", &body);
      if (const auto claim = answer.find("claim"); claim != answer.end()) {
        if (!claim->is_null()) claims_.add(nlohmann::json::array({*claim}));
        answer.erase(claim);
      }
      only.answer.set_value(std::move(answer));
      return;
    }
    nlohmann::json body = {{"results", nlohmann::json::array()}};
    for (auto* pending : batch) {
      pending->body["task_id"] = pending->task_id;
      body["results"].push_back(std::move(pending->body));
    }
    if (asking > 0) body["claim_next"] = {{"worker_id", worker_id_}, {"max_tasks", asking}};
    auto answer = api_.require("POST", "/v1/tasks/results", &body);
    claims_.add(answer.at("claims"));
    auto& results = answer.at("results");
    for (std::size_t i = 0; i < batch.size(); ++i) {
      auto& item = results.at(i);
      if (const auto code = item.find("error"); code != item.end() && item.size() == 2) {
        const auto* info = find_error(code->get<std::string>());
        batch[i]->answer.set_exception(std::make_exception_ptr(
            Error::remote(code->get<std::string>(), info != nullptr ? info->http_status : 409)));
      } else {
        batch[i]->answer.set_value(std::move(item));
      }
      settled = i + 1;
    }
  } catch (...) {
    // The request as a whole: every result in it not yet answered met the same (an outage
    // keeps each task).
    for (auto i = settled; i < batch.size(); ++i) {
      batch[i]->answer.set_exception(std::current_exception());
    }
  }
}

}  // namespace aios::worker
