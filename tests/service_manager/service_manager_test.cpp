// Type=notify as systemd sees it: each daemon sends READY=1 only once it serves, pings the
// watchdog while healthy when WATCHDOG_USEC asks for it, and on SIGTERM sends STOPPING=1,
// drains and exits 0. The test plays systemd's part: it owns the NOTIFY_SOCKET datagram socket.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "aios/http.hpp"
#include "rebind/rebind_daemon.hpp"
#include "worker/worker_fixture.hpp"

namespace aios::worker_test {
namespace {

using namespace std::chrono_literals;

// A bound AF_UNIX datagram socket that collects sd_notify messages.
class NotifySocket {
 public:
  NotifySocket() : dir_("aios-notify"), path_((dir_ / "notify.sock").string()) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof(address.sun_path) - 1);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      throw std::runtime_error("cannot bind " + path_);
    }
    const timeval tick{0, 100000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof tick);
  }
  ~NotifySocket() { ::close(fd_); }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  // The environment systemd gives a Type=notify service with WatchdogSec=400ms.
  std::vector<std::string> env() const {
    return {"NOTIFY_SOCKET=" + path_, "WATCHDOG_USEC=400000"};
  }

  // Receives until `count` messages containing `needle` have arrived (true) or `timeout` ends.
  bool wait_for(std::string_view needle, std::size_t count = 1,
                std::chrono::milliseconds timeout = 15s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (matching(needle) < count) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      char buffer[4096];
      const auto n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n > 0) messages_.emplace_back(buffer, static_cast<std::size_t>(n));
    }
    return true;
  }

  std::size_t matching(std::string_view needle) const {
    return static_cast<std::size_t>(
        std::count_if(messages_.begin(), messages_.end(), [needle](const std::string& message) {
          return message.find(needle) != std::string::npos;
        }));
  }

  // The first message containing `needle` ("" when none).
  std::string first(std::string_view needle) const {
    for (const auto& message : messages_) {
      if (message.find(needle) != std::string::npos) return message;
    }
    return "";
  }

 private:
  test::ScopedTempDir dir_;
  std::string path_;
  int fd_ = -1;
  std::vector<std::string> messages_;
};

class ServiceManagerTest : public WorkerTest {
 protected:
  test::SchedulerConfig config() const override {
    auto result = WorkerTest::config();
    result.env = scheduler_socket_.env();
    return result;
  }

  static bool answers_health(std::uint16_t port) {
    http::Connection connection("127.0.0.1", port, 2s);
    return connection.request("GET", "/health", "", "").status == 200;
  }

  // Watchdog pings keep coming, then SIGTERM brings STOPPING=1 and a clean exit.
  static void expect_watchdog_then_clean_stop(NotifySocket& socket, test::Daemon& daemon) {
    EXPECT_TRUE(socket.wait_for("WATCHDOG=1", 3)) << daemon.log();
    EXPECT_EQ(socket.matching("STOPPING=1"), 0U);
    const auto status = daemon.stop();
    EXPECT_TRUE(status.exited_with(0)) << status.describe();
    EXPECT_TRUE(socket.wait_for("STOPPING=1", 1, 2s));
  }

  mutable NotifySocket scheduler_socket_;
};

// Given the Task API's listener at its connection cap (1,024 idle connections from two
// loopback addresses, 512 each), the scheduler should keep pinging its watchdog: a flood is not
// a hang, and a restart would only hand the flood the port again. A new connection takes the
// place of a silent one (the flood has no token), so the listener answers throughout.
TEST_F(ServiceManagerTest, SchedulerKeepsItsWatchdogWhileItsListenerIsFull) {
  ASSERT_TRUE(scheduler_socket_.wait_for("READY=1")) << scheduler().process().log();
  std::vector<int> flood;
  for (const char* source : {"127.0.0.1", "127.0.0.2"}) {
    for (int i = 0; i < 512; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in from{};
      from.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &from.sin_addr);
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(port());
      ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
      ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from), 0) << source;
      ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0) << source;
      flood.push_back(fd);
    }
  }
  // Full once the flood is accepted: a new connection is answered all the same.
  std::this_thread::sleep_for(500ms);
  http::Connection probe("127.0.0.1", port(), 2s);
  EXPECT_EQ(probe.request("GET", "/health", "", "").status, 200);
  const auto before = scheduler_socket_.matching("WATCHDOG=1");
  EXPECT_TRUE(scheduler_socket_.wait_for("WATCHDOG=1", before + 4, 5s))
      << scheduler().process().log();
  for (const int fd : flood) ::close(fd);
  EXPECT_TRUE(scheduler().process().running());
}

TEST_F(ServiceManagerTest, SchedulerIsReadyOnceBothListenersServe) {
  ASSERT_TRUE(scheduler_socket_.wait_for("READY=1")) << scheduler().process().log();
  const auto ready = scheduler_socket_.first("READY=1");
  EXPECT_NE(ready.find("STATUS=serving the Task API on 127.0.0.1:" + std::to_string(port())),
            std::string::npos)
      << ready;
  EXPECT_NE(ready.find(":" + std::to_string(scheduler().bridge_port())), std::string::npos)
      << ready;
  EXPECT_TRUE(answers_health(port()));
  EXPECT_TRUE(answers_health(scheduler().bridge_port()));
  expect_watchdog_then_clean_stop(scheduler_socket_, scheduler().process());
}

TEST_F(ServiceManagerTest, ExecutorIsReadyOnceItWatchesTheExchange) {
  NotifySocket socket;
  start_executor("hermes", 0, socket.env());
  ASSERT_TRUE(socket.wait_for("READY=1")) << executor_->log();
  EXPECT_NE(socket.first("READY=1").find("STATUS=watching " + exchange().string() + "/requests"),
            std::string::npos);
  expect_watchdog_then_clean_stop(socket, *executor_);
}

TEST_F(ServiceManagerTest, WorkerIsReadyOnceRegistered) {
  NotifySocket socket;
  auto& worker = make_worker("notify", {"git.read"}, "source_capture", false);
  worker.options().env = socket.env();
  worker.start();
  ASSERT_TRUE(socket.wait_for("READY=1")) << worker.log();
  // The ready log line, written once registered, comes before READY=1.
  ASSERT_TRUE(worker.find_event("WORKER_READY").has_value());
  EXPECT_NE(socket.first("READY=1").find("STATUS=worker notify polling"), std::string::npos);
  expect_watchdog_then_clean_stop(socket, worker);
}

TEST_F(ServiceManagerTest, RebindDaemonIsReadyOnceItServes) {
  NotifySocket socket;
  auto options = rebind_test::rebind_options(
      {.store = scheduler().store_location(),
       .token_file = dir() / "control_token",
       .bridge_url = "http://127.0.0.1:" + std::to_string(scheduler().bridge_port())});
  const auto notify_env = socket.env();
  options.env.insert(options.env.end(), notify_env.begin(), notify_env.end());
  test::Daemon rebind(options, dir(), "rebind");
  const auto rebind_port = rebind.start();
  ASSERT_TRUE(socket.wait_for("READY=1")) << rebind.log();
  EXPECT_NE(socket.first("READY=1").find(":" + std::to_string(rebind_port)), std::string::npos);
  EXPECT_TRUE(answers_health(rebind_port));
  expect_watchdog_then_clean_stop(socket, rebind);
}

}  // namespace
}  // namespace aios::worker_test
