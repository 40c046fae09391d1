#pragma once
// Recording fakes of the environment bundle (aios/environment.hpp), so a unit test asserts the
// exact argv, environment and requests the library would send, without spawning a child or
// opening a socket. Each fake answers from a script the test sets and keeps what it was given.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "aios/environment.hpp"
#include "aios/error.hpp"
#include "support/closed_port.hpp"

namespace aios::test {

// Keeps every spec it is asked to run (without the output callbacks' owners) and answers with
// `answer`, which may feed the spec's on_stdout/on_stderr and write files as the child would.
class RecordingSpawner final : public process::Spawner {
 public:
  struct Call {
    process::Spec spec;
    std::filesystem::path socket;  // empty: run(); else run_through(socket, …)
  };
  std::function<process::Outcome(const process::Spec&)> answer = [](const process::Spec&) {
    return process::Outcome{};
  };

  process::Outcome run(const process::Spec& spec) override { return record(spec, {}); }
  process::Outcome run_through(const std::filesystem::path& socket,
                               const process::Spec& spec) override {
    return record(spec, socket);
  }
  std::vector<Call> calls() const {
    const std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  process::Outcome record(const process::Spec& spec, const std::filesystem::path& socket) {
    {
      const std::lock_guard lock(mutex_);
      Call call{spec, socket};
      call.spec.on_stdout = nullptr;
      call.spec.on_stderr = nullptr;
      calls_.push_back(std::move(call));
    }
    return answer(spec);
  }
  mutable std::mutex mutex_;
  std::vector<Call> calls_;
};

// Keeps every request and answers from a queue of responses (then `fallback`).
class RecordingTransport final : public http::Transport {
 public:
  struct Call {
    std::string method;
    std::string url;
    std::string bearer_token;
    std::string body;
    std::chrono::milliseconds timeout{0};
  };
  http::ClientResponse fallback{200, "{}"};

  void respond(int status, std::string body) {
    const std::lock_guard lock(mutex_);
    script_.push_back({status, std::move(body)});
  }
  // The next request (in script order) is lost after it went out: HTTP_UPSTREAM_UNAVAILABLE.
  void unreachable() { respond(kUnreachable, ""); }
  // The next request finds its peer refusing the connection (http::nothing_sent holds): the
  // real client's error, from a loopback port nobody listens on.
  void refused() { respond(kRefused, ""); }
  http::ClientResponse request(std::string_view method, std::string_view url,
                               std::string_view bearer_token, std::string_view body,
                               std::chrono::milliseconds timeout) override {
    const std::lock_guard lock(mutex_);
    calls_.push_back({std::string(method), std::string(url), std::string(bearer_token),
                      std::string(body), timeout});
    if (script_.empty()) return fallback;
    auto next = std::move(script_.front());
    script_.pop_front();
    if (next.status == kUnreachable) throw Error(ErrorCode::HTTP_UPSTREAM_UNAVAILABLE);
    if (next.status == kRefused) {
      http::request("GET", closed_loopback_url() + "/", "", "", std::chrono::seconds(5));
    }
    return next;
  }
  std::vector<Call> calls() const {
    const std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  static constexpr int kUnreachable = -1;
  static constexpr int kRefused = -2;

  mutable std::mutex mutex_;
  std::deque<http::ClientResponse> script_;
  std::vector<Call> calls_;
};

// Hex strings of the asked length counting up from ...01, so ids and tokens are predictable
// and distinct.
class CountingRandom final : public Random {
 public:
  std::string hex(std::size_t bytes) override {
    const std::lock_guard lock(mutex_);
    std::string digits;
    for (auto n = ++count_; n != 0; n /= 16)
      digits.insert(digits.begin(), "0123456789abcdef"[n % 16]);
    return std::string(2 * bytes - std::min(digits.size(), 2 * bytes), '0') + digits;
  }

 private:
  std::mutex mutex_;
  std::uint64_t count_ = 0;
};

// Records the phases reached, in order; arms nothing.
class RecordingFaultPlan final : public FaultPlan {
 public:
  void point(std::string_view phase) const override {
    const std::lock_guard lock(mutex_);
    phases_.emplace_back(phase);
  }
  std::vector<std::string> phases() const {
    const std::lock_guard lock(mutex_);
    return phases_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::vector<std::string> phases_;
};

// One fake of each, bundled.
struct FakeWorld {
  ManualClock clock{TimePoint(std::chrono::seconds(1'800'000'000))};
  RecordingSpawner spawner;
  RecordingTransport http;
  CountingRandom random;
  RecordingFaultPlan faults;
  Environment environment{clock, spawner, http, random, faults};
};

}  // namespace aios::test
