// Serve mode: inotify on requests/, a bounded pool of runners, at-most-once start markers, and
// a drain on stop.
#include <sys/eventfd.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "aios/files.hpp"
#include "aios/log.hpp"
#include "aios/sys.hpp"
#include "executor/exchange_core.hpp"

namespace aios::executor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_request_name(const std::string& name) {
  return !name.empty() && name.front() != '.' && name.size() > 5 && name.ends_with(".json");
}

// Creates a missing exchange subdirectory with the tmpfiles.d mode (setgid, group-writable, so
// the worker's group can hand in requests); an existing one is left as the operator made it.
void ensure_directory(const fs::path& path, mode_t mode) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode))
      throw Error(ErrorCode::EXTERNAL_AGENT_EXCHANGE_UNAVAILABLE, path.string());
    return;
  }
  if (::mkdir(path.c_str(), mode) != 0 || ::chmod(path.c_str(), mode) != 0) {
    throw Error(ErrorCode::EXTERNAL_AGENT_EXCHANGE_UNAVAILABLE, path.string());
  }
}

}  // namespace

struct Server::State {
  ServeOptions options;
  fs::path requests;
  fs::path results;
  fs::path failed;
  fs::path started;
  files::DirectoryWatch watch;
  process::Fd wake{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};

  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::string> queue;
  std::set<std::string> active;  // queued or running: never dispatched twice at once
  bool stopping = false;
  std::atomic<std::size_t> completed{0};

  explicit State(ServeOptions serve_options)
      : options(std::move(serve_options)),
        requests(options.root / "requests"),
        results(options.root / "results"),
        failed(options.root / "failed"),
        started(options.root / "started") {
    // The whole exchange, markers included, is out of every child's sight.
    options.execute.hidden.push_back(options.root);
  }

  void consider(const std::string& name) {
    if (!is_request_name(name)) return;
    {
      const std::lock_guard lock(mutex);
      if (stopping || !active.insert(name).second) return;
      queue.push_back(name);
    }
    ready.notify_one();
  }

  void scan() {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(requests, error)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names) consider(name);
  }

  void record_failure(const std::string& name, const std::string& text) {
    write_answer(failed / name, python_json_dumps(json{{"error", text}}) + "\n", options.key);
  }

  // True when the request already has an answer of ours. One without our seal was written by
  // someone else: it is removed, and the request is handled as if it had none.
  bool answered(const std::string& name) {
    for (const fs::path& answer : {results / name, failed / name}) {
      try {
        if (read_answer(answer, kMaxAnswerBytes, options.key)) return true;
      } catch (const Error& error) {
        log::warn("EXTERNAL_AGENT_ANSWER_REMOVED",
                  {{"request", name}, {"answer", answer.string()}, {"error", error.code()}});
        std::error_code ignored;  // a directory or symlink goes as well; our answer replaces it
        fs::remove_all(answer, ignored);
      }
    }
    return false;
  }

  // Removes the request (and then its marker) once its outcome is durable.
  void settle(const std::string& name) {
    std::error_code ignored;
    struct stat info {};
    if (::lstat((requests / name).c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
      fs::remove(requests / name, ignored);
    } else {
      files::remove_durably(requests / name);
    }
    files::remove_durably(started / name);
  }

  void process(const std::string& name) {
    const fs::path request = requests / name;
    if (!files::exists(request)) return;
    if (answered(name)) {
      settle(name);  // finished before a crash or restart; never run it again
      return;
    }
    if (files::exists(started / name)) {
      log::warn("EXTERNAL_AGENT_REQUEST_FAILED",
                {{"request", name}, {"error", "EXTERNAL_AGENT_OUTCOME_INDETERMINATE"}});
      record_failure(name, "EXTERNAL_AGENT_OUTCOME_INDETERMINATE");
      settle(name);
      return;
    }
    ExecuteOptions execute = options.execute;
    execute.before_spawn = [&] {
      files::write_atomic(
          started / name,
          canonical_json({{"request", name},
                          {"started_at", format_iso8601(environment_of(execute).clock.now())}}) +
              "\n");
    };
    try {
      const auto result = options.handler(request, execute);
      write_result(results / name, result, &options.key, environment_of(execute).faults);
      log::info("EXTERNAL_AGENT_REQUEST_SUCCEEDED",
                {{"request", name},
                 {"runtime", result.contains("runtime") ? result["runtime"] : result["backend"]},
                 {"duration_ms", result["duration_ms"]}});
    } catch (const Error& error) {
      nlohmann::json fields = {{"request", name}, {"error", error.code()}};
      // Why a child could not be started (a missing sandbox permission, say) is ours to tell,
      // not the agent's output: the operator needs it to act.
      if (error.code().ends_with("_SPAWN_FAILED")) {
        fields["detail"] = bounded_text(error.detail(), 512);
      }
      log::warn("EXTERNAL_AGENT_REQUEST_FAILED", fields);
      record_failure(name, failure_text(error));
    } catch (const std::exception& error) {
      log::error("EXTERNAL_AGENT_REQUEST_FAILED",
                 {{"request", name}, {"error", "EXTERNAL_AGENT_EXECUTOR_FAILED"}});
      record_failure(name, "EXTERNAL_AGENT_EXECUTOR_FAILED");
    }
    settle(name);
  }

  void runner() {
    for (;;) {
      std::string name;
      {
        std::unique_lock lock(mutex);
        ready.wait(lock, [this] { return stopping || !queue.empty(); });
        if (stopping) return;
        name = std::move(queue.front());
        queue.pop_front();
      }
      try {
        process(name);
      } catch (const std::exception& error) {
        // The outcome could not be recorded (disk full, permissions); the request stays and
        // the next start settles it, as indeterminate if its child had started.
        log::error("EXTERNAL_AGENT_EXCHANGE_WRITE_FAILED",
                   {{"request", name}, {"what", error.what()}});
      }
      {
        const std::lock_guard lock(mutex);
        active.erase(name);
      }
      ++completed;
    }
  }
};

