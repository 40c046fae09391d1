// The worker's independent reading of an engineering worktree: git state, changed paths, file
// types, limits and secrets.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "aios/canonical.hpp"
#include "aios/files.hpp"
#include "aios/git.hpp"
#include "worker/engineering.hpp"

namespace aios::worker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// `prefix` followed by at least `min_tail` token characters.
bool has_token(std::string_view content, std::string_view prefix, std::size_t min_tail,
               bool upper_alnum_only = false) {
  for (auto pos = content.find(prefix); pos != std::string_view::npos;
       pos = content.find(prefix, pos + 1)) {
    std::size_t n = 0;
    for (auto at = pos + prefix.size(); at < content.size(); ++at, ++n) {
      const char c = content[at];
      const bool ok =
          upper_alnum_only ? ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) : is_token_char(c);
      if (!ok) break;
    }
    if (n >= min_tail) return true;
  }
  return false;
}

bool has_private_key(std::string_view content) {
  for (auto pos = content.find("-----BEGIN "); pos != std::string_view::npos;
       pos = content.find("-----BEGIN ", pos + 1)) {
    const auto end = content.find("-----", pos + 11);
    if (end != std::string_view::npos && end - pos <= 60 &&
        content.substr(pos, end - pos).find("PRIVATE KEY") != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

[[noreturn]] void refuse(ErrorCode code, const std::string& path) {
  throw Error(code, path);
}

// A symlink's target, made absolute against the link's own directory.
fs::path link_target(const fs::path& link) {
  std::array<char, 4096> buffer{};
  const auto n = ::readlink(link.c_str(), buffer.data(), buffer.size() - 1);
  if (n < 0) return {};
  const fs::path target(std::string(buffer.data(), static_cast<std::size_t>(n)));
  return (target.is_absolute() ? target : link.parent_path() / target).lexically_normal();
}

bool inside(const fs::path& path, const fs::path& root) {
  const auto relative = path.lexically_relative(root);
  return !relative.empty() && *relative.begin() != "..";
}

// Every directory on the way to a changed path must be a real one: a path git reports below a
// symlinked directory would be read through it.
void check_parents(const fs::path& worktree, const std::string& path) {
  fs::path at = worktree;
  const fs::path relative = path;
  for (auto it = relative.begin(); it != relative.end(); ++it) {
    if (std::next(it) == relative.end()) break;
    at /= *it;
    struct stat info {};
    if (::lstat(at.c_str(), &info) != 0) continue;
    if (S_ISLNK(info.st_mode)) {
      refuse(inside(link_target(at), worktree) ? ErrorCode::ENGINEERING_CHANGE_UNSUPPORTED
                                               : ErrorCode::ENGINEERING_SYMLINK_ESCAPE,
             path);
    }
    if (!S_ISDIR(info.st_mode)) refuse(ErrorCode::ENGINEERING_CHANGE_UNSUPPORTED, path);
  }
}

void check_git_state(const git::BackendRefs& read, const std::string& base_oid,
                     const fs::path& authority_git_dir) {
  std::vector<std::string> after;
  if (read.head) after.push_back(*read.head);
  for (const auto& [name, oid] : read.refs) after.push_back(oid);
  git::Repository authority(authority_git_dir);
  for (const auto& oid : after) {
    if (oid != base_oid && !authority.has_commit(oid)) {
      refuse(ErrorCode::ENGINEERING_COMMIT_CREATED, oid);
    }
  }
  if (!read.unreadable.empty()) refuse(ErrorCode::ENGINEERING_REFS_CHANGED, read.unreadable);
  if (read.head != base_oid) refuse(ErrorCode::ENGINEERING_HEAD_MOVED, read.head.value_or(""));
  if (!read.refs.empty()) refuse(ErrorCode::ENGINEERING_REFS_CHANGED, read.refs.begin()->first);
}

}  // namespace

std::optional<std::string> secret_pattern(std::string_view content,
                                          const std::vector<std::string>& known_secrets) {
  if (has_private_key(content)) return "private key";
  if (has_token(content, "sk-", 20)) return "OpenAI-style key";
  if (has_token(content, "AKIA", 16, true)) return "AWS access key id";
  for (const std::string_view prefix : {"ghp_", "gho_", "ghs_", "ghu_", "github_pat_"}) {
    if (has_token(content, prefix, 20)) return "GitHub token";
  }
  for (const std::string_view prefix : {"xoxb-", "xoxp-", "xoxa-"}) {
    if (has_token(content, prefix, 10)) return "Slack token";
  }
  for (const auto& secret : known_secrets) {
    if (!secret.empty() && content.find(secret) != std::string_view::npos) return "known secret";
  }
  return std::nullopt;
}

InspectedChanges inspect_worktree(const fs::path& worktree, const std::string& base_oid,
                                  const git::BackendRefs& refs, const fs::path& authority_git_dir,
                                  const std::vector<std::string>& known_secrets) {
  std::vector<git::WorktreeChange> changes;
  try {
    check_git_state(refs, base_oid, authority_git_dir);
    changes = git::worktree_changes(authority_git_dir, base_oid, worktree);
  } catch (const Error& error) {
    if (error.code().starts_with("ENGINEERING_")) throw;
    throw Error(ErrorCode::ENGINEERING_WORKTREE_FAILED, error.code() + ": " + error.detail());
  }
  if (changes.size() > kMaxEngineeringFiles) {
    refuse(ErrorCode::ENGINEERING_CHANGE_SET_TOO_LARGE, std::to_string(changes.size()));
  }
  InspectedChanges result{json::array(), json::array()};
  std::size_t total = 0;
  for (const auto& change : changes) {
    check_parents(worktree, change.path);
    if (change.removed) {
      result.change_set.push_back({{"path", change.path}, {"operation", "delete_file"}});
      result.changed_files.push_back({{"path", change.path}, {"operation", "delete_file"}});
      continue;
    }
    const fs::path file = worktree / change.path;
    struct stat info {};
    if (::lstat(file.c_str(), &info) != 0)
      refuse(ErrorCode::ENGINEERING_WORKTREE_FAILED, change.path);
    if (S_ISLNK(info.st_mode)) {
      refuse(inside(link_target(file), worktree) ? ErrorCode::ENGINEERING_CHANGE_UNSUPPORTED
                                                 : ErrorCode::ENGINEERING_SYMLINK_ESCAPE,
             change.path);
    }
    if (!S_ISREG(info.st_mode)) refuse(ErrorCode::ENGINEERING_CHANGE_UNSUPPORTED, change.path);
    // The checks above name what is wrong; the read itself lets the kernel refuse a symlink at
    // any component, so what goes into the change set is the file that lies beneath the tree.
    const auto read = files::read_beneath(worktree, change.path, kMaxEngineeringFileBytes);
    if (read.status == files::ReadStatus::too_large) {
      refuse(ErrorCode::ENGINEERING_FILE_TOO_LARGE, change.path);
    }
    if (read.status != files::ReadStatus::ok) {
      refuse(ErrorCode::ENGINEERING_CHANGE_UNSUPPORTED, change.path);
    }
    // A governed change carries text: JSON cannot hold bytes that are not UTF-8.
    if (utf8::decode_replace(read.content) != read.content) {
      refuse(ErrorCode::ENGINEERING_CHANGE_UNSUPPORTED, change.path + ": not UTF-8 text");
    }
    total += read.content.size();
    if (total > kMaxEngineeringChangeBytes) {
      refuse(ErrorCode::ENGINEERING_CHANGE_SET_TOO_LARGE, change.path);
    }
    if (const auto pattern = secret_pattern(read.content, known_secrets)) {
      refuse(ErrorCode::ENGINEERING_SECRET_DETECTED, change.path + ": " + *pattern);
    }
    result.changed_files.push_back({{"path", change.path},
                                    {"operation", "write_file"},
                                    {"bytes", read.content.size()},
                                    {"sha256", sha256_hex(read.content)}});
    result.change_set.push_back(
        {{"path", change.path}, {"operation", "write_file"}, {"content", read.content}});
  }
  return result;
}

json verification_plan(const json& allowlist, const json& requests) {
  json plan = json::array();
  std::vector<bool> used(allowlist.size(), false);
  for (const auto& request : requests) {
    const auto match = std::find_if(allowlist.begin(), allowlist.end(), [&](const json& command) {
      return command.at("argv") == request.at("argv");
    });
    if (match == allowlist.end()) {
      throw Error(ErrorCode::ENGINEERING_VERIFICATION_NOT_ALLOWED,
                  bounded_text(request.at("argv").dump(), 512));
    }
    const auto index = static_cast<std::size_t>(match - allowlist.begin());
    if (!used[index]) plan.push_back(*match);
    used[index] = true;
  }
  for (std::size_t i = 0; i < allowlist.size(); ++i) {
    if (!used[i]) plan.push_back(allowlist[i]);
  }
  return plan;
}

}  // namespace aios::worker
