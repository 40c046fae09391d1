// Pure text rules of the http module: query decoding, URLs, bearer tokens, header lookup.
#include "http/url.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "aios/http.hpp"
#include "support/code_of.hpp"

namespace aios::http {
namespace {

using Query = std::map<std::string, std::string>;

// Given query strings, we should percent-decode names and values, '+' as space, first wins.
TEST(HttpQuery, DecodesATableOfQueries) {
  const struct {
    std::string query;
    Query expected;
  } cases[] = {
      {"", {}},
      {"status=QUEUED", {{"status", "QUEUED"}}},
      {"a=1&b=2", {{"a", "1"}, {"b", "2"}}},
      {"q=x%20y+z", {{"q", "x y z"}}},
      {"q=%2B%26%3D%25", {{"q", "+&=%"}}},
      {"na%6De=v", {{"name", "v"}}},
      {"utf=%C3%A9", {{"utf", "\xC3\xA9"}}},
      {"flag", {{"flag", ""}}},
      {"empty=", {{"empty", ""}}},
      {"a=1&a=2", {{"a", "1"}}},
      {"&&a=1&", {{"a", "1"}}},
      {"a==b", {{"a", "=b"}}},
      {"%7e=%7E", {{"~", "~"}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.query);
    Query out{{"stale", "x"}};
    detail::parse_query(c.query, out);
    EXPECT_EQ(out, c.expected);
  }
}

// Given a malformed percent escape, we should refuse the query with REQUEST_INVALID.
TEST(HttpQuery, RefusesMalformedEscapes) {
  for (const std::string query : {"a=%", "a=%2", "a=%zz", "%g1=x", "a=1&b=%2G", "a=x%"}) {
    SCOPED_TRACE(query);
    Query out;
    try {
      detail::parse_query(query, out);
      ADD_FAILURE() << "accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), "REQUEST_INVALID");
      EXPECT_EQ(error.http_status(), 400);
    }
  }
}

// Given service URLs, we should split scheme, host, port and target, and refuse anything not
// http or https.
TEST(HttpUrl, ParsesHttpUrlsAndRefusesTheRest) {
  const struct {
    std::string url;
    std::string host;
    std::uint16_t port;
    std::string target;
  } good[] = {
      {"http://127.0.0.1:18940", "127.0.0.1", 18940, "/"},
      {"http://127.0.0.1:18940/", "127.0.0.1", 18940, "/"},
      {"HTTP://localhost/v1/tasks?status=QUEUED", "localhost", 80, "/v1/tasks?status=QUEUED"},
      {"http://[::1]:18892/v2/plans", "::1", 18892, "/v2/plans"},
      {"http://example.internal:1?x=1", "example.internal", 1, "/?x=1"},
      {"http://h:65535/a%20b", "h", 65535, "/a%20b"},
      {"http://h/x", "h", 80, "/x"},
      {"https://h/x", "h", 443, "/x"},
      {"HTTPS://192.0.2.1:18940", "192.0.2.1", 18940, "/"},
  };
  for (const auto& c : good) {
    SCOPED_TRACE(c.url);
    const auto endpoint = parse_http_url(c.url);
    EXPECT_EQ(endpoint.host, c.host);
    EXPECT_EQ(endpoint.port, c.port);
    EXPECT_EQ(endpoint.https, c.url.starts_with("https") || c.url.starts_with("HTTPS"));
    EXPECT_EQ(endpoint.target, c.target);
  }
  for (const std::string url : {"",
                                "httpx://127.0.0.1/",
                                "ftp://h/",
                                "https:/h/",
                                "http:/h/",
                                "http://",
                                "http:///x",
                                "http://h:/",
                                "http://h:0/",
                                "http://h:65536/",
                                "http://h:12x/",
                                "http://user@h/",
                                "http://h/#frag",
                                "http://h/a b",
                                "http://[::1/",
                                "http://[]/",
                                "http://[::1]x/",
                                "http://h^/",
                                "127.0.0.1:18940",
                                "http://h/\xC3\xA9"}) {
    SCOPED_TRACE(url);
    try {
      parse_http_url(url);
      ADD_FAILURE() << "accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), "HTTP_URL_INVALID");
    }
  }
}

// Given Authorization header values, we should extract only a well-formed bearer token.
TEST(HttpBearer, ParsesATableOfAuthorizationValues) {
  const struct {
    std::string value;
    std::string token;
  } cases[] = {
      {"Bearer abc123", "abc123"},
      {"bearer abc123", "abc123"},
      {"BEARER abc123", "abc123"},
      {"Bearer   abc123", "abc123"},  // 1*SP between scheme and token
      {"Bearer\tabc123", "abc123"},
      {"  Bearer abc123  ", "abc123"},  // surrounding whitespace is not part of the token
      {"Bearer a-b._~+/=", "a-b._~+/="},
      {"Bearer", ""},
      {"Bearer ", ""},
      {"Bearer    ", ""},
      {"Bearerabc123", ""},
      {"Basic YWxhZGRpbjpvcGVu", ""},
      {"Bearer abc def", ""},  // a second word is malformed, not a token
      {"Bearer abc\x01", ""},
      {"Bearer \xC3\xA9t\xC3\xA9", ""},  // non-ASCII
      {"", ""},
      {"Token abc", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    EXPECT_EQ(bearer_from_authorization(c.value), c.token);
  }
}

// Given a request token, we should match only the exact expected token, never an empty one.
TEST(HttpBearer, MatchesOnlyTheExactNonEmptyToken) {
  Request request;
  request.bearer_token = "secret-token";
  EXPECT_TRUE(bearer_matches(request, "secret-token"));
  EXPECT_FALSE(bearer_matches(request, "secret-toke"));
  EXPECT_FALSE(bearer_matches(request, "secret-token2"));
  EXPECT_FALSE(bearer_matches(request, "Secret-token"));
  EXPECT_FALSE(bearer_matches(request, ""));
  request.bearer_token.clear();
  EXPECT_FALSE(bearer_matches(request, ""));
  EXPECT_FALSE(bearer_matches(request, "secret-token"));
}

// Given peer addresses, we should call only 127/8, ::1 and IPv4-mapped 127/8 loopback.
TEST(HttpOwner, LoopbackAddresses) {
  for (const char* address : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(is_loopback_address(address)) << address;
  }
  for (const char* address :
       {"", "192.0.2.1", "::ffff:192.0.2.1", "0.0.0.0", "::", "localhost", "127.0.0.1.evil"}) {
    EXPECT_FALSE(is_loopback_address(address)) << address;
  }
}

// Given the owner's token, we should honour it from loopback, refuse it elsewhere with
// OWNER_NOT_LOOPBACK unless remote owners are allowed, and never take another token for it.
TEST(HttpOwner, TheOwnersTokenCountsFromLoopbackUnlessAllowed) {
  Request request;
  request.bearer_token = "owner-token-0123456789abcdef0123";
  request.remote_address = "127.0.0.1";
  const OwnerToken local("owner-token-0123456789abcdef0123");
  const OwnerToken remote("owner-token-0123456789abcdef0123", true);
  EXPECT_TRUE(local.matches(request));
  EXPECT_TRUE(local.admits(request));
  request.remote_address = "192.0.2.7";
  EXPECT_EQ(test::code_of([&] { local.matches(request); }), "OWNER_NOT_LOOPBACK");
  EXPECT_FALSE(local.admits(request));
  EXPECT_TRUE(remote.matches(request));
  EXPECT_TRUE(remote.admits(request));
  request.bearer_token = "someone-else";
  EXPECT_FALSE(local.matches(request));  // not the owner: the agent rules decide
  EXPECT_FALSE(remote.admits(request));
}

// Given request headers, we should look names up case-insensitively, first one wins.
TEST(HttpRequest, LooksHeadersUpCaseInsensitively) {
  Request request;
  request.headers = {{"Content-Type", "application/json"}, {"X-Trace", "1"}, {"x-trace", "2"}};
  EXPECT_EQ(request.header("content-type"), "application/json");
  EXPECT_EQ(request.header("X-TRACE"), "1");
  EXPECT_EQ(request.header("Content-Typ"), "");
  EXPECT_EQ(request.header("Authorization"), "");
}

// Given token and header text, we should accept only what can be sent safely.
TEST(HttpText, ClassifiesTokensAndHeaderValues) {
  EXPECT_TRUE(detail::is_token("GET"));
  EXPECT_TRUE(detail::is_token("X-Request-Id"));
  EXPECT_FALSE(detail::is_token(""));
  EXPECT_FALSE(detail::is_token("GE T"));
  EXPECT_FALSE(detail::is_token("X:Y"));
  EXPECT_TRUE(detail::is_safe_header_value("a b\tc"));
  EXPECT_FALSE(detail::is_safe_header_value("a\r\nSet-Cookie: x"));
  EXPECT_FALSE(detail::is_safe_header_value(std::string("a\0b", 3)));
  EXPECT_TRUE(detail::is_visible_ascii(""));
  EXPECT_FALSE(detail::is_visible_ascii("a b"));
  EXPECT_TRUE(detail::iequals("Content-Length", "content-LENGTH"));
  EXPECT_FALSE(detail::iequals("Content-Length", "Content-Lengt"));
}

}  // namespace
}  // namespace aios::http