Server::Server(ServeOptions options) : state_(std::make_unique<State>(std::move(options))) {
  const auto& root = state_->options.root;
  if (!files::is_real_directory(root)) {
    throw Error(ErrorCode::EXTERNAL_AGENT_EXCHANGE_UNAVAILABLE, root.string());
  }
  if (state_->options.key.empty()) throw Error(ErrorCode::EXTERNAL_AGENT_EXCHANGE_KEY_INVALID);
  if (!state_->wake.valid()) throw Error(ErrorCode::INTERNAL_ERROR, "eventfd");
  ensure_directory(state_->requests, 02770);
  ensure_directory(state_->results, 02770);
  ensure_directory(state_->failed, 02770);
  ensure_directory(state_->started, 0750);
  // Markers whose request is gone belong to requests that were settled before a crash.
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(state_->started, error)) {
    const auto name = entry.path().filename().string();
    if (is_request_name(name) && !files::exists(state_->requests / name)) {
      files::remove_durably(entry.path());
    }
  }
  state_->watch.add(state_->requests, IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE);
}

Server::~Server() = default;

void Server::run() {
  auto& state = *state_;
  std::vector<std::thread> runners;
  for (unsigned i = 0; i < std::max(1U, state.options.concurrency); ++i) {
    runners.emplace_back([&state] { state.runner(); });
  }
  log::info("EXTERNAL_AGENT_EXECUTOR_SERVING",
            {{"root", state.options.root.string()}, {"concurrency", runners.size()}});
  // Whatever ends the loop (stop() or an error), running requests finish before we return.
  const auto drain = [&] {
    {
      const std::lock_guard lock(state.mutex);
      state.stopping = true;
    }
    state.ready.notify_all();
    for (auto& runner : runners) runner.join();
  };
  try {
    state.scan();
    for (;;) {
      bool woken = false;
      const auto events = state.watch.wait(std::chrono::minutes(1), state.wake.get(), woken);
      if (woken) break;
      for (const auto& event : events) {
        if ((event.mask & IN_Q_OVERFLOW) != 0) {
          state.scan();
        } else if ((event.mask & IN_CREATE) == 0 ||
                   !files::is_regular_file(state.requests / event.name)) {
          // A regular file is taken when it is closed or renamed in, never half-written; what
          // is created as anything else (a symlink) is refused at once.
          state.consider(event.name);
        }
      }
    }
  } catch (...) {
    drain();
    throw;
  }
  drain();
  log::info("EXTERNAL_AGENT_EXECUTOR_STOPPED", {{"completed", state.completed.load()}});
}

void Server::stop() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(state_->wake.get(), &one, sizeof one);
}

}  // namespace aios::executor
