// A sandboxed run handed to the sandbox service over its Unix socket, and that service's side
// of one connection. The wire is one JSON document each way: the client writes the spec and
// shuts down its write side; the service answers with the outcome and closes.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

#include "aios/canonical.hpp"
#include "aios/error.hpp"
#include "aios/process.hpp"

namespace aios::process {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxRequestBytes = 1 << 20;
constexpr std::size_t kMaxAnswerBytes = 2 * kRemoteOutputBytes + 4096;
constexpr auto kRequestReadTimeout = std::chrono::seconds(30);
// Past the spec's own deadline: tearing the sandbox down and handing the writable paths back.
constexpr auto kAnswerGrace = std::chrono::seconds(60);

Error unavailable(const std::string& detail) {
  return Error(ErrorCode::SANDBOX_SERVICE_UNAVAILABLE, detail);
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0) throw std::system_error(errno, std::generic_category(), "send");
    data.remove_prefix(static_cast<std::size_t>(sent));
  }
}

// Reads `fd` to its end, at most `limit` bytes, within `timeout`; std::system_error on overflow
// (EMSGSIZE), timeout (ETIMEDOUT) or a read error.
std::string read_to_end(int fd, std::size_t limit, Clock::duration timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string data;
  char buffer[16384];
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) throw std::system_error(ETIMEDOUT, std::generic_category(), "read");
    pollfd waiting{fd, POLLIN, 0};
    const int ready = ::poll(&waiting, 1, static_cast<int>(std::min<long>(left.count(), 60000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw std::system_error(errno, std::generic_category(), "poll");
    if (ready == 0) continue;
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw std::system_error(errno, std::generic_category(), "read");
    if (got == 0) return data;
    if (data.size() + static_cast<std::size_t>(got) > limit) {
      throw std::system_error(EMSGSIZE, std::generic_category(), "read");
    }
    data.append(buffer, static_cast<std::size_t>(got));
  }
}

json paths_json(const std::vector<std::filesystem::path>& paths) {
  json out = json::array();
  for (const auto& path : paths) out.push_back(path.string());
  return out;
}

json spec_json(const Spec& spec) {
  const Sandbox& box = *spec.sandbox;
  const Limits& limits = box.limits;
  json out = {{"argv", spec.argv},
              {"environment", spec.environment},
              {"working_directory", spec.working_directory.string()},
              {"timeout_ms", spec.timeout.count()},
              {"read_only", paths_json(box.read_only)},
              {"writable", paths_json(box.writable)},
              {"hidden", paths_json(box.hidden)},
              {"limits",
               {{"memory_bytes", limits.memory_bytes},
                {"file_size_bytes", limits.file_size_bytes},
                {"open_files", limits.open_files},
                {"cpu_seconds", limits.cpu_seconds},
                {"processes", limits.processes},
                {"tmp_bytes", limits.tmp_bytes},
                {"disk_bytes", limits.disk_bytes}}}};
  if (spec.stdin_data) out["stdin"] = *spec.stdin_data;
  return out;
}

// Exactly these keys (fail closed on anything unknown), each of the JSON type asked for.
void require_shape(const json& object,
                   std::initializer_list<std::pair<const char*, json::value_t>> keys,
                   std::initializer_list<const char*> optional = {}) {
  const auto invalid = [](const std::string& what) {
    return Error(ErrorCode::SANDBOX_REQUEST_INVALID, what);
  };
  if (!object.is_object()) throw invalid("not an object");
  std::size_t present = 0;
  for (const auto& [key, type] : keys) {
    const auto found = object.find(key);
    // clang 14 (the fuzz build) cannot capture a structured binding, hence the copy.
    const char* const wanted = key;
    const bool is_optional =
        std::find_if(optional.begin(), optional.end(), [wanted](const char* name) {
          return std::strcmp(name, wanted) == 0;
        }) != optional.end();
    if (found == object.end()) {
      if (is_optional) continue;
      throw invalid(std::string(key) + " is missing");
    }
    const bool unsigned_ok = type == json::value_t::number_unsigned && found->is_number_unsigned();
    if (found->type() != type && !unsigned_ok)
      throw invalid(std::string(key) + " has the wrong type");
    ++present;
  }
  if (present != object.size()) throw invalid("an unknown field");
}

std::vector<std::string> strings_of(const json& array) {
  std::vector<std::string> out;
  for (const auto& item : array) {
    if (!item.is_string())
      throw Error(ErrorCode::SANDBOX_REQUEST_INVALID, "a list holds a non-string");
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<std::filesystem::path> absolute_paths_of(const json& array) {
  std::vector<std::filesystem::path> out;
  for (const auto& text : strings_of(array)) {
    std::filesystem::path path(text);
    if (!path.is_absolute()) throw Error(ErrorCode::SANDBOX_REQUEST_INVALID, "a relative path");
    out.push_back(std::move(path));
  }
  return out;
}

Spec spec_of(const json& request) {
  using T = json::value_t;
  require_shape(request,
                {{"argv", T::array},
                 {"environment", T::array},
                 {"working_directory", T::string},
                 {"timeout_ms", T::number_unsigned},
                 {"read_only", T::array},
                 {"writable", T::array},
                 {"hidden", T::array},
                 {"limits", T::object},
                 {"stdin", T::string}},
                {"stdin"});
  const json& limits = request.at("limits");
  require_shape(limits, {{"memory_bytes", T::number_unsigned},
                         {"file_size_bytes", T::number_unsigned},
                         {"open_files", T::number_unsigned},
                         {"cpu_seconds", T::number_unsigned},
                         {"processes", T::number_unsigned},
                         {"tmp_bytes", T::number_unsigned},
                         {"disk_bytes", T::number_unsigned}});
  Spec spec;
  spec.argv = strings_of(request.at("argv"));
  if (spec.argv.empty() || !std::filesystem::path(spec.argv.front()).is_absolute()) {
    throw Error(ErrorCode::SANDBOX_REQUEST_INVALID, "argv[0] is not an absolute path");
  }
  spec.environment = strings_of(request.at("environment"));
  spec.working_directory = request.at("working_directory").get<std::string>();
  spec.timeout = std::chrono::milliseconds(request.at("timeout_ms").get<std::uint64_t>());
  if (request.contains("stdin")) spec.stdin_data = request.at("stdin").get<std::string>();
  Sandbox box;
  box.read_only = absolute_paths_of(request.at("read_only"));
  box.writable = absolute_paths_of(request.at("writable"));
  box.hidden = absolute_paths_of(request.at("hidden"));
  const auto limit = [&limits](const char* name) { return limits.at(name).get<std::uint64_t>(); };
  box.limits = {limit("memory_bytes"), limit("file_size_bytes"), limit("open_files"),
                limit("cpu_seconds"),  limit("processes"),       limit("tmp_bytes"),
                limit("disk_bytes")};
  spec.sandbox = std::move(box);
  return spec;
}

// The last kRemoteOutputBytes of stdout and stderr, interleaved as they arrived.
class Tail {
 public:
  void add(std::string_view chunk) {
    text_.append(chunk);
    if (text_.size() > 2 * kRemoteOutputBytes) text_.erase(0, text_.size() - kRemoteOutputBytes);
  }
  std::string take() {
    if (text_.size() > kRemoteOutputBytes) text_.erase(0, text_.size() - kRemoteOutputBytes);
    return std::move(text_);
  }

 private:
  std::string text_;
};

json serve(const std::string& request_text) {
  Spec spec = spec_of(parse_json(request_text));
  Tail tail;
  spec.on_stdout = [&tail](std::string_view chunk) { tail.add(chunk); };
  spec.on_stderr = [&tail](std::string_view chunk) { tail.add(chunk); };
  try {
    const Outcome outcome = run(spec);
    json answer = {{"exit_code", outcome.exit_code},
                   {"timed_out", outcome.timed_out},
                   {"elapsed_us",
                    std::chrono::duration_cast<std::chrono::microseconds>(outcome.elapsed).count()},
                   {"output", bounded_text(tail.take(), kRemoteOutputBytes)}};
    if (outcome.exceeded) answer["exceeded"] = bound_name(*outcome.exceeded);
    return answer;
  } catch (const std::system_error& error) {
    return {{"start_error", {{"errno", error.code().value()}, {"what", error.what()}}}};
  }
}

}  // namespace

Outcome run_through(const std::filesystem::path& socket_path, const Spec& spec) {
  if (!spec.sandbox || !spec.sandbox->network.empty() || !spec.sandbox->served.empty()) {
    throw Error(ErrorCode::SANDBOX_REQUEST_INVALID, "only a sandbox without network is served");
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = socket_path.string();
  if (path.size() >= sizeof address.sun_path) throw unavailable("socket path too long");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throw unavailable(std::string("socket: ") + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    throw unavailable(path + ": " + std::strerror(errno));
  }
  json answer;
  try {
    send_all(fd.get(), spec_json(spec).dump());
    ::shutdown(fd.get(), SHUT_WR);
    const auto wait = spec.timeout.count() > 0 ? Clock::duration(spec.timeout) + kAnswerGrace
                                               : Clock::duration(std::chrono::hours(24));
    answer = parse_json(read_to_end(fd.get(), kMaxAnswerBytes, wait));
  } catch (const std::system_error& error) {
    throw unavailable(path + ": " + error.code().message());
  } catch (const Error& error) {
    throw unavailable(path + ": the answer is " + error.code());
  }
  if (answer.is_object() && answer.contains("error") && answer["error"].is_string()) {
    const ErrorInfo* refused = find_error(answer["error"].get<std::string>());
    throw Error(refused != nullptr ? refused->code : ErrorCode::SANDBOX_SERVICE_UNAVAILABLE,
                answer.value("detail", ""));
  }
  if (answer.is_object() && answer.contains("start_error")) {
    const json& start = answer["start_error"];
    throw std::system_error(start.value("errno", EIO), std::generic_category(),
                            start.value("what", "the sandbox service could not start the child"));
  }
  try {
    Outcome outcome;
    outcome.exit_code = answer.at("exit_code").get<int>();
    outcome.timed_out = answer.at("timed_out").get<bool>();
    outcome.elapsed = std::chrono::microseconds(answer.at("elapsed_us").get<std::int64_t>());
    if (answer.contains("exceeded")) {
      const auto& name = answer.at("exceeded").get_ref<const std::string&>();
      for (const auto bound : kBounds) {
        if (bound_name(bound) == name) outcome.exceeded = bound;
      }
      if (!outcome.exceeded) throw unavailable(path + ": the answer names an unknown bound");
    }
    const std::string& output = answer.at("output").get_ref<const std::string&>();
    if (spec.on_stdout && !output.empty()) spec.on_stdout(output);
    return outcome;
  } catch (const json::exception&) {
    throw unavailable(path + ": the answer is not an outcome");
  }
}

void serve_connection(int in, int out) {
  json answer;
  try {
    answer = serve(read_to_end(in, kMaxRequestBytes, kRequestReadTimeout));
  } catch (const Error& error) {
    answer = {{"error", error.code()}, {"detail", bounded_text(error.detail(), 512)}};
  } catch (const std::system_error& error) {
    answer = {{"error", "SANDBOX_REQUEST_INVALID"}, {"detail", error.code().message()}};
  }
  send_all(out, answer.dump());
}

}  // namespace aios::process
