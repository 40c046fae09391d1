// process::run_through and process::serve_connection over a real Unix socket: a sandboxed run
// handed to the service comes back as run() would return it, and the service refuses anything
// that is not one sandboxed run without network, with a code.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "aios/error.hpp"
#include "aios/process.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"

namespace aios::process {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

sockaddr_un address_of(const fs::path& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.string().size() + 1);
  return address;
}

// A service that answers each connection in its own thread, as one socket-activated instance
// per connection would.
class Service {
 public:
  explicit Service(const fs::path& socket) {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const auto address = address_of(socket);
    if (::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 8) != 0) {
      throw std::runtime_error("bind");
    }
    thread_ = std::thread([this] {
      for (;;) {
        const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (connection < 0) return;
        serve_connection(connection, connection);
        ::close(connection);
      }
    });
  }
  ~Service() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

 private:
  int listener_ = -1;
  std::thread thread_;
};

class SandboxServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "run");
    fs::create_directories(dir_ / "secret");
    aios::test::write_text_file(dir_ / "secret" / "key", "SECRET-KEY");
  }
  Spec shell(const std::string& script) const {
    Spec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.environment = {"PATH=/usr/bin:/bin"};
    spec.working_directory = dir_ / "run";
    spec.timeout = std::chrono::seconds(30);
    Sandbox sandbox;
    sandbox.writable = {dir_ / "run"};
    sandbox.hidden = {dir_ / "secret"};
    spec.sandbox = sandbox;
    return spec;
  }
  // Writes `request` as it is and returns the service's answer.
  json raw(const std::string& request) const {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const auto address = address_of(socket_);
    EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    std::string_view data = request;
    while (!data.empty()) {
      const ssize_t sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (sent <= 0) break;
      data.remove_prefix(static_cast<std::size_t>(sent));
    }
    ::shutdown(fd, SHUT_WR);
    std::string answer;
    char buffer[4096];
    ssize_t got = 0;
    while ((got = ::read(fd, buffer, sizeof buffer)) > 0) {
      answer.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fd);
    return json::parse(answer, nullptr, false);
  }
  aios::test::ScopedTempDir dir_{"aios-sandbox-service"};
  fs::path socket_ = dir_ / "sandbox.sock";
  Service service_{socket_};
};

// Given a sandboxed shell that writes to both streams, reads a hidden file and exits 3, the
// caller should get exit 3, both streams and a refused read, as run() gives them.
TEST_F(SandboxServiceTest, ReturnsTheOutcomeOfTheSandboxedRun) {
  Spec spec = shell("echo out; echo err >&2; cat " + (dir_ / "secret" / "key").string() +
                    " || echo hidden; echo made > made; exit 3");
  std::string output;
  spec.on_stdout = [&output](std::string_view chunk) { output.append(chunk); };
  const Outcome outcome = run_through(socket_, spec);
  EXPECT_EQ(outcome.exit_code, 3) << output;
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_NE(output.find("out"), std::string::npos) << output;
  EXPECT_NE(output.find("err"), std::string::npos) << output;
  EXPECT_NE(output.find("hidden"), std::string::npos) << output;
  EXPECT_EQ(output.find("SECRET-KEY"), std::string::npos) << output;
  EXPECT_EQ(aios::test::read_text_file(dir_ / "run" / "made"), "made\n");
}

// Given a child that outlives its timeout, the service should kill it and say so; given one
// that prints more than the bound, only its last kRemoteOutputBytes should come back.
TEST_F(SandboxServiceTest, KeepsTheTimeoutAndBoundsTheOutput) {
  Spec slow = shell("sleep 30");
  slow.timeout = std::chrono::milliseconds(300);
  const Outcome late = run_through(socket_, slow);
  EXPECT_TRUE(late.timed_out);
  EXPECT_LT(late.elapsed, std::chrono::seconds(20));

  Spec loud = shell("head -c 300000 /dev/zero | tr '\\0' a; echo END");
  std::string output;
  loud.on_stdout = [&output](std::string_view chunk) { output.append(chunk); };
  EXPECT_EQ(run_through(socket_, loud).exit_code, 0);
  EXPECT_LE(output.size(), kRemoteOutputBytes);
  EXPECT_GT(output.size(), kRemoteOutputBytes / 2);
  EXPECT_EQ(output.substr(output.size() - 4), "END\n");
}

