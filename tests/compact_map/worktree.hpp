#pragma once
// A throw-away worktree for the compact map tests: files written under a temporary directory.

#include <filesystem>
#include <string>
#include <string_view>

#include "support/daemon.hpp"

namespace aios::test {

class Worktree {
 public:
  Worktree() { std::filesystem::create_directory(root()); }

  // Writes `content` to `relative` under the worktree, creating its directories.
  void write(std::string_view relative, std::string_view content) const {
    const std::filesystem::path path = root() / relative;
    std::filesystem::create_directories(path.parent_path());
    write_text_file(path, content);
  }

  std::filesystem::path root() const { return dir_.path() / "repo"; }
  // A directory beside the worktree, for what must stay outside it.
  std::filesystem::path outside() const { return dir_.path(); }

 private:
  ScopedTempDir dir_{"aios-compact-map"};
};

// The source commit the maps are built for.
inline const std::string kCommit(40, 'a');

// The seed's _repo fixture: a model router module and its test.
inline void write_seed_repo(const Worktree& tree) {
  tree.write("active-runtime/app/model_router.py",
             "class ProviderRegistry:\n"
             "    def register_provider(self, provider_id, model_version):\n"
             "        return provider_id, model_version\n"
             "\n"
             "class ModelRouter:\n"
             "    def select_model(self, tenant_id, budget_tokens, fallback_provider):\n"
             "        return fallback_provider\n"
             "\n"
             "def record_model_cost(trace_id, token_count, cost_usd):\n"
             "    return trace_id, token_count, cost_usd\n"
             "\n"
             "def evaluate_model_version(model_id, version, approval_gate):\n"
             "    return approval_gate\n");
  tree.write("tests/test_model_router.py",
             "def test_model_budget_and_fallback():\n"
             "    assert True\n");
}

}  // namespace aios::test
