#include <algorithm>
#include <sstream>

#include "aios/taskapi.hpp"

namespace aios {

TaskApiMetrics::Slot& TaskApiMetrics::current_slot() {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const auto start = now - now % kSlotSeconds;
  auto& slot = history_[static_cast<std::size_t>(start / kSlotSeconds) % kHistory];
  if (slot.start != start) slot = Slot{.start = start};
  return slot;
}

void TaskApiMetrics::count_claim(std::uint64_t n) {
  if (n == 0) return;
  claims_ += n;
  std::lock_guard lock(mutex_);
  current_slot().claims += n;
}

void TaskApiMetrics::count_result(std::uint64_t n) {
  if (n == 0) return;
  results_ += n;
  std::lock_guard lock(mutex_);
  current_slot().results += n;
}

void TaskApiMetrics::count_model_usage(const std::string& runtime, const gateway::Usage& usage) {
  std::lock_guard lock(mutex_);
  const bool known = model_usage_.contains(runtime) || model_usage_.size() < kMaxModelRuntimes;
  model_usage_[known ? runtime : "other"] += usage;
}

nlohmann::json TaskApiMetrics::snapshot() {
  std::lock_guard lock(mutex_);
  const auto oldest = current_slot().start - static_cast<std::int64_t>(kHistory - 1) * kSlotSeconds;
  std::vector<const Slot*> slots;
  for (const auto& slot : history_) {
    if (slot.start >= oldest) slots.push_back(&slot);
  }
  std::sort(slots.begin(), slots.end(), [](auto* a, auto* b) { return a->start < b->start; });
  nlohmann::json history = nlohmann::json::array();
  for (const auto* slot : slots) {
    history.push_back({{"at", slot->start},
                       {"claims", slot->claims},
                       {"results", slot->results},
                       {"requests", slot->requests},
                       {"latency_seconds_sum", slot->latency_sum}});
  }
  return {{"claims_total", claims_.load()},
          {"results_total", results_.load()},
          {"lease_expiries_total", expired_.load()},
          {"requests_total", latency_count_},
          {"request_seconds_sum", latency_sum_},
          {"slot_seconds", kSlotSeconds},
          {"history", history}};
}

void TaskApiMetrics::observe(const std::string& route, int status, std::chrono::nanoseconds elapsed,
                             bool waited) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  std::lock_guard lock(mutex_);
  ++requests_[{route, status}];
  std::size_t bucket = 0;
  while (bucket < kBuckets.size() && seconds > kBuckets[bucket]) ++bucket;
  ++latency_buckets_[bucket];
  latency_sum_ += seconds;
  ++latency_count_;
  if (waited) return;
  auto& slot = current_slot();
  ++slot.requests;
  slot.latency_sum += seconds;
}

