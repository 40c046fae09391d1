// The bubblewrap command line of a sandboxed child: what it sees, and where its network goes.
#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <system_error>

#include "process/sandbox.hpp"

namespace aios::process {
namespace {

namespace fs = std::filesystem;

bool is_ipv4(const std::string& host) {
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1;
}

bool is_dns_name(std::string_view host) {
  if (host.empty() || host.size() > 253 || host.front() == '.' || host.front() == '-' ||
      host.back() == '.' || host.find("..") != std::string_view::npos) {
    return false;
  }
  return std::all_of(host.begin(), host.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.';
  });
}

bool beneath(const fs::path& path, const fs::path& root) {
  const auto relative = path.lexically_relative(root);
  return !relative.empty() && *relative.begin() != "..";
}

bool beneath_any(const fs::path& path, const std::vector<fs::path>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const fs::path& root) { return beneath(path, root); });
}

// Symlinks resolved, so that "beneath" compares what the kernel will mount.
fs::path resolved(const fs::path& path) {
  std::error_code error;
  auto result = fs::weakly_canonical(path, error);
  return error ? path.lexically_normal() : result;
}

void add(std::vector<std::string>& argv, std::initializer_list<std::string> items) {
  argv.insert(argv.end(), items);
}

// /usr read-only, and the merged-/usr links (or directories, on a host without merged /usr).
void add_system(std::vector<std::string>& argv, std::vector<fs::path>& visible) {
  add(argv, {"--ro-bind", "/usr", "/usr"});
  visible.emplace_back("/usr");
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    struct stat info {};
    if (::lstat(top, &info) != 0) continue;
    if (S_ISLNK(info.st_mode)) {
      std::array<char, 256> target{};
      const auto n = ::readlink(top, target.data(), target.size() - 1);
      if (n > 0) add(argv, {"--symlink", std::string(target.data(), static_cast<size_t>(n)), top});
    } else if (S_ISDIR(info.st_mode)) {
      add(argv, {"--ro-bind", top, top});
      visible.emplace_back(top);
    }
  }
  add(argv, {"--ro-bind", "/etc", "/etc"});
  // Over the host's /etc/hosts only: a read-only /etc has no room for a new file (a minimal
  // container may have none, and then a destination's name does not resolve inside).
  struct stat hosts {};
  if (::stat("/etc/hosts", &hosts) == 0 && S_ISREG(hosts.st_mode)) {
    add(argv, {"--ro-bind-data", std::to_string(kHostsFd), "/etc/hosts"});
  }
  visible.emplace_back("/etc");
}

void add_masks(std::vector<std::string>& argv, const std::vector<fs::path>& hidden,
               const std::vector<fs::path>& visible) {
  for (const auto& path : hidden) {
    struct stat info {};
    if (!beneath_any(path, visible) || ::stat(path.c_str(), &info) != 0) continue;
    // What we cannot read ourselves (a unit's InaccessiblePaths=, a root-only directory) the
    // child cannot read either; bubblewrap could not mount over it anyway.
    if (::access(path.c_str(), R_OK) != 0) continue;
    if (S_ISDIR(info.st_mode)) {
      add(argv, {"--size", "4096", "--tmpfs", path.string(), "--remount-ro", path.string()});
    } else {
      add(argv, {"--ro-bind", "/dev/null", path.string()});
    }
  }
}

void plan_network(const std::vector<Destination>& network, Plan& plan) {
  if (network.size() > kMaxDestinations) {
    throw std::system_error(EINVAL, std::generic_category(), "too many network destinations");
  }
  plan.hosts = "127.0.0.1\tlocalhost\n";
  int named = 0;
  for (const auto& destination : network) {
    std::string address;
    if (destination.host == "localhost") {
      address = "127.0.0.1";
    } else if (is_ipv4(destination.host)) {
      address = destination.host;
      const bool loopback = address.rfind("127.", 0) == 0;
      if (!loopback && std::find(plan.loopback_aliases.begin(), plan.loopback_aliases.end(),
                                 address) == plan.loopback_aliases.end()) {
        plan.loopback_aliases.push_back(address);
      }
    } else {
      // One address per name, so two ports of one host share it.
      const auto same =
          std::find_if(plan.listeners.begin(), plan.listeners.end(),
                       [&](const Listener& l) { return l.destination.host == destination.host; });
      if (same != plan.listeners.end()) {
        address = same->address;
      } else {
        ++named;
        address = "127.254." + std::to_string(named / 256) + "." + std::to_string(named % 256);
        plan.hosts += address + "\t" + destination.host + "\n";
      }
    }
    plan.listeners.push_back({address, destination});
  }
}

}  // namespace

