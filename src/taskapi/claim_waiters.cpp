#include <algorithm>
#include <cmath>

#include "aios/taskapi.hpp"

namespace aios {

ClaimWaiters::ClaimWaiters(TaskPlane& plane, std::chrono::milliseconds recheck,
                           std::function<void()> woken_for_nothing)
    : plane_(plane),
      recheck_(recheck),
      woken_for_nothing_(std::move(woken_for_nothing)),
      thread_([this] { run(); }) {}

ClaimWaiters::~ClaimWaiters() {
  stop();
  thread_.join();
}

ClaimWaiters::Attempt ClaimWaiters::before_attempt() {
  const auto at = plane_.now();
  const std::lock_guard lock(mutex_);
  return {version_, at};
}

void ClaimWaiters::wait(const Agent& agent, std::string worker_id, std::size_t max_tasks,
                        std::chrono::steady_clock::time_point deadline, Attempt before,
                        std::function<bool()> gone, Answer answer) {
  {
    const std::lock_guard lock(mutex_);
    if (!stopping_) {
      // A signal since the caller's own attempt may have been taken before this waiter was in:
      // it tries once more, whatever the others are owed.
      const bool missed = version_ != before.version;
      waiters_.push_back({agent, std::move(worker_id), max_tasks, deadline, std::move(gone),
                          std::move(answer), missed, before.at});
      arrived_ = true;  // its deadline may come before the thread's next wake
      wake_.notify_one();
      return;
    }
  }
  answer({}, nullptr);
}

void ClaimWaiters::notify(std::size_t claims) {
  const std::lock_guard lock(mutex_);
  ++version_;
  // Nobody to wake (every result and create signals, so a busy fleet would wake the thread for
  // nothing each time): a caller about to wait compares the version it started from instead.
  if (waiters_.empty() && in_hand_ == 0) return;
  if (claims == TaskPlane::kAnyClaim) {
    everyone_ = true;
  } else {
    owed_ += claims;
  }
  wake_.notify_one();
}

void ClaimWaiters::notify_worker(const std::string& worker_id) {
  const std::lock_guard lock(mutex_);
  ++version_;
  if (waiters_.empty() && in_hand_ == 0) return;
  workers_.insert(worker_id);
  wake_.notify_one();
}

void ClaimWaiters::stop() {
  std::vector<Waiter> left;
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    left.swap(waiters_);
    wake_.notify_one();
  }
  for (auto& waiter : left) waiter.answer({}, nullptr);
}

std::size_t ClaimWaiters::waiting() {
  const std::lock_guard lock(mutex_);
  return waiters_.size() + in_hand_;
}

ClaimWaiters::Settled ClaimWaiters::settle(Waiter& waiter, bool try_claim,
                                           std::chrono::steady_clock::time_point now,
                                           std::size_t& claimed) {
  claimed = 0;
  // A claim for a caller that went away would sit CLAIMED until its lease ran out.
  if (waiter.gone && waiter.gone()) {
    waiter.answer({}, nullptr);
    return Settled::kAnswered;
  }
  try {
    if (try_claim) {
      auto claims = plane_.claim_next_many(waiter.agent, waiter.worker_id, waiter.max_tasks,
                                           /*liveness=*/false);
      if (!claims.empty()) {
        claimed = claims.size();
        waiter.answer(std::move(claims), nullptr);
        return Settled::kClaimed;
      }
      if (woken_for_nothing_) woken_for_nothing_();
    }
  } catch (const Error& error) {
    // The worker was removed or reassigned, or the store failed: the caller hears why.
    waiter.answer({}, &error);
    return Settled::kAnswered;
  }
  if (now < waiter.deadline) return Settled::kWaiting;
  waiter.answer({}, nullptr);
  return Settled::kAnswered;
}

std::chrono::steady_clock::time_point ClaimWaiters::next_wake(
    std::chrono::steady_clock::time_point next_recheck) const {
  auto until = next_recheck;
  for (const auto& waiter : waiters_) {
    until = std::min(until, waiter.deadline);
    if (const auto window = windows_.find(waiter.worker_id); window != windows_.end()) {
      until = std::min(until, window->second);
    }
  }
  return until;
}

