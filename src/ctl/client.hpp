#pragma once
// The services aiosctl speaks to, as the owner: the Task API, the Bridge and the rebind
// service, over http:// or https://. Internal to src/ctl.

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "aios/http.hpp"

namespace aios::ctl {

enum class Service { kApi, kBridge, kRebind };

struct Endpoints {
  std::string api = "http://127.0.0.1:18940";
  std::string bridge = "http://127.0.0.1:18892";
  std::string rebind = "http://127.0.0.1:18942";
  std::string token_file;  // the owner's control token; read on the first call
  std::string ca_file;     // https:// URLs: the CA bundle (empty: the system's)
  std::chrono::milliseconds timeout{30000};
};

class Client {
 public:
  explicit Client(Endpoints endpoints);

  // One owner call; a body of JSON. A refusal throws the peer's code (Error::remote with its
  // status); a service that cannot be reached throws HTTP_UPSTREAM_*.
  nlohmann::json get(Service service, const std::string& path);
  nlohmann::json post(Service service, const std::string& path, const nlohmann::json& body);
  nlohmann::json put(Service service, const std::string& path, const nlohmann::json& body);
  // GET without a token (/health); false when the service does not answer 200.
  bool healthy(Service service);

  const Endpoints& endpoints() const { return endpoints_; }

 private:
  nlohmann::json call(Service service, std::string_view method, const std::string& path,
                      const std::string& body);
  const std::string& url(Service service) const;
  const std::string& token();

  Endpoints endpoints_;
  std::string token_;
  http::SystemTransport transport_;
};

}  // namespace aios::ctl