std::optional<Destination> parse_destination(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  Destination destination;
  destination.host = std::string(text.substr(0, colon));
  const auto port = text.substr(colon + 1);
  unsigned value = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (error != std::errc() || end != port.data() + port.size() || port.empty() ||
      port.front() == '0' || value == 0 || value > 65535) {
    return std::nullopt;
  }
  destination.port = static_cast<std::uint16_t>(value);
  if (!is_ipv4(destination.host) && !is_dns_name(destination.host)) return std::nullopt;
  return destination;
}

Plan plan_sandbox(const Spec& spec, bool own_procfs, bool staged) {
  const Sandbox& sandbox = *spec.sandbox;
  Plan plan;
  plan.staged = staged;
  std::vector<Destination> destinations = sandbox.network;
  for (const auto& served : sandbox.served) destinations.push_back(served.destination);
  plan_network(destinations, plan);
  auto& argv = plan.argv;
  // No UTS namespace: the units' ProtectHostname= already forbids sethostname, and the host's
  // name is no secret.
  add(argv, {kBubblewrap, "--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid",
             "--unshare-ipc", "--cap-drop", "ALL", "--json-status-fd", std::to_string(kStatusFd),
             "--seccomp", std::to_string(kSyscallFilterFd)});
  std::vector<fs::path> visible;
  add_system(argv, visible);
  const auto tmp_size = std::to_string(sandbox.limits.tmp_bytes);
  if (own_procfs) {
    add(argv, {"--proc", "/proc"});
  } else {
    add(argv, {"--size", "4096", "--tmpfs", "/proc"});
  }
  add(argv, {"--dev", "/dev", "--size", tmp_size, "--tmpfs", "/dev/shm", "--size", tmp_size,
             "--tmpfs", "/tmp"});
  const auto bind = [&](const char* option, const fs::path& real) {
    if (plan.sources.size() == kMaxSources) {
      throw std::system_error(EINVAL, std::generic_category(), "too many sandbox paths");
    }
    const auto source =
        staged ? std::string(kStage) + "/" + std::to_string(plan.sources.size()) : real.string();
    add(argv, {option, source, real.string()});
    plan.sources.push_back(real.string());
  };
  std::vector<fs::path> hidden;
  for (const auto& path : sandbox.hidden) hidden.push_back(resolved(path));
  for (const auto& path : sandbox.read_only) {
    const auto real = resolved(path);
    struct stat info {};
    // A path inside a hidden one (a profile naming a file of the credential directory) stays
    // hidden: being named does not make it visible.
    if (::stat(real.c_str(), &info) != 0 || beneath_any(real, hidden)) continue;
    bind("--ro-bind", real);
    visible.push_back(real);
  }
  add_masks(argv, hidden, visible);
  std::vector<fs::path> writable;
  for (const auto& path : sandbox.writable) {
    const auto real = resolved(path);
    bind("--bind", real);
    writable.push_back(real);
  }
  add_masks(argv, hidden, writable);
  // The root bubblewrap builds the view on is a tmpfs without a size: read-only, so /tmp (sized)
  // and the writable paths are all a child can fill.
  // The first step inside (aios-sandbox-exec) removes the PWD bubblewrap sets, so the child's
  // environment is exactly its spec's, then executes the child.
  add(argv, {"--perms", "0555", "--ro-bind-data", std::to_string(kExecFd), kSandboxExecPath,
             "--remount-ro", "/", "--chdir", resolved(spec.working_directory).string(), "--",
             kSandboxExecPath});
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  return plan;
}

}  // namespace aios::process
