// The Bridge as the rebind service's source of truth for the new envelope: the owner names the
// digest they expect, but the envelope itself always comes from the Bridge's registered plan.
#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/rebind.hpp"

namespace aios {
namespace {

// A Bridge refusal is passed on only when it looks like a wire code, so that a misbehaving peer
// cannot put arbitrary text into the owner's answer.
bool is_wire_code(const nlohmann::json& value) {
  if (!value.is_string()) return false;
  const auto& text = value.get_ref<const std::string&>();
  return !text.empty() && text.size() <= 128 && text.front() >= 'A' && text.front() <= 'Z' &&
         std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
         });
}

const ErrorInfo& kResolutionFailed = error_info(ErrorCode::CANONICAL_EXECUTION_RESOLUTION_FAILED);

}  // namespace

ExecutionResolver make_bridge_execution_resolver(std::string_view base_url,
                                                 std::string control_token,
                                                 http::Transport& transport,
                                                 std::chrono::milliseconds timeout) {
  std::string url(base_url);
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/v2/execution-envelope";
  http::parse_http_url(url);  // a bad URL refuses the start, not the first rebind
  return [url = std::move(url), token = std::move(control_token), &transport, timeout](
             const std::string& task_id, const nlohmann::json& capabilities) {
    const std::string body =
        canonical_json({{"task_id", task_id}, {"required_capabilities", capabilities}});
    const auto response = transport.request("POST", url, token, body, timeout);
    auto value = parse_json(response.body);
    if (!value.is_object()) throw Error(ErrorCode::CANONICAL_EXECUTION_RESPONSE_INVALID);
    if (response.status != 200) {
      const auto code = value.find("error");
      throw Error::remote(code != value.end() && is_wire_code(*code)
                              ? code->get<std::string>()
                              : std::string(kResolutionFailed.wire),
                          response.status >= 500 ? 502 : 409);
    }
    return value;
  };
}

}  // namespace aios
