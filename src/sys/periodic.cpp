#include "aios/sys.hpp"

namespace aios {

PeriodicThread::PeriodicThread(std::chrono::milliseconds interval, std::function<void()> tick)
    : thread_([this, interval, tick = std::move(tick)] {
        std::unique_lock lock(mutex_);
        while (!wake_.wait_for(lock, interval, [this] { return stopping_; })) {
          lock.unlock();
          tick();
          lock.lock();
        }
      }) {}

PeriodicThread::~PeriodicThread() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace aios
