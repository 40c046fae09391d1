// aiosctl prune on a host's own files: the exchange answers and left-over workspaces of tasks
// that ended, older than the retention. A task that has not ended, or that the Task API does
// not know, keeps everything: a stored answer is what keeps an agent from running twice.
#include <chrono>
#include <map>
#include <regex>
#include <system_error>

#include "aios/canonical.hpp"
#include "aios/files.hpp"
#include "aios/store.hpp"
#include "ctl/commands.hpp"

namespace aios::ctl {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxAnswerBytes = 1024 * 1024;

class EndedTasks {
 public:
  explicit EndedTasks(Client& client) : client_(client) {}

  bool ended(const std::string& task_id) {
    const auto known = ended_.find(task_id);
    if (known != ended_.end()) return known->second;
    bool done = false;
    try {
      done = store::is_terminal_status(
          client_.get(Service::kApi, "/v1/tasks/" + task_id).value("status", ""));
    } catch (const Error& error) {
      if (!error.is(ErrorCode::TASK_NOT_FOUND)) throw;
    }
    return ended_[task_id] = done;
  }

 private:
  Client& client_;
  std::map<std::string, bool> ended_;
};

bool older_than(const fs::path& path, fs::file_time_type cutoff) {
  std::error_code ec;
  const auto written = fs::last_write_time(path, ec);
  return !ec && written < cutoff;
}

}  // namespace

PrunedFiles prune_files(Client& client, const std::vector<std::string>& exchange_roots,
                        const std::vector<std::string>& workspace_roots, std::chrono::seconds age) {
  EndedTasks tasks(client);
  PrunedFiles pruned;
  const auto cutoff = fs::file_time_type::clock::now() - age;
  for (const auto& root : exchange_roots) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(root) / "results", ec)) {
      const auto& path = entry.path();
      if (path.extension() != ".json" || !entry.is_regular_file() || !older_than(path, cutoff)) {
        continue;
      }
      const auto read = files::read_file(path, kMaxAnswerBytes);
      if (read.status != files::ReadStatus::ok) continue;
      const auto answer = parse_json(read.content);
      if (!answer.is_object() || !answer.contains("task_id") || !answer["task_id"].is_string() ||
          !tasks.ended(answer["task_id"].get<std::string>())) {
        continue;
      }
      const auto id = path.stem().string();
      for (const auto& file :
           {path, fs::path(path.string() + ".mac"), fs::path(root) / "started" / (id + ".json")}) {
        fs::remove(file, ec);
      }
      ++pruned.answers;
    }
  }
  // The worker's disposable checkouts are named <task id>-<12 hex>; one left behind by a crash
  // goes once its task has ended.
  static const std::regex kWorkspace(R"((.+)-[0-9a-f]{12})");
  for (const auto& root : workspace_roots) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      std::smatch name;
      const auto file = entry.path().filename().string();
      if (!entry.is_directory() || entry.is_symlink() ||
          !std::regex_match(file, name, kWorkspace) || !older_than(entry.path(), cutoff) ||
          !tasks.ended(name[1].str())) {
        continue;
      }
      fs::remove_all(entry.path(), ec);
      ++pruned.workspaces;
    }
  }
  return pruned;
}

}  // namespace aios::ctl
