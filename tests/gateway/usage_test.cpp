// The gateway's readings (src/gateway/usage.cpp): the upstream URL a profile names, a task's
// model budget, and the usage an answer states, JSON or stream.
#include <gtest/gtest.h>

#include "aios/gateway.hpp"

namespace aios::gateway {
namespace {

using nlohmann::json;

// Given upstream URLs, only http(s)://host[:port][/path] with an IPv4 address or DNS name and
// no segment that could climb should be taken, the prefix without its trailing slash.
TEST(Upstream, TakesOnlyAPlainHttpOrHttpsUrl) {
  const auto https = parse_upstream("https://api.example.com/v1/");
  ASSERT_TRUE(https);
  EXPECT_TRUE(https->https);
  EXPECT_EQ(https->host, "api.example.com");
  EXPECT_EQ(https->port, 443);
  EXPECT_EQ(https->prefix, "/v1");
  const auto plain = parse_upstream("http://10.0.0.5:3000");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->https);
  EXPECT_EQ(plain->port, 3000);
  EXPECT_EQ(plain->prefix, "");
  for (const char* bad :
       {"ftp://api.example.com/v1", "https://user@api.example.com/v1", "https://[::1]/v1",
        "https://api.example.com/v1?x=1", "https://api.example.com/v1/../admin",
        "https://api.example.com/./v1", "https://api.example.com//v1", "https://api.example.com:0",
        "https://api example.com", "https://api.example.com/v1%2f..", ""}) {
    EXPECT_FALSE(parse_upstream(bad)) << bad;
  }
}

// Given budgets, only objects of max_requests and max_usage from 1 to 10^12 should be taken.
TEST(Budget, TakesOnlyPositiveBoundsItKnows) {
  const auto both = parse_budget({{"max_requests", 3}, {"max_usage", 1000}});
  ASSERT_TRUE(both);
  EXPECT_EQ(both->max_requests, 3U);
  EXPECT_EQ(both->max_usage, 1000U);
  EXPECT_EQ(both->to_json(), json({{"max_requests", 3}, {"max_usage", 1000}}));
  EXPECT_EQ(parse_budget({{"max_usage", 5}})->to_json(), json({{"max_usage", 5}}));
  for (const json& bad :
       {json::object(), json({{"max_requests", 0}}), json({{"max_requests", -1}}),
        json({{"max_usage", 1.5}}), json({{"max_usage", "5"}}), json({{"max_tokens", 5}}),
        json({{"max_requests", 1'000'000'000'001LL}}), json::array()}) {
    EXPECT_FALSE(parse_budget(bad)) << bad.dump();
  }
}

// Given a ceiling, each bound should be lowered to it, and a bound only the ceiling sets taken.
TEST(Budget, StaysWithinItsCeiling) {
  const Budget asked{100, 0};
  EXPECT_EQ(asked.within({10, 500}).to_json(), json({{"max_requests", 10}, {"max_usage", 500}}));
  EXPECT_EQ(asked.within({0, 0}).to_json(), json({{"max_requests", 100}}));
  const Budget both{5, 7};
  EXPECT_EQ(both.within({10, 0}).to_json(), json({{"max_requests", 5}, {"max_usage", 7}}));
}

std::optional<UsageReader::Counts> read(std::string_view type, std::string_view body,
                                        std::size_t piece = 7) {
  UsageReader reader(type);
  for (std::size_t at = 0; at < body.size(); at += piece) reader.feed(body.substr(at, piece));
  return reader.finish();
}

// Given a Chat Completions or Responses answer as JSON, its usage should be read whole however
// the body was cut into pieces; an answer without usage states none.
TEST(UsageReader, ReadsAJsonAnswersUsage) {
  const auto chat = read("application/json; charset=utf-8",
                         R"({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,)"
                         R"("total_tokens":15}})");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->input, 10U);
  EXPECT_EQ(chat->output, 5U);
  EXPECT_EQ(chat->total, 15U);
  const auto responses =
      read("application/json", R"({"output":[],"usage":{"input_tokens":7,"output_tokens":3}})");
  ASSERT_TRUE(responses);
  EXPECT_EQ(responses->total, 10U);  // input plus output when no total is stated
  EXPECT_FALSE(read("application/json", R"({"choices":[]})"));
  EXPECT_FALSE(read("application/json", "not json"));
  EXPECT_FALSE(read("application/json", std::string(100, '[')));
}

// Given streams, the last event that states usage should count: a Chat Completions stream's
// final chunk, the Responses API's response.completed; [DONE] and events without usage not.
TEST(UsageReader, ReadsAStreamsLastStatedUsage) {
  const std::string chat =
      "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,"
      "\"total_tokens\":6}}\n\n"
      "data: [DONE]\n\n";
  const auto counts = read("text/event-stream", chat, 5);
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->total, 6U);
  const std::string responses =
      "event: response.created\r\ndata: {\"type\":\"response.created\",\"response\":"
      "{\"usage\":null}}\r\n\r\n"
      "event: response.completed\r\ndata: {\"type\":\"response.completed\",\"response\":"
      "{\"usage\":{\"input_tokens\":9,\"output_tokens\":1,\"total_tokens\":10}}}\r\n\r\n";
  const auto completed = read("text/event-stream", responses, 11);
  ASSERT_TRUE(completed);
  EXPECT_EQ(completed->input, 9U);
  EXPECT_EQ(completed->total, 10U);
  EXPECT_FALSE(read("text/event-stream", "data: {\"choices\":[]}\n\ndata: [DONE]\n\n"));
}

}  // namespace
}  // namespace aios::gateway