void ClaimWaiters::refresh_windows(const std::vector<Waiter>& waiting) {
  // The store may lag the steady clock by a little: a window it still sees shut is asked again
  // after this much, not in a spin.
  constexpr std::chrono::milliseconds kLeast{10};
  windows_.clear();
  // A worker's windows count from its waiters' last try, not from now: one that ended between a
  // try that failed and this read is due at once, where a read from now would miss it and
  // leave the waiter asleep until its deadline.
  std::map<std::string, TimePoint> tried;
  auto since = TimePoint::max();
  for (const auto& waiter : waiting) {
    const auto [found, fresh] = tried.emplace(waiter.worker_id, waiter.tried_at);
    if (!fresh) found->second = std::min(found->second, waiter.tried_at);
    since = std::min(since, waiter.tried_at);
  }
  if (tried.empty()) return;
  try {
    const auto steady = std::chrono::steady_clock::now();
    const auto now = plane_.now();
    for (const auto& window : plane_.claim_windows(since)) {
      const auto worker = tried.find(window.worker_id);
      if (worker == tried.end() || window.at <= to_epoch_seconds(worker->second)) continue;
      const auto delay = std::chrono::milliseconds(
          static_cast<std::int64_t>(std::ceil((window.at - to_epoch_seconds(now)) * 1000.0)));
      // Ordered by end: the first after the worker's try is its soonest.
      windows_.emplace(window.worker_id, steady + std::max(delay, kLeast));
    }
  } catch (const Error&) {
    // The store failed: the waiters' own claims meet the same failure and answer with it.
  }
}

void ClaimWaiters::run() {
  using SteadyClock = std::chrono::steady_clock;
  // Without a recheck: how long the thread sleeps when nobody waits and nothing is signalled.
  constexpr auto kIdle = std::chrono::hours(1);
  const bool rechecks = recheck_.count() > 0;
  auto next_recheck = SteadyClock::now() + (rechecks ? recheck_ : kIdle);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    // A new waiter tried its claim on arrival: it only moves the next wake to its deadline.
    wake_.wait_until(lock, next_wake(next_recheck), [&] {
      return stopping_ || owed_ > 0 || everyone_ || arrived_ || !workers_.empty();
    });
    const bool arrived = arrived_;
    arrived_ = false;
    if (stopping_) break;
    const auto now = SteadyClock::now();
    const bool recheck = now >= next_recheck;
    const bool everyone = everyone_ || (recheck && rechecks);
    if (recheck) next_recheck = now + (rechecks ? recheck_ : kIdle);
    std::size_t owed = owed_;
    owed_ = 0;
    everyone_ = false;
    std::set<std::string> signalled;
    signalled.swap(workers_);
    for (auto window = windows_.begin(); window != windows_.end();) {
      if (window->second > now) {
        ++window;
        continue;
      }
      signalled.insert(window->first);
      window = windows_.erase(window);
    }
    std::vector<Waiter> batch;
    batch.swap(waiters_);
    in_hand_ = batch.size();
    lock.unlock();
    std::vector<Waiter> kept;
    bool tried = false;
    const auto tried_at = plane_.now();
    for (auto& waiter : batch) {
      // The wake-ups owed go down the line: a waiter that claims nothing passes its turn on.
      const bool try_claim =
          everyone || owed > 0 || waiter.missed || signalled.contains(waiter.worker_id);
      tried = tried || try_claim;
      if (try_claim) waiter.tried_at = tried_at;
      waiter.missed = false;
      std::size_t claimed = 0;
      const auto settled = settle(waiter, try_claim, now, claimed);
      owed -= std::min(owed, claimed);
      if (settled == Settled::kWaiting) kept.push_back(std::move(waiter));
    }
    // What the clock alone will open next, once something changed or someone new waits: the
    // waiters left sleep until then instead of retrying on a period.
    if ((tried || arrived) && !kept.empty()) refresh_windows(kept);
    lock.lock();
    in_hand_ = 0;
    // Those that arrived meanwhile go after the ones still waiting, which keep their turn.
    std::move(waiters_.begin(), waiters_.end(), std::back_inserter(kept));
    waiters_.swap(kept);
  }
  std::vector<Waiter> left;
  left.swap(waiters_);
  lock.unlock();
  for (auto& waiter : left) waiter.answer({}, nullptr);
}

}  // namespace aios
