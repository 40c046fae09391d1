#pragma once
// The Task API: HTTP routes of aios-task-scheduler over the TaskPlane, with bearer roles.
// owner = the control token; agent = a token issued by POST /v1/agents. docs/api.md lists
// every route with its role, body and error codes.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "aios/fleet.hpp"
#include "aios/http.hpp"

namespace aios {

// Prometheus counters of the Task API. Thread-safe.
class TaskApiMetrics {
 public:
  static constexpr std::array<double, 10> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                      0.025,  0.05,  0.1,    0.25,  1.0};
  void observe(const std::string& route, int status, std::chrono::nanoseconds elapsed);
  void count_claim() { ++claims_; }
  void count_result() { ++results_; }
  void count_expired(std::uint64_t n) { expired_ += n; }

  // The exposition text, with `task_counts` as the aios_tasks gauge.
  std::string render(const std::vector<std::pair<std::string, std::int64_t>>& task_counts);

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  std::array<std::uint64_t, kBuckets.size() + 1> latency_buckets_{};
  double latency_sum_ = 0;
  std::uint64_t latency_count_ = 0;
  std::atomic<std::uint64_t> claims_{0};
  std::atomic<std::uint64_t> results_{0};
  std::atomic<std::uint64_t> expired_{0};
};

class TaskApi {
 public:
  // `control_token` is the owner's bearer token (at least 32 characters).
  TaskApi(TaskPlane& plane, std::string control_token, TaskApiMetrics& metrics);

  // The request handler for http::Server.
  http::Response handle(const http::Request& request);
  // For ServerOptions::admits: the bearer token is the owner's or an issued agent's.
  bool admits(const http::Request& request);

 private:
  http::Response route(const http::Request& request, std::string& route_name);

  TaskPlane& plane_;
  std::string control_token_;
  TaskApiMetrics& metrics_;
};

}  // namespace aios
