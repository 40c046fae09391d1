// The error registry is the one table of wire codes; docs/errors.md must list the same codes.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "aios/error.hpp"

namespace aios {
namespace {

// Given the registry, every code should be unique, well-formed and carry a known status.
TEST(ErrorRegistry, EveryCodeIsWellFormed) {
  const std::set<int> statuses = {400, 401, 403, 404, 409, 413, 421, 429, 500, 502, 503};
  const std::regex wire("^[A-Z][A-Z0-9_]+[A-Z0-9]$");
  std::set<std::string_view> seen;
  std::size_t index = 0;
  for (const auto& info : error_registry()) {
    SCOPED_TRACE(std::string(info.wire));
    EXPECT_TRUE(seen.insert(info.wire).second) << "duplicate";
    EXPECT_TRUE(std::regex_match(std::string(info.wire), wire));
    EXPECT_TRUE(statuses.contains(info.http_status));
    EXPECT_FALSE(info.text.empty());
    EXPECT_EQ(static_cast<std::size_t>(info.code), index++);
    EXPECT_EQ(find_error(info.wire), &info);
    const Error error(info.code, "detail");
    EXPECT_EQ(error.code(), info.wire);
    EXPECT_STREQ(error.what(), std::string(info.wire).c_str());
    EXPECT_EQ(error.http_status(), info.http_status);
    EXPECT_EQ(error.detail(), "detail");
    EXPECT_TRUE(error.is(info.code));
    EXPECT_TRUE(error.is_any({ErrorCode::INTERNAL_ERROR, info.code}));
    const auto other = info.code == ErrorCode::INTERNAL_ERROR ? ErrorCode::REQUEST_INVALID
                                                              : ErrorCode::INTERNAL_ERROR;
    EXPECT_FALSE(error.is(other));
    EXPECT_FALSE(error.is_any({other}));
  }
  EXPECT_EQ(find_error("NOT_A_REGISTERED_CODE"), nullptr);
}

// Given a code from a peer service, we should keep it verbatim with its status.
TEST(ErrorRegistry, RemoteCodesAreKeptVerbatim) {
  const auto error = Error::remote("EXECUTION_PLAN_NOT_REGISTERED", 409);
  EXPECT_EQ(error.code(), "EXECUTION_PLAN_NOT_REGISTERED");
  EXPECT_EQ(error.http_status(), 409);
  EXPECT_TRUE(error.detail().empty());
  // A peer's code compares equal to ours by its spelling.
  EXPECT_TRUE(error.is(ErrorCode::EXECUTION_PLAN_NOT_REGISTERED));
  EXPECT_FALSE(Error::remote("SOMETHING_ELSE", 409).is(ErrorCode::EXECUTION_PLAN_NOT_REGISTERED));
}

// Given docs/errors.md, it should list exactly the registry's codes with the same statuses.
TEST(ErrorRegistry, OperatorDocsMatchTheRegistry) {
  std::ifstream file(std::string(AIOS_SOURCE_DIR) + "/docs/errors.md");
  ASSERT_TRUE(file.good());
  const std::regex row(R"(^\| `([A-Z][A-Z0-9_]+)` \| (\d{3}) \|)");
  std::map<std::string, int> documented;
  std::string line;
  while (std::getline(file, line)) {
    std::smatch match;
    if (std::regex_search(line, match, row)) {
      EXPECT_TRUE(documented.emplace(match[1], std::stoi(match[2])).second)
          << "listed twice: " << match[1];
    }
  }
  std::map<std::string, int> registered;
  for (const auto& info : error_registry()) registered.emplace(info.wire, info.http_status);
  EXPECT_EQ(documented, registered);
}

}  // namespace
}  // namespace aios
