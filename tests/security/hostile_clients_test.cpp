// A hostile-client battery against each listener (the Task API, the Bridge, the rebind
// service): malformed, smuggled, oversized and deeply nested requests, a slow client and a
// connection flood, all while valid traffic creates, claims and completes tasks. Afterwards every
// daemon still answers, no request got a 5xx but 503, the database passes integrity_check and
// every acknowledged result is stored.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "rebind/rebind_daemon.hpp"
#include "support/rounds.hpp"
#include "support/store_rows.hpp"
#include "taskapi/client.hpp"

namespace aios::security_test {
namespace {

using namespace std::chrono_literals;
using taskapi_test::ApiClient;
using taskapi_test::Json;

// A raw TCP connection to 127.0.0.1:`port` (from the loopback address `from`, as any local user
// may bind one): whatever bytes a hostile client chooses.
class Raw {
 public:
  explicit Raw(std::uint16_t port, const char* from = nullptr)
      : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    const timeval tick{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof tick);
    if (from != nullptr) {
      sockaddr_in source{};
      source.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &source.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&source), sizeof source) != 0) return;
    }
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
  }
  // Reads until a whole answer to one request (head and body) has arrived: true.
  bool answered() {
    std::string text;
    char buffer[4096];
    while (text.find("\r\n\r\n") == std::string::npos || text.back() != '}') {
      const auto n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) return false;
      text.append(buffer, static_cast<std::size_t>(n));
    }
    return true;
  }
  ~Raw() { ::close(fd_); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Every status line the server wrote before it closed or went quiet.
  std::vector<int> statuses() {
    std::string text;
    char buffer[65536];
    for (;;) {
      const auto n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      text.append(buffer, static_cast<std::size_t>(n));
    }
    std::vector<int> found;
    for (auto at = text.find("HTTP/1.1 "); at != std::string::npos;
         at = text.find("HTTP/1.1 ", at + 1)) {
      found.push_back(std::atoi(text.c_str() + at + 9));
    }
    return found;
  }
  bool connected() const { return connected_; }
  int fd() const { return fd_; }

 private:
  int fd_;
  bool connected_ = false;
};

