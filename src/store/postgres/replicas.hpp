#pragma once
// What lets several processes share one PostgreSQL store: the lead (a session-level advisory
// lock on a connection of its own, released by the server when that session ends, so a leader
// that dies hands the lead on) and wake-ups across processes (LISTEN/NOTIFY on one channel, each
// process's own announcements told apart by their payload).

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aios/store.hpp"

namespace aios::store::pg {

using Keywords = std::vector<std::pair<std::string, std::string>>;

inline constexpr const char* kQueueChannel = "aios_queue";

std::unique_ptr<Leadership> leadership(Keywords keywords);

// `own` is this process's payload, skipped when it comes back.
std::unique_ptr<Subscription> listen_queue(Keywords keywords, std::string own,
                                           std::function<void()> heard);

}  // namespace aios::store::pg
