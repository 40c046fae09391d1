#pragma once
// The operating-system seams the core library uses: time, randomness and secret files. Only a
// daemon's main builds the real ones; tests inject ManualClock to move time without sleeping.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "aios/error.hpp"

namespace aios {

using TimePoint = std::chrono::system_clock::time_point;

// Thread-safe source of the current UTC time.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::system_clock::now(); }
};

// A clock that moves only when told; thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start) : micros_(to_micros(start)) {}
  TimePoint now() const override { return TimePoint(std::chrono::microseconds(micros_.load())); }
  void advance(std::chrono::microseconds by) { micros_ += by.count(); }

 private:
  static std::int64_t to_micros(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  }
  std::atomic<std::int64_t> micros_;
};

// "2026-11-30T06:08:43.123456+00:00": Python's datetime.isoformat() of a UTC time with
// microseconds, fixed width so that stored times sort as text.
std::string format_iso8601(TimePoint t);

// Parses what format_iso8601 and Python's isoformat() write ("…+00:00" or "…Z", with or without
// fractional seconds, any UTC offset); nullopt for anything else.
std::optional<TimePoint> parse_iso8601(std::string_view text);

// Seconds since the epoch, as the seed's fleet tables store them.
double to_epoch_seconds(TimePoint t);

// `bytes` random bytes from OpenSSL's CSPRNG as lower-case hex; INTERNAL_ERROR if it fails.
std::string random_hex(std::size_t bytes);

// Where tokens, lease tokens and ids come from (environment.hpp); thread-safe.
class Random {
 public:
  virtual ~Random() = default;
  // `bytes` random bytes as lower-case hex.
  virtual std::string hex(std::size_t bytes) = 0;
};

class SystemRandom final : public Random {
 public:
  std::string hex(std::size_t bytes) override { return random_hex(bytes); }
};

// Reads a credential file the way the seed's load_control_token does: a symlink or anything
// but a regular file is `unavailable`; one whose mode grants its group or others any access is
// SECRET_FILE_MODE_INVALID; content (trimmed) shorter than `min_length` is `invalid`. The error
// never carries the content.
std::string read_secret_file(const std::filesystem::path& path, std::size_t min_length,
                             ErrorCode unavailable, ErrorCode invalid);

// Where systemd's LoadCredential= puts credential `name`: $CREDENTIALS_DIRECTORY/<name>, under
// /run/credentials when systemd set none.
std::string credential_file(std::string_view name);

// Calls `tick` every `interval` on its own thread until destroyed; the destructor wakes the
// thread at once and waits for a running tick to return. `tick` must not throw.
class PeriodicThread {
 public:
  PeriodicThread(std::chrono::milliseconds interval, std::function<void()> tick);
  ~PeriodicThread();
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace aios
