// The dashboard's files as the scheduler serves them: the bytes of src/ui/assets exactly, each
// with its type and the strict security headers, a redirect for /ui, NOT_FOUND for anything
// else below /ui/; and the rules the page lives by, read from its sources: no inline script or
// style for the CSP to have to allow, no markup built from text, no storage that outlives the
// tab.
#include "aios/ui.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "aios/error.hpp"
#include "support/code_of.hpp"

namespace aios::ui {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::filesystem::path kAssets = std::filesystem::path(AIOS_SOURCE_DIR) / "src/ui/assets";

std::string read_asset(const std::string& name) {
  std::ifstream in(kAssets / name, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string header(const http::Response& response, std::string_view name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return value;
  }
  return {};
}

TEST(UiFiles, EveryAssetIsServedByteForByteWithItsTypeAndHeaders) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"index.html", "text/html; charset=utf-8"},
      {"app.js", "text/javascript; charset=utf-8"},
      {"app.css", "text/css; charset=utf-8"},
      {"favicon.svg", "image/svg+xml"}};
  for (const auto& [name, type] : files) {
    const auto response = file("/ui/" + name);
    ASSERT_TRUE(response.has_value()) << name;
    EXPECT_EQ(response->status, 200) << name;
    EXPECT_EQ(response->body, read_asset(name)) << name << " differs from src/ui/assets";
    EXPECT_EQ(response->content_type, type) << name;
    EXPECT_EQ(header(*response, "Content-Security-Policy"), kContentSecurityPolicy) << name;
    EXPECT_EQ(header(*response, "X-Content-Type-Options"), "nosniff") << name;
    EXPECT_EQ(header(*response, "X-Frame-Options"), "DENY") << name;
    EXPECT_EQ(header(*response, "Referrer-Policy"), "no-referrer") << name;
  }
  EXPECT_EQ(file("/ui/")->body, read_asset("index.html"));
}

TEST(UiFiles, TheBareNameRedirectsAndNothingElseBelowIsServed) {
  const auto redirect = file("/ui");
  ASSERT_TRUE(redirect.has_value());
  EXPECT_EQ(redirect->status, 308);
  EXPECT_EQ(header(*redirect, "Location"), "/ui/");
  for (const auto* path : {"/ui/../ui/app.js", "/ui/app.js/", "/ui/APP.JS", "/ui/missing.html",
                           "/ui/assets/app.js", "/ui/%2e%2e/index.html"}) {
    EXPECT_EQ(test::code_of([&] { (void)file(path); }), "NOT_FOUND") << path;
  }
  for (const auto* path : {"/", "/uix", "/v1/dashboard", "/health"}) {
    EXPECT_FALSE(file(path).has_value()) << path;
  }
}

TEST(UiFiles, ThePolicyAllowsOnlyThePagesOwnOrigin) {
  const std::string policy(kContentSecurityPolicy);
  EXPECT_THAT(policy, HasSubstr("default-src 'none'"));
  EXPECT_THAT(policy, HasSubstr("script-src 'self'"));
  EXPECT_THAT(policy, HasSubstr("connect-src 'self'"));
  EXPECT_THAT(policy, HasSubstr("frame-ancestors 'none'"));
  EXPECT_THAT(policy, Not(HasSubstr("unsafe")));
  EXPECT_THAT(policy, Not(HasSubstr("http")));
}

TEST(UiSources, ThePageHasNoInlineScriptStyleOrHandler) {
  const auto page = read_asset("index.html");
  // Every <script> names its source; no style element or attribute; no on* handler.
  EXPECT_FALSE(std::regex_search(page, std::regex(R"(<script(?![^>]*\bsrc=))", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(page, std::regex(R"(<style|\sstyle=)", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(page, std::regex(R"(\son[a-z]+=)", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(page, std::regex(R"((src|href)="(https?:)?//)")))
      << "the page loads something from elsewhere";
}

TEST(UiSources, TheScriptBuildsNoMarkupFromTextAndKeepsTheTokenInMemory) {
  const auto script = read_asset("app.js");
  for (const auto* banned :
       {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
        "localStorage", "sessionStorage", "indexedDB", "document.cookie", "setAttribute(\"style\"",
        "XMLHttpRequest", "WebSocket", "EventSource", "sendBeacon", "import("}) {
    EXPECT_THAT(script, Not(HasSubstr(banned))) << banned;
  }
  // Every request goes to a path of the page's own origin.
  const std::regex fetch(R"(fetch\(([^,)]*))");
  int calls = 0;
  for (auto it = std::sregex_iterator(script.begin(), script.end(), fetch);
       it != std::sregex_iterator(); ++it, ++calls) {
    EXPECT_TRUE(std::regex_match((*it)[1].str(), std::regex(R"([`"']/.*)"))) << (*it)[1];
  }
  EXPECT_EQ(calls, 1);
  // The token travels in the Authorization header of the page's own requests only.
  EXPECT_THAT(script, HasSubstr("Authorization: `Bearer ${token}`"));
  EXPECT_THAT(script, HasSubstr("credentials: \"omit\""));
}

}  // namespace
}  // namespace aios::ui