// Given a child that cannot be started, the caller should get the std::system_error run()
// throws, not an outcome.
TEST_F(SandboxServiceTest, AChildThatCannotStartThrowsAsRunDoes) {
  Spec spec = shell("");
  spec.argv = {"/nonexistent/aios-child"};
  EXPECT_THROW(run_through(socket_, spec), std::system_error);
}

// Given a spec without a sandbox, or one with network, run_through should refuse it before
// anything is sent; given no service on the socket, SANDBOX_SERVICE_UNAVAILABLE.
TEST_F(SandboxServiceTest, RefusesWhatItCannotHandOverAndAMissingService) {
  Spec bare = shell("true");
  bare.sandbox.reset();
  EXPECT_EQ(aios::test::code_of([&] { run_through(socket_, bare); }), "SANDBOX_REQUEST_INVALID");
  Spec networked = shell("true");
  networked.sandbox->network = {{"127.0.0.1", 80}};
  EXPECT_EQ(aios::test::code_of([&] { run_through(socket_, networked); }),
            "SANDBOX_REQUEST_INVALID");
  EXPECT_EQ(aios::test::code_of([&] { run_through(dir_ / "absent.sock", shell("true")); }),
            "SANDBOX_SERVICE_UNAVAILABLE");
}

// Given requests that are not one sandboxed run (not JSON, an unknown field, a missing sandbox
// field, a relative executable or path, nesting past the bound, more than 1 MiB), the service
// should answer each with a code and run nothing.
TEST_F(SandboxServiceTest, RefusesEveryMalformedRequestWithACode) {
  const json good = {{"argv", {"/bin/sh", "-c", "echo ran > " + (dir_ / "run" / "ran").string()}},
                     {"environment", json::array()},
                     {"working_directory", (dir_ / "run").string()},
                     {"timeout_ms", 5000},
                     {"read_only", json::array()},
                     {"writable", {(dir_ / "run").string()}},
                     {"hidden", json::array()},
                     {"limits",
                      {{"memory_bytes", 1ULL << 30},
                       {"file_size_bytes", 1ULL << 20},
                       {"open_files", 64},
                       {"cpu_seconds", 10},
                       {"processes", 64},
                       {"tmp_bytes", 1ULL << 20},
                       {"disk_bytes", 1ULL << 20}}}};
  const auto code_for = [this](const std::string& request) {
    return raw(request).value("error", "none");
  };
  auto unknown = good;
  unknown["network"] = json::array({"127.0.0.1:80"});
  auto missing = good;
  missing.erase("hidden");
  auto relative = good;
  relative["argv"][0] = "sh";
  auto relative_path = good;
  relative_path["writable"] = {"run"};
  auto negative = good;
  negative["limits"]["processes"] = -1;
  auto wrong_type = good;
  wrong_type["timeout_ms"] = "5000";
  EXPECT_EQ(code_for("not json"), "SANDBOX_REQUEST_INVALID");
  EXPECT_EQ(code_for(unknown.dump()), "SANDBOX_REQUEST_INVALID");
  EXPECT_EQ(code_for(missing.dump()), "SANDBOX_REQUEST_INVALID");
  EXPECT_EQ(code_for(relative.dump()), "SANDBOX_REQUEST_INVALID");
  EXPECT_EQ(code_for(relative_path.dump()), "SANDBOX_REQUEST_INVALID");
  EXPECT_EQ(code_for(negative.dump()), "SANDBOX_REQUEST_INVALID");
  EXPECT_EQ(code_for(wrong_type.dump()), "SANDBOX_REQUEST_INVALID");
  EXPECT_EQ(code_for(std::string(100000, '[') + std::string(100000, ']')), "JSON_NESTING_TOO_DEEP");
  EXPECT_EQ(code_for(std::string(2 << 20, ' ')), "SANDBOX_REQUEST_INVALID");
  EXPECT_FALSE(fs::exists(dir_ / "run" / "ran"));
  // The same request, well formed, does run: the refusals above were about the request.
  EXPECT_EQ(raw(good.dump()).value("exit_code", -1), 0);
  EXPECT_TRUE(fs::exists(dir_ / "run" / "ran"));
}

}  // namespace
}  // namespace aios::process
