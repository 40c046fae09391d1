#include "compact_map/tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <set>
#include <utility>

#include "aios/canonical.hpp"
#include "aios/error.hpp"
#include "aios/process.hpp"

namespace aios::compact_map {
namespace {

using process::Fd;

// Directories that hold tooling state or vendored dependencies, never the repository's own
// interfaces.
const std::set<std::string, std::less<>> kSkippedDirectories = {
    ".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache",
};

constexpr std::size_t kMaxDepth = 64;

class Walker {
 public:
  Walker(const std::vector<std::string>& terms, const Limits& limits)
      : terms_(terms), limits_(limits) {}

  void walk(int dir_fd, const std::string& prefix, std::size_t depth) {
    if (depth > kMaxDepth) {
      truncated_ = true;
      return;
    }
    for (const std::string& name : sorted_names(dir_fd)) {
      if (stopped()) return;
      ++entries_;
      struct stat st {};
      if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      const std::string path = prefix.empty() ? name : prefix + "/" + name;
      if (S_ISDIR(st.st_mode)) {
        if (kSkippedDirectories.contains(name)) continue;
        const Fd child(
            ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (child.valid()) walk(child.get(), path, depth + 1);
      } else if (S_ISREG(st.st_mode) && !language_of(name).empty()) {
        read_file(dir_fd, name, path);
      }
    }
  }

  RankedFiles finish() && {
    std::sort(files_.begin(), files_.end(), [](const SourceFile& a, const SourceFile& b) {
      return a.score != b.score ? a.score > b.score : a.path < b.path;
    });
    if (files_.size() > limits_.max_candidates) files_.resize(limits_.max_candidates);
    return {std::move(files_), truncated_};
  }

 private:
  bool stopped() {
    if (entries_ >= limits_.max_entries || bytes_read_ >= limits_.max_total_bytes) {
      truncated_ = true;
    }
    return truncated_;
  }

  // Names in byte order, so the walk (and where a limit stops it) depends on the tree alone.
  static std::vector<std::string> sorted_names(int dir_fd) {
    std::vector<std::string> names;
    const int own = ::dup(dir_fd);
    if (own < 0) return names;
    DIR* dir = ::fdopendir(own);
    if (dir == nullptr) {
      ::close(own);
      return names;
    }
    ::rewinddir(dir);
    while (const dirent* entry = ::readdir(dir)) {
      const std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      // A path that is not UTF-8 cannot be written in the map's JSON.
      if (utf8::valid(name)) names.emplace_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
  }

  void read_file(int dir_fd, const std::string& name, const std::string& path) {
    const Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!fd.valid()) return;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size > limits_.max_file_bytes) return;
    if (bytes_read_ + size > limits_.max_total_bytes) {
      truncated_ = true;
      return;
    }
    std::string content(size, '\0');
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::read(fd.get(), content.data() + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    content.resize(done);
    bytes_read_ += done;
    // NUL bytes or invalid UTF-8: a binary or foreign-encoded file has no readable interface.
    if (content.find('\0') != std::string::npos || !utf8::valid(content)) return;
    score(path, std::move(content));
  }

  void score(const std::string& path, std::string content) {
    const std::string path_lower = ascii_lower(path);
    const std::string text_lower = ascii_lower(content);
    SourceFile file{path, std::string(language_of(path)), std::move(content), 0, {}};
    for (const std::string& term : terms_) {
      const bool in_path = path_lower.find(term) != std::string::npos;
      const bool in_text = text_lower.find(term) != std::string::npos;
      if (in_path) file.score += 3;
      if (in_text) file.score += 1;
      if (in_path || in_text) file.hits.push_back(term);
    }
    if (file.score > 0) files_.push_back(std::move(file));
  }

  const std::vector<std::string>& terms_;
  const Limits& limits_;
  std::vector<SourceFile> files_;
  std::size_t entries_ = 0;
  std::size_t bytes_read_ = 0;
  bool truncated_ = false;
};

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

std::string_view language_of(std::string_view path) {
  static const std::array<std::pair<std::string_view, std::string_view>, 21> kExtensions = {{
      {".py", "python"},      {".pyi", "python"},     {".c", "c"},           {".h", "c"},
      {".cc", "cpp"},         {".cpp", "cpp"},        {".cxx", "cpp"},       {".hh", "cpp"},
      {".hpp", "cpp"},        {".hxx", "cpp"},        {".js", "javascript"}, {".jsx", "javascript"},
      {".mjs", "javascript"}, {".cjs", "javascript"}, {".ts", "typescript"}, {".tsx", "typescript"},
      {".mts", "typescript"}, {".go", "go"},          {".rs", "rust"},       {".java", "java"},
      {".cts", "typescript"},
  }};
  const std::size_t dot = path.rfind('.');
  const std::size_t slash = path.rfind('/');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) {
    return {};
  }
  const std::string_view extension = path.substr(dot);
  for (const auto& [known, language] : kExtensions) {
    if (extension == known) return language;
  }
  return {};
}

bool is_test_path(std::string_view path) {
  const std::string lowered = ascii_lower(path);
  const std::string_view p = lowered;
  if (p.starts_with("tests/") || p.starts_with("test/") || p.find("/tests/") != p.npos ||
      p.find("/test/") != p.npos || p.find("__tests__/") != p.npos) {
    return true;
  }
  const std::size_t slash = p.rfind('/');
  const std::string_view name = slash == p.npos ? p : p.substr(slash + 1);
  return name.starts_with("test_") || name.find("_test.") != name.npos ||
         name.find(".test.") != name.npos || name.find(".spec.") != name.npos ||
         ends_with(name, "test.java") || ends_with(name, "tests.java");
}

RankedFiles rank_files(const std::filesystem::path& root, const std::vector<std::string>& terms,
                       const Limits& limits) {
  const Fd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root_fd.valid()) throw Error(ErrorCode::INTERFACE_MAP_ROOT_INVALID);
  Walker walker(terms, limits);
  walker.walk(root_fd.get(), "", 0);
  return std::move(walker).finish();
}

}  // namespace aios::compact_map