std::string TaskApiMetrics::render(
    const std::vector<std::pair<std::string, std::int64_t>>& task_counts,
    std::size_t claims_waiting, std::uint64_t envelopes_unresolved) {
  std::ostringstream out;
  out << "# HELP aios_tasks Tasks by status.\n# TYPE aios_tasks gauge\n";
  for (const auto& [status, count] : task_counts) {
    out << "aios_tasks{status=\"" << status << "\"} " << count << '\n';
  }
  out << "# HELP aios_claims_total Successful claims.\n# TYPE aios_claims_total counter\n"
      << "aios_claims_total " << claims_.load() << '\n'
      << "# HELP aios_results_total Results accepted (replays excluded).\n"
      << "# TYPE aios_results_total counter\naios_results_total " << results_.load() << '\n'
      << "# HELP aios_claim_wakeups_empty_total Tries of waiting claim-next calls that claimed "
         "nothing.\n# TYPE aios_claim_wakeups_empty_total counter\naios_claim_wakeups_empty_total "
      << empty_wakeups_.load() << '\n'
      << "# HELP aios_envelopes_unresolved_total Queued tasks a claim passed over because their "
         "envelope did not resolve (once per task revision).\n"
      << "# TYPE aios_envelopes_unresolved_total counter\naios_envelopes_unresolved_total "
      << envelopes_unresolved << '\n'
      << "# HELP aios_claims_waiting claim-next calls waiting for a task now.\n"
      << "# TYPE aios_claims_waiting gauge\naios_claims_waiting " << claims_waiting << '\n'
      << "# HELP aios_lease_expiries_total Leases returned by the sweeper.\n"
      << "# TYPE aios_lease_expiries_total counter\naios_lease_expiries_total " << expired_.load()
      << '\n'
      << "# HELP aios_scheduler_leader 1 while this replica holds the lead of the Bridge's "
         "governed commits.\n# TYPE aios_scheduler_leader gauge\naios_scheduler_leader "
      << (leader_ ? 1 : 0) << '\n';
  if (const auto pool = store_ ? store_->pool_use() : store::PoolUse{}; pool.limit > 0) {
    out << "# HELP aios_store_connections Connections of the task store's pool by state.\n"
        << "# TYPE aios_store_connections gauge\naios_store_connections{state=\"busy\"} "
        << pool.busy << "\naios_store_connections{state=\"idle\"} " << pool.idle << '\n'
        << "# HELP aios_store_connections_limit The most connections the pool opens.\n"
        << "# TYPE aios_store_connections_limit gauge\naios_store_connections_limit " << pool.limit
        << "\n# HELP aios_store_conflicts_total Write transactions run again after a "
           "deadlock or a lost insert race.\n# TYPE aios_store_conflicts_total counter\n"
        << "aios_store_conflicts_total " << pool.conflicts << '\n';
  }
  std::lock_guard lock(mutex_);
  out << "# HELP aios_store_backend The task store's backend.\n# TYPE aios_store_backend gauge\n"
      << "aios_store_backend{backend=\"" << store_backend() << "\"} 1\n";
  out << "# HELP aios_http_requests_total Task API requests by route and status.\n"
      << "# TYPE aios_http_requests_total counter\n";
  for (const auto& [key, count] : requests_) {
    out << "aios_http_requests_total{route=\"" << key.first << "\",status=\"" << key.second
        << "\"} " << count << '\n';
  }
  if (!model_usage_.empty()) {
    out << "# HELP aios_model_requests_total Model calls the provider gateway forwarded, by "
           "runtime (from stored results).\n# TYPE aios_model_requests_total counter\n";
    for (const auto& [runtime, usage] : model_usage_) {
      out << "aios_model_requests_total{runtime=\"" << runtime << "\"} " << usage.requests << '\n';
    }
    out << "# HELP aios_model_usage_total The provider's usage counts of those calls, by runtime "
           "and kind.\n# TYPE aios_model_usage_total counter\n";
    for (const auto& [runtime, usage] : model_usage_) {
      for (const auto& [kind, count] :
           {std::pair{"input", usage.input}, std::pair{"output", usage.output},
            std::pair{"total", usage.total}}) {
        out << "aios_model_usage_total{runtime=\"" << runtime << "\",kind=\"" << kind << "\"} "
            << count << '\n';
      }
    }
    out << "# HELP aios_model_calls_unmetered_total Forwarded model calls whose answer stated no "
           "usage.\n# TYPE aios_model_calls_unmetered_total counter\n";
    for (const auto& [runtime, usage] : model_usage_) {
      out << "aios_model_calls_unmetered_total{runtime=\"" << runtime << "\"} " << usage.unmetered
          << '\n';
    }
    out << "# HELP aios_model_calls_refused_total Model calls the gateway refused (key, host, "
           "path, budget).\n# TYPE aios_model_calls_refused_total counter\n";
    for (const auto& [runtime, usage] : model_usage_) {
      out << "aios_model_calls_refused_total{runtime=\"" << runtime << "\"} " << usage.refused
          << '\n';
    }
  }
  out << "# HELP aios_http_request_seconds Task API request latency.\n"
      << "# TYPE aios_http_request_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += latency_buckets_[i];
    out << "aios_http_request_seconds_bucket{le=\"" << kBuckets[i] << "\"} " << cumulative << '\n';
  }
  cumulative += latency_buckets_[kBuckets.size()];
  out << "aios_http_request_seconds_bucket{le=\"+Inf\"} " << cumulative << '\n'
      << "aios_http_request_seconds_sum " << latency_sum_ << '\n'
      << "aios_http_request_seconds_count " << latency_count_ << '\n';
  return out.str();
}

}  // namespace aios
