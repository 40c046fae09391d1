#pragma once
// Wake-ups across the processes of one SQLite store (the scheduler and the rebind service, or
// aiosctl, on one host): a file beside the database that an announcer touches and the listener
// watches with inotify. The listener's own process wakes its waiters itself, so a store that
// listens never touches the file.

#include <filesystem>
#include <functional>
#include <memory>

#include "aios/store.hpp"

namespace aios::store::sqlite {

// `<database>-queue`, beside the database file.
std::filesystem::path announcement_file(const std::filesystem::path& database);

// Touches `file` when it exists (when it does not, nobody listens). Best effort: never throws.
void touch_announcement(const std::filesystem::path& file);

// Creates `file` (with the database's permission bits) and calls `heard` on a thread of its
// own, once at start (what was announced before it listened) and after each touch, until the
// subscription is destroyed. Null, with a warning logged, when the file cannot be watched.
std::unique_ptr<Subscription> watch_announcements(const std::filesystem::path& database,
                                                  std::function<void()> heard);

}  // namespace aios::store::sqlite
