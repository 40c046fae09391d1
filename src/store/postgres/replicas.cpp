#include "store/postgres/replicas.hpp"

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <thread>

#include "aios/error.hpp"
#include "aios/log.hpp"
#include "store/postgres/connection.hpp"

namespace aios::store::pg {
namespace {

// The advisory lock key of the lead (the migration lock is 7426001).
constexpr const char* kTryLead = "SELECT pg_try_advisory_lock(7426002)";
// How long the listener waits per poll, so it sees a stop promptly; and after a lost session.
constexpr auto kListenPoll = std::chrono::milliseconds(200);
constexpr auto kReconnectAfter = std::chrono::seconds(1);

// Keepalives on both ends of the lead's session, so a host that vanishes from the network loses
// the lead in about 11 s (the server drops the session and with it the lock) and notices it
// itself as soon (its check fails) rather than after the kernel's two hours.
constexpr const char* kServerKeepalives =
    "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3";

Keywords with_client_keepalives(Keywords keywords) {
  for (const auto& [name, value] :
       std::initializer_list<std::pair<const char*, const char*>>{{"keepalives", "1"},
                                                                  {"keepalives_idle", "5"},
                                                                  {"keepalives_interval", "2"},
                                                                  {"keepalives_count", "3"},
                                                                  {"tcp_user_timeout", "11000"}}) {
    keywords.emplace_back(name, value);
  }
  return keywords;
}

class SessionLeadership final : public Leadership {
 public:
  explicit SessionLeadership(Keywords keywords)
      : keywords_(with_client_keepalives(std::move(keywords))) {}

  bool refresh() override {
    try {
      if (!session_) {
        session_ = std::make_unique<Connection>(keywords_);
        session_->exec(kServerKeepalives);
      }
      // A session-level lock lasts as long as the session: a live session still holds it.
      if (held_) {
        session_->exec("SELECT 1");
      } else {
        held_ = session_->exec(kTryLead).text(0, 0) == "t";
      }
    } catch (const Error& error) {
      if (held_) log::warn("STORE_LEAD_SESSION_LOST", {{"error", error.code()}});
      session_.reset();
      held_ = false;
    }
    return held_;
  }

 private:
  Keywords keywords_;
  std::unique_ptr<Connection> session_;
  bool held_ = false;
};

class QueueListener final : public Subscription {
 public:
  QueueListener(Keywords keywords, std::string own, std::function<void()> heard)
      : keywords_(std::move(keywords)),
        own_(std::move(own)),
        heard_(std::move(heard)),
        thread_([this] { run(); }) {}
  ~QueueListener() override {
    stopping_ = true;
    thread_.join();
  }
  QueueListener(const QueueListener&) = delete;
  QueueListener& operator=(const QueueListener&) = delete;

 private:
  void run() {
    bool warned = false;
    while (!stopping_) {
      try {
        Connection session(keywords_);
        session.exec(std::string("LISTEN ") + kQueueChannel);
        if (warned) log::info("STORE_LISTENING_AGAIN", {{"channel", kQueueChannel}});
        warned = false;
        heard_();  // what was announced while no session listened
        while (!stopping_) {
          if (session.wait_notifications(kListenPoll, own_) > 0) heard_();
        }
      } catch (const Error& error) {
        if (!warned) log::warn("STORE_LISTEN_LOST", {{"error", error.code()}});
        warned = true;
        for (auto waited = std::chrono::milliseconds(0); !stopping_ && waited < kReconnectAfter;
             waited += kListenPoll) {
          std::this_thread::sleep_for(kListenPoll);
        }
      }
    }
  }

  Keywords keywords_;
  std::string own_;
  std::function<void()> heard_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;  // last: started once the rest is in place
};

}  // namespace

std::unique_ptr<Leadership> leadership(Keywords keywords) {
  return std::make_unique<SessionLeadership>(std::move(keywords));
}

std::unique_ptr<Subscription> listen_queue(Keywords keywords, std::string own,
                                           std::function<void()> heard) {
  return std::make_unique<QueueListener>(std::move(keywords), std::move(own), std::move(heard));
}

}  // namespace aios::store::pg
