// aiosctl watch: the queue, the workers and the latest events, redrawn every interval on a
// terminal, or as lines when the output is not one: each new event at its own time, the summary
// when it changed; JSON lines with --json.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <ostream>
#include <thread>

#include "aios/ctl.hpp"
#include "aios/sys.hpp"
#include "ctl/commands.hpp"
#include "ctl/render.hpp"

namespace aios::ctl {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kRecentEvents = 10;

struct WatchOptions {
  int interval_ms = 1000;
  int rounds = 0;  // 0: until Ctrl-C
  bool plain = false;
};

std::atomic<bool> g_stop{false};

void on_stop_signal(int) {
  g_stop = true;
}

// SIGINT and SIGTERM end the watch (not the process) while it runs; the old dispositions
// come back after.
class StopSignals {
 public:
  StopSignals() {
    g_stop = false;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

std::string summary(const Json& status, const Json& fleet) {
  std::string line = "queue";
  const auto tasks = status.value("tasks", Json::object());
  for (const auto& [name, count] : tasks.items()) {
    line += " " + name + "=" + cell(count);
  }
  std::size_t online = 0;
  const auto workers = fleet.value("workers", Json::array());
  for (const auto& worker : workers) online += worker.value("online", false) ? 1U : 0U;
  return line + "; workers online " + std::to_string(online) + "/" + std::to_string(workers.size());
}

int watch(Context& c, const WatchOptions& o) {
  const StopSignals signals;
  const bool terminal = !o.plain && !c.json && ::isatty(STDOUT_FILENO) == 1;
  std::int64_t cursor = -1;  // the last event id shown; -1 before the first round
  std::deque<Json> recent;
  std::string last_line;  // the summary (or problem) a plain watch printed last
  for (int round = 1; !g_stop; ++round) {
    std::string problem;
    Json status, fleet, events = Json::object();
    try {
      status = c.client.get(Service::kApi, "/v1/status");
      fleet = c.client.get(Service::kApi, "/v1/fleet");
      if (cursor < 0) {
        cursor = std::max<std::int64_t>(0, status.value("last_event_id", std::int64_t{0}) -
                                               static_cast<std::int64_t>(kRecentEvents));
      }
      events = c.client.get(Service::kApi, "/v1/events?limit=1000&after=" + std::to_string(cursor));
      cursor = events.value("next_after", cursor);
    } catch (const Error& error) {
      // A scheduler restarting is what an operator watches for: say so and keep watching.
      if (exit_code_of(error) != kUnavailable) throw;
      problem = "unavailable: " + error.code();
    }
    for (const auto& event : events.value("events", Json::array())) {
      recent.push_back(event);
      if (recent.size() > kRecentEvents) recent.pop_front();
    }
    const std::string now = format_iso8601(std::chrono::system_clock::now());
    if (terminal) {
      c.out << "\x1b[H\x1b[2J"
            << "aiosctl watch  " << c.client.endpoints().api << "  " << now
            << "  (Ctrl-C to stop)\n\n";
      if (!problem.empty()) {
        c.out << problem << "\n";
      } else {
        c.out << status_view(status) << "\n"
              << workers_view(fleet) << "\nlatest events\n"
              << events_view({{"events", Json(recent)}}, true);
      }
    } else {
      // Each event at its own time; the summary only when it changed, so a quiet queue is quiet.
      for (const auto& event : events.value("events", Json::array())) {
        if (c.json) {
          c.out << event.dump() << "\n";
          continue;
        }
        c.out << cell(event.value("created_at", Json())) << " event "
              << cell(event.value("event_id", Json())) << " "
              << cell(event.value("task_id", Json())) << " "
              << cell(event.value("event_type", Json())) << " "
              << cell(event.value("agent_id", Json())) << "\n";
      }
      const std::string line = problem.empty() ? summary(status, fleet) : problem;
      if (line != last_line) {
        if (c.json) {
          c.out << Json{{"time", now}, {"summary", line}}.dump() << "\n";
        } else {
          c.out << now << " " << line << "\n";
        }
        last_line = line;
      }
    }
    c.out.flush();
    if (o.rounds > 0 && round >= o.rounds) break;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.interval_ms);
    while (!g_stop && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (terminal) c.out << "\n";
  return kDone;
}

}  // namespace

void add_watch_command(CLI::App& app, Action& action) {
  const auto o = std::make_shared<WatchOptions>();
  auto* command = app.add_subcommand(
      "watch", "A live view of the queue, the workers and the latest events, until Ctrl-C");
  command->add_option("--interval-ms", o->interval_ms, "How often it refreshes")
      ->check(CLI::Range(100, 60000))
      ->capture_default_str();
  command->add_option("--rounds", o->rounds, "Stop after this many refreshes (0: until Ctrl-C)")
      ->check(CLI::Range(0, 1000000));
  command->add_flag("--plain", o->plain, "Plain lines even on a terminal");
  command->callback([&action, o] { action = [o](Context& c) { return watch(c, *o); }; });
}

}  // namespace aios::ctl
