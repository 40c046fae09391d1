// The handler boundary without sockets: what each kind of handler outcome becomes on the wire.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "aios/http.hpp"
#include "http/response.hpp"

namespace aios::http {
namespace {

// Given JSON values, we should dump them compactly with sorted keys and the JSON content type.
TEST(HttpResponse, JsonResponseIsCompactAndSorted) {
  const auto response = json_response(201, {{"zeta", 1}, {"alpha", {{"b", true}, {"a", nullptr}}}});
  EXPECT_EQ(response.status, 201);
  EXPECT_EQ(response.body, R"({"alpha":{"a":null,"b":true},"zeta":1})");
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_TRUE(response.headers.empty());
}

// Given registered and remote errors, we should answer {"error": CODE} with their status only.
TEST(HttpResponse, ErrorResponseCarriesCodeAndStatusButNoDetail) {
  const auto local = error_response(Error(ErrorCode::REQUEST_SIZE_INVALID, "secret detail"));
  EXPECT_EQ(local.status, 413);
  EXPECT_EQ(local.body, R"({"error":"REQUEST_SIZE_INVALID"})");
  const auto remote = error_response(Error::remote("EXECUTION_PLAN_NOT_REGISTERED", 409));
  EXPECT_EQ(remote.status, 409);
  EXPECT_EQ(remote.body, R"({"error":"EXECUTION_PLAN_NOT_REGISTERED"})");
}

// Given each kind of handler outcome, we should answer as the exception boundary promises.
TEST(HttpDispatch, MapsEveryHandlerOutcome) {
  const std::string internal = R"({"error":"INTERNAL_ERROR"})";
  const struct {
    const char* name;
    Handler handler;
    int status;
    std::string body;
    bool reported;
  } cases[] = {
      {"plain response",
       [](const Request& r) {
         return json_response(200, {{"path", r.path}});
       },
       200, R"({"path":"/p"})", false},
      {"aios::Error",
       [](const Request&) -> Response {
         throw Error(ErrorCode::BINDING_TARGET_BRANCH_PROTECTED, "refs/heads/main");
       },
       403, R"({"error":"BINDING_TARGET_BRANCH_PROTECTED"})", false},
      {"remote error", [](const Request&) -> Response { throw Error::remote("PEER_CODE", 503); },
       503, R"({"error":"PEER_CODE"})", false},
      {"std::runtime_error",
       [](const Request&) -> Response { throw std::runtime_error("db password=hunter2"); }, 500,
       internal, true},
      {"non-standard throw", [](const Request&) -> Response { throw 42; }, 500, internal, true},
      {"json type error", [](const Request&) { return json_response(200, nlohmann::json("\xFF")); },
       500, internal, true},
      {"status 99",
       [](const Request&) {
         return Response{99, "", "text/plain", {}, {}};
       },
       500, internal, true},
      {"status 600",
       [](const Request&) {
         return Response{600, "", "text/plain", {}, {}};
       },
       500, internal, true},
      {"remote status 0", [](const Request&) -> Response { throw Error::remote("X", 0); }, 500,
       internal, true},
      {"header injection",
       [](const Request&) {
         return Response{200, "{}", "application/json", {{"X-A", "1\r\nSet-Cookie: a=b"}}, {}};
       },
       500, internal, true},
      {"bad header name",
       [](const Request&) {
         return Response{200, "{}", "application/json", {{"X A", "1"}}, {}};
       },
       500, internal, true},
      {"server-owned header",
       [](const Request&) {
         return Response{200, "{}", "application/json", {{"content-length", "1"}}, {}};
       },
       500, internal, true},
      {"content type injection",
       [](const Request&) {
         return Response{200, "{}", "text/plain\r\nX: y", {}, {}};
       },
       500, internal, true},
  };
  Request request;
  request.path = "/p";
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> reports;
    const auto observer = [&](std::string_view what) { reports.emplace_back(what); };
    const auto response = detail::dispatch(c.handler, request, observer);
    EXPECT_EQ(response.status, c.status);
    EXPECT_EQ(response.body, c.body);
    EXPECT_EQ(reports.size(), c.reported ? 1u : 0u);
  }
}

// Given a handler whose exception text holds a secret, we should keep it off the wire and give
// it only to the observer (the daemon log), and survive an observer that throws.
TEST(HttpDispatch, KeepsExceptionTextOffTheWire) {
  const Handler handler = [](const Request&) -> Response {
    throw std::runtime_error("token=abc123");
  };
  std::string seen;
  const auto response =
      detail::dispatch(handler, Request{}, [&](std::string_view what) { seen = what; });
  EXPECT_EQ(response.body.find("abc123"), std::string::npos);
  EXPECT_EQ(seen, "token=abc123");
  const auto again = detail::dispatch(
      handler, Request{}, [](std::string_view) { throw std::runtime_error("log sink down"); });
  EXPECT_EQ(again.status, 500);
  EXPECT_EQ(detail::dispatch(handler, Request{}, nullptr).status, 500);
}

// Given responses and connection states, we should write the exact head the wire needs.
TEST(HttpResponse, WritesTheHead) {
  std::string head = "stale";
  detail::write_head(Response{200, "{}", "application/json", {{"X-Id", "7"}}, {}}, true, false,
                     head);
  EXPECT_EQ(head,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
            "Cache-Control: no-store\r\nX-Id: 7\r\n\r\n");
  detail::write_head(Response{413, "abc", "application/json", {}, {}}, false, false, head);
  EXPECT_EQ(head,
            "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
            "Content-Length: 3\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n");
  detail::write_head(Response{204, "", "application/json", {}, {}}, true, true, head);
  EXPECT_EQ(head,
            "HTTP/1.1 204 No Content\r\nCache-Control: no-store\r\n"
            "Connection: keep-alive\r\n\r\n");
  detail::write_head(Response{590, "", "text/plain", {}, {}}, true, false, head);
  EXPECT_EQ(head.substr(0, 15), "HTTP/1.1 590 \r\n");
}

}  // namespace
}  // namespace aios::http
