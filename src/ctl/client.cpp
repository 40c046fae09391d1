// aiosctl's owner calls.
#include "ctl/client.hpp"

#include "aios/canonical.hpp"
#include "aios/sys.hpp"

namespace aios::ctl {
namespace {

std::shared_ptr<http::TlsClientCredentials> credentials(const std::string& ca_file) {
  if (ca_file.empty()) return nullptr;
  return std::make_shared<http::TlsClientCredentials>(http::TlsClientFiles{ca_file});
}

}  // namespace

Client::Client(Endpoints endpoints)
    : endpoints_(std::move(endpoints)), transport_(credentials(endpoints_.ca_file)) {}

const std::string& Client::url(Service service) const {
  switch (service) {
    case Service::kBridge:
      return endpoints_.bridge;
    case Service::kRebind:
      return endpoints_.rebind;
    case Service::kApi:
      break;
  }
  return endpoints_.api;
}

const std::string& Client::token() {
  if (token_.empty()) {
    token_ = read_secret_file(endpoints_.token_file, 32, ErrorCode::CONTROL_CREDENTIAL_UNAVAILABLE,
                              ErrorCode::CONTROL_CREDENTIAL_INVALID);
  }
  return token_;
}

nlohmann::json Client::call(Service service, std::string_view method, const std::string& path,
                            const std::string& body) {
  const auto response =
      transport_.request(method, url(service) + path, token(), body, endpoints_.timeout);
  auto value = parse_json(response.body);
  if (response.status < 200 || response.status >= 300) {
    const auto code = value.is_object() ? value.value("error", std::string()) : std::string();
    throw Error::remote(code.empty() ? "HTTP_UPSTREAM_RESPONSE_INVALID" : code, response.status);
  }
  if (value.is_discarded()) throw Error(ErrorCode::HTTP_UPSTREAM_RESPONSE_INVALID, path);
  return value;
}

nlohmann::json Client::get(Service service, const std::string& path) {
  return call(service, "GET", path, "");
}

nlohmann::json Client::post(Service service, const std::string& path, const nlohmann::json& body) {
  return call(service, "POST", path, canonical_json(body));
}

nlohmann::json Client::put(Service service, const std::string& path, const nlohmann::json& body) {
  return call(service, "PUT", path, canonical_json(body));
}

bool Client::healthy(Service service) {
  try {
    return transport_.request("GET", url(service) + "/health", "", "", endpoints_.timeout).status ==
           200;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace aios::ctl
