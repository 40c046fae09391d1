#include "aios/capability.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <string_view>

#include "aios/canonical.hpp"
#include "aios/error.hpp"

namespace aios {
namespace {

struct Alias {
  std::string_view name;
  std::array<std::string_view, 2> grants;  // unused slots are empty
};

// The seed's _TASK_ALIASES, entry for entry.
constexpr std::array<Alias, 31> kTaskAliases = {{
    {"repository_read", {"repo.read"}},
    {"git.read", {"repo.read"}},
    {"repo.read", {"repo.read"}},
    {"test_execution", {"test.execute"}},
    {"git.test", {"test.execute"}},
    {"test.execute", {"test.execute"}},
    {"governed_git_write", {"governed.git.write.branch", "governed.git.write.file"}},
    {"governed.git.write", {"governed.git.write.branch", "governed.git.write.file"}},
    {"governed.write.branch", {"governed.git.write.branch"}},
    {"governed.write.file", {"governed.git.write.file"}},
    {"shell", {"runtime.shell"}},
    {"git", {"runtime.git"}},
    {"python", {"runtime.python"}},
    {"code.read", {"legacy.code.read"}},
    {"code.review", {"legacy.code.review"}},
    {"code.write", {"legacy.code.write"}},
    {"code.write.patch", {"legacy.code.write.patch"}},
    {"test.python", {"legacy.test.python"}},
    {"test.shell.allowlisted", {"legacy.test.shell.allowlisted"}},
    {"git.commit", {"legacy.git.commit"}},
    {"git.diff.read", {"legacy.git.diff.read"}},
    {"git.force_push", {"legacy.git.force_push"}},
    {"deploy.production", {"legacy.deploy.production"}},
    {"secret.transform", {"legacy.secret.transform"}},
    {"secure_file_transformer", {"legacy.secure_file_transformer"}},
    {"runtime.shadow", {"legacy.runtime.shadow"}},
    {"review.security", {"legacy.review.security"}},
    {"review.api-contract", {"legacy.review.api-contract"}},
    {"gpu.train", {"legacy.gpu.train"}},
    {"agent.runtime.hermes", {"agent.runtime.hermes"}},
    {"agent.runtime.openclaw", {"agent.runtime.openclaw"}},
}};

// The seed's _WORKER_ALIASES. Unlike the task table it has the explicit governed.git.write.*
// names and lacks governed_git_write / governed.git.write: a worker is granted the pair only
// through its parts.
constexpr std::array<Alias, 31> kWorkerAliases = {{
    {"git.read", {"repo.read"}},
    {"repo.read", {"repo.read"}},
    {"repository_read", {"repo.read"}},
    {"git.test", {"test.execute"}},
    {"test.execute", {"test.execute"}},
    {"test_execution", {"test.execute"}},
    {"governed.write.branch", {"governed.git.write.branch"}},
    {"governed.git.write.branch", {"governed.git.write.branch"}},
    {"governed.write.file", {"governed.git.write.file"}},
    {"governed.git.write.file", {"governed.git.write.file"}},
    {"shell", {"runtime.shell"}},
    {"git", {"runtime.git"}},
    {"python", {"runtime.python"}},
    {"code.read", {"legacy.code.read"}},
    {"code.review", {"legacy.code.review"}},
    {"code.write", {"legacy.code.write"}},
    {"code.write.patch", {"legacy.code.write.patch"}},
    {"test.python", {"legacy.test.python"}},
    {"test.shell.allowlisted", {"legacy.test.shell.allowlisted"}},
    {"git.commit", {"legacy.git.commit"}},
    {"git.diff.read", {"legacy.git.diff.read"}},
    {"git.force_push", {"legacy.git.force_push"}},
    {"deploy.production", {"legacy.deploy.production"}},
    {"secret.transform", {"legacy.secret.transform"}},
    {"secure_file_transformer", {"legacy.secure_file_transformer"}},
    {"runtime.shadow", {"legacy.runtime.shadow"}},
    {"review.security", {"legacy.review.security"}},
    {"review.api-contract", {"legacy.review.api-contract"}},
    {"gpu.train", {"legacy.gpu.train"}},
    {"agent.runtime.hermes", {"agent.runtime.hermes"}},
    {"agent.runtime.openclaw", {"agent.runtime.openclaw"}},
}};

template <std::size_t N>
const Alias* find_alias(const std::array<Alias, N>& table, std::string_view name) {
  const auto it = std::find_if(table.begin(), table.end(),
                               [name](const Alias& alias) { return alias.name == name; });
  return it == table.end() ? nullptr : &*it;
}

void add_grants(const Alias& alias, std::set<std::string>& out) {
  for (const auto grant : alias.grants) {
    if (!grant.empty()) out.emplace(grant);
  }
}

const nlohmann::json& require_array(const nlohmann::json& values) {
  if (!values.is_array()) throw Error(ErrorCode::CAPABILITY_INVALID);
  return values;
}

bool any_unknown(const std::set<std::string>& values) {
  return std::any_of(values.begin(), values.end(), [](const std::string& value) {
    return value.starts_with(kUnknownCapabilityPrefix);
  });
}

nlohmann::json sorted_array(const std::set<std::string>& values) {
  return nlohmann::json(std::vector<std::string>(values.begin(), values.end()));
}

}  // namespace

std::string clean_capability(const nlohmann::json& value) {
  if (!value.is_string()) throw Error(ErrorCode::CAPABILITY_INVALID);
  std::string text = python_lower(python_strip(value.get_ref<const std::string&>()));
  if (text.empty()) throw Error(ErrorCode::CAPABILITY_INVALID);
  return text;
}

bool is_known_task_capability(std::string_view name) {
  return name.find('*') == std::string_view::npos && find_alias(kTaskAliases, name) != nullptr;
}

std::set<std::string> normalize_required_capabilities(const nlohmann::json& values) {
  std::set<std::string> result;
  for (const auto& value : require_array(values)) {
    const std::string text = clean_capability(value);
    const Alias* alias =
        text.find('*') == std::string::npos ? find_alias(kTaskAliases, text) : nullptr;
    if (alias == nullptr) {
      result.insert(std::string(kUnknownCapabilityPrefix) + text);
    } else {
      add_grants(*alias, result);
    }
  }
  return result;
}

std::set<std::string> normalize_worker_capabilities(const nlohmann::json& values) {
  std::set<std::string> result;
  for (const auto& value : require_array(values)) {
    const std::string text = clean_capability(value);
    if (text.find('*') != std::string::npos) continue;
    if (const Alias* alias = find_alias(kWorkerAliases, text)) add_grants(*alias, result);
  }
  if (result.contains("governed.git.write.branch") && result.contains("governed.git.write.file")) {
    result.insert("governed.git.write");
  }
  return result;
}

bool has_capabilities(const nlohmann::json& worker, const nlohmann::json& required) {
  const auto needed = normalize_required_capabilities(required);
  const auto effective = normalize_worker_capabilities(worker);
  if (any_unknown(needed)) return false;
  return std::includes(effective.begin(), effective.end(), needed.begin(), needed.end());
}

bool required_capabilities_subset(const nlohmann::json& granted, const nlohmann::json& required) {
  const auto grant = normalize_required_capabilities(granted);
  const auto needed = normalize_required_capabilities(required);
  if (any_unknown(grant) || any_unknown(needed)) return false;
  return std::includes(grant.begin(), grant.end(), needed.begin(), needed.end());
}

nlohmann::json normalized_capability_matrix(const nlohmann::json& worker,
                                            const nlohmann::json& required) {
  return {
      {"worker_effective", sorted_array(normalize_worker_capabilities(worker))},
      {"task_required", sorted_array(normalize_required_capabilities(required))},
      {"eligible", has_capabilities(worker, required)},
  };
}

}  // namespace aios
