#pragma once
// A fresh PostgreSQL database per test, on the throwaway server scripts/test starts
// (scripts/postgres-for-tests) and names in AIOS_TEST_POSTGRES_URL (its admin URL). Without that
// variable the PostgreSQL cases skip, unless AIOS_REQUIRE_POSTGRES=1 (set by scripts/test), when
// they fail: CI never passes by skipping them.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <optional>
#include <string>

#include "store/postgres/connection.hpp"

namespace aios::test {

inline std::optional<std::string> postgres_admin_url() {
  const char* url = std::getenv("AIOS_TEST_POSTGRES_URL");
  if (url == nullptr || *url == '\0') return std::nullopt;
  return std::string(url);
}

inline bool postgres_required() {
  const char* required = std::getenv("AIOS_REQUIRE_POSTGRES");
  return required != nullptr && std::string(required) == "1";
}

// In a test's SetUp: without a server, fails the test when AIOS_REQUIRE_POSTGRES=1, else skips it.
#define AIOS_SKIP_WITHOUT_POSTGRES()                                                        \
  do {                                                                                      \
    if (!::aios::test::postgres_admin_url()) {                                              \
      if (::aios::test::postgres_required()) FAIL() << "AIOS_TEST_POSTGRES_URL is not set"; \
      GTEST_SKIP() << "no PostgreSQL server: AIOS_TEST_POSTGRES_URL is not set";            \
    }                                                                                       \
  } while (false)

// CREATE DATABASE on construction, DROP DATABASE … WITH (FORCE) on destruction.
class ScopedPostgresDatabase {
 public:
  explicit ScopedPostgresDatabase(const std::string& admin_url) : admin_url_(admin_url) {
    static std::atomic<int> counter{0};
    name_ = "aios_test_" + std::to_string(::getpid()) + "_" + std::to_string(++counter) + "_" +
            std::to_string(std::rand() % 100000);
    admin().exec("CREATE DATABASE " + name_ + " TEMPLATE template0 ENCODING 'UTF8'");
    // The admin URL's database name replaced by the new one.
    const auto slash = admin_url_.rfind('/');
    const auto query = admin_url_.find('?', slash);
    url_ = admin_url_.substr(0, slash + 1) + name_ +
           (query == std::string::npos ? "" : admin_url_.substr(query));
  }
  ~ScopedPostgresDatabase() {
    try {
      admin().exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (...) {
      // A database left behind lives on the throwaway server only.
    }
  }
  ScopedPostgresDatabase(const ScopedPostgresDatabase&) = delete;
  ScopedPostgresDatabase& operator=(const ScopedPostgresDatabase&) = delete;

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }

 private:
  store::pg::Connection admin() const { return store::pg::Connection({{"dbname", admin_url_}}); }

  std::string admin_url_;
  std::string name_;
  std::string url_;
};

}  // namespace aios::test