// What hostile clients send, given the owner's token (an authorized client can be hostile too).
std::vector<std::pair<std::string, std::string>> battery(const std::string& token) {
  const std::string auth = "Authorization: Bearer " + token + "\r\n";
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  std::string pipelined;
  for (int i = 0; i < 100; ++i) pipelined += "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n";
  return {
      {"garbage", "GARBAGE\r\n\r\n"},
      {"binary", std::string("\0\0\0\xff\xfe\r\n\r\n", 9)},
      {"unknown version", "GET /health HTTP/9.9\r\nHost: localhost\r\n\r\n"},
      {"header past the limit", "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Fill: " +
                                    std::string(70000, 'x') + "\r\n\r\n"},
      {"URL past the limit",
       "GET /" + std::string(100000, 'a') + " HTTP/1.1\r\nHost: localhost\r\n\r\n"},
      {"negative length",
       "POST /v1/tasks HTTP/1.1\r\nHost: localhost\r\n" + auth + "Content-Length: -5\r\n\r\n"},
      {"huge length", "POST /v1/tasks HTTP/1.1\r\nHost: localhost\r\n" + auth +
                          "Content-Length: 99999999999999999999\r\n\r\n"},
      {"smuggled", "POST /v1/tasks HTTP/1.1\r\nHost: localhost\r\n" + auth +
                       "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
      {"bad chunk", "POST /v1/tasks HTTP/1.1\r\nHost: localhost\r\n" + auth +
                        "Transfer-Encoding: chunked\r\n\r\nZZZ\r\n"},
      {"body past the limit", "POST /v1/tasks HTTP/1.1\r\nHost: localhost\r\n" + auth +
                                  "Content-Length: 2000000\r\n\r\n" + std::string(2000000, '{')},
      {"nested", "POST /v1/tasks HTTP/1.1\r\nHost: localhost\r\n" + auth +
                     "Content-Length: " + std::to_string(deep.size()) + "\r\n\r\n" + deep},
      {"traversal",
       "GET /v1/tasks/../../etc/passwd HTTP/1.1\r\nHost: localhost\r\n" + auth + "\r\n"},
      {"not json",
       "POST /v1/tasks HTTP/1.1\r\nHost: localhost\r\n" + auth + "Content-Length: 5\r\n\r\n{{{{{"},
      {"pipelined", pipelined},
  };
}

class HostileClientsTest : public taskapi_test::SchedulerTest {};

TEST_F(HostileClientsTest, EveryDaemonSurvivesTheBatteryWithoutAFiveHundredOrALoss) {
  const auto token_file = scheduler().dir().path() / "rebind-control.token";
  test::write_text_file(token_file, scheduler().control_token() + "\n");
  test::Daemon rebind(
      rebind_test::rebind_options(
          {.store = scheduler().store_location(),
           .token_file = token_file,
           .bridge_url = "http://127.0.0.1:" + std::to_string(scheduler().bridge_port())}),
      scheduler().dir().path(), "rebind");
  const std::uint16_t rebind_port = rebind.start();
  const std::map<std::string, std::uint16_t> ports = {
      {"Task API", port()}, {"Bridge", scheduler().bridge_port()}, {"rebind", rebind_port}};

  // Valid traffic the whole time: create, claim, submit; each acknowledged result is kept.
  const std::string token = create_agent("agent-load", {"git.read"});
  {
    ApiClient agent = client(token);
    register_worker(agent, "worker-load", {"git.read"}, {"source_capture"}, 64);
  }
  std::atomic<bool> done{false};
  std::mutex mutex;
  std::map<std::string, Json> acknowledged;
  std::vector<int> load_statuses;
  std::thread load([&] {
    ApiClient owner_client(port(), scheduler().control_token());
    ApiClient agent(port(), token);
    for (int i = 0; !done.load(); ++i) {
      const std::string id = "task-load-" + std::to_string(i);
      const auto created = owner_client.post("/v1/tasks", taskapi_test::source_capture_task(id));
      const auto lease =
          agent.post("/v1/tasks/" + id + "/claim",
                     {{"worker_id", "worker-load"},
                      {"expected_revision", created.body.value("revision", 0)},
                      {"execution_digest", created.body.value("execution_digest", "")}});
      const Json result = {{"summary", id}};
      const auto submitted =
          agent.post("/v1/tasks/" + id + "/result",
                     taskapi_test::result_body(lease.body, lease.body.value("execution_digest", ""),
                                               id, result));
      const std::lock_guard lock(mutex);
      load_statuses.insert(load_statuses.end(), {created.status, lease.status, submitted.status});
      if (submitted.status == 201) acknowledged[id] = result;
    }
  });

  for (const auto& [name, listener] : ports) {
    SCOPED_TRACE(name);
    for (const auto& [label, bytes] : battery(scheduler().control_token())) {
      Raw raw(listener);
      ASSERT_TRUE(raw.connected()) << label;
      raw.send(bytes);
      for (const int status : raw.statuses()) {
        EXPECT_TRUE(status < 500 || status == 503) << label << ": " << status;
      }
    }
    // A slow client trickling a header keeps its own connection, nobody else's.
    Raw slow(listener);
    std::size_t before = 0;
    {
      const std::lock_guard lock(mutex);
      before = acknowledged.size();
    }
    for (const char c : std::string("GET /health HTTP/1.1\r\nHost: sl")) {
      slow.send(std::string(1, c));
      std::this_thread::sleep_for(20ms);
    }
    {
      const std::lock_guard lock(mutex);
      EXPECT_GT(acknowledged.size(), before) << "valid traffic stalled behind a slow client";
    }
    // A flood of silent connections past the per-peer cap: each new one takes the place of the
    // one that waited longest, and a caller after them is answered.
    std::vector<std::unique_ptr<Raw>> flood;
    for (int i = 0; i < 600; ++i) flood.push_back(std::make_unique<Raw>(listener));
    std::this_thread::sleep_for(200ms);
    {
      Raw extra(listener);
      extra.send("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
      const auto statuses = extra.statuses();
      ASSERT_FALSE(statuses.empty());
      EXPECT_EQ(statuses.front(), 200);
    }
    flood.clear();
  }
  done = true;
  load.join();

  for (const auto& [name, listener] : ports) {
    bool answered = false;
    for (int attempt = 0; attempt < 50 && !answered; ++attempt) {
      Raw health(listener);
      health.send("GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
      const auto statuses = health.statuses();
      answered = !statuses.empty() && statuses.front() == 200;
      if (!answered) std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(answered) << name << " no longer answers /health";
  }
  EXPECT_TRUE(scheduler().process().running());
  EXPECT_TRUE(rebind.running());
  for (const int status : load_statuses) EXPECT_TRUE(status < 500 || status == 503) << status;
  EXPECT_GT(acknowledged.size(), 0U);
  for (const auto& [id, result] : acknowledged) {
    EXPECT_EQ(task(id).at("result"), result) << id;
  }
  EXPECT_EQ(test::integrity_of(scheduler()), "ok");
}

// Given 1,100 keep-alive connections without a token from 127.0.0.2 and 127.0.0.3 (more than
// the Task API's 1,024), each asking GET /health and then holding its connection, the owner's
// and an agent's requests on new connections should be answered, each within a second.
TEST_F(HostileClientsTest, AFloodOfUnauthenticatedConnectionsLeavesTheOwnerAndAgentsAnswered) {
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  ASSERT_GE(files.rlim_cur, 2400U) << "the flood needs descriptors";
  const std::string token = create_agent("agent-flooded", {"git.read"});
  std::vector<std::unique_ptr<Raw>> flood;
  for (int i = 0; i < 1100; ++i) {
    auto raw = std::make_unique<Raw>(port(), i % 2 == 0 ? "127.0.0.2" : "127.0.0.3");
    if (raw->connected() && raw->send("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")) {
      flood.push_back(std::move(raw));
    }
  }
  int answered = 0;
  for (auto& raw : flood) answered += raw->answered() ? 1 : 0;
  EXPECT_GT(answered, 1000);

  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    ApiClient owner(port(), scheduler().control_token());
    EXPECT_EQ(owner.get("/v1/status").status, 200);
    ApiClient agent(port(), token);
    EXPECT_EQ(agent
                  .post("/v1/workers/register", {{"worker_id", "worker-flooded"},
                                                 {"capabilities", {"git.read"}},
                                                 {"allowed_adapters", {"source_capture"}},
                                                 {"max_concurrency", 1}})
                  .status,
              200);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "round " << round;
    // The flood comes back: every one of its connections asks again.
    for (auto& raw : flood) raw->send("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
  }
  EXPECT_TRUE(scheduler().process().running());
}

// The resident set of `pid` in KiB (VmRSS), or 0.
long resident_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// Given an agent token of least privilege sending 60 governed-commit bodies of 17 MB to the
// Bridge at once, each held one byte short, the bodies past the budget should be answered 503
// HTTP_BODY_BUDGET_EXHAUSTED unread, and the scheduler should stay under 256 MiB resident.
TEST_F(HostileClientsTest, ABodyFloodIsBoundedByTheBudgetNotTheDaemonsMemory) {
  const std::string token = create_agent("agent-body-flood", {"git.read"});
  const std::size_t size = 17 * 1000 * 1000;
  const std::string head =
      "POST /v2/governed-commits HTTP/1.1\r\nHost: localhost\r\n"
      "Authorization: Bearer " +
      token + "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(size) +
      "\r\n\r\n";
  const std::string body(size - 1, ' ');
  std::vector<std::unique_ptr<Raw>> held;
  int refused = 0;
  for (int i = 0; i < 60; ++i) {
    auto raw = std::make_unique<Raw>(scheduler().bridge_port());
    ASSERT_TRUE(raw->connected() && raw->send(head));
    std::this_thread::sleep_for(20ms);  // time for a refusal to arrive before the body
    char first[64] = {};
    if (::recv(raw->fd(), first, sizeof first - 1, MSG_DONTWAIT) > 0) {
      EXPECT_EQ(std::string(first).rfind("HTTP/1.1 503", 0), 0U) << first;
      ++refused;
      continue;
    }
    ASSERT_TRUE(raw->send(body));
    held.push_back(std::move(raw));
  }
  EXPECT_GE(refused, 50);
  // Under AddressSanitizer the resident size is its shadow and quarantine more than ours: the
  // release pass holds the bound.
  if (!test::kSanitized) {
    EXPECT_LT(resident_kib(scheduler().process().pid()), 256 * 1024);
  }
  ApiClient owner(port(), scheduler().control_token());
  EXPECT_EQ(owner.get("/v1/status").status, 200);
}

}  // namespace
}  // namespace aios::security_test
