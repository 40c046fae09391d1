#pragma once
// The provider gateway (docs/security.md, "The provider gateway"): a run's model calls leave its
// sandbox only through this process, which holds the provider key the agent never sees.
//
// Inside the sandbox the gateway answers plain HTTP at the upstream's own host and port (the
// listener made in the sandbox's network namespace). Each request must carry the run's
// placeholder key (GATEWAY_KEY_INVALID, 401), name the upstream's host (GATEWAY_HOST_DENY, 403)
// and a path under its prefix (GATEWAY_PATH_DENY, 403); once the run has used its budget every
// call is refused with MODEL_BUDGET_EXHAUSTED (429). What passes goes to the upstream over HTTPS
// (its name verified against the system's CAs or the provider's ca_file) or plain HTTP with
// `Authorization: Bearer <key>` set here, and its answer comes back as it arrives. Every call is
// logged (MODEL_CALL, MODEL_CALL_REFUSED) with the usage its answer states.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "aios/process.hpp"

namespace aios::gateway {

// An upstream named by URL: http(s)://host[:port][/prefix].
struct Upstream {
  bool https = true;
  std::string host;  // a DNS name or an IPv4 address
  std::uint16_t port = 443;
  std::string prefix;             // "/v1"; "" for none; never ends with '/'
  std::filesystem::path ca_file;  // what its certificate must chain to; empty: the system's CAs
  friend bool operator==(const Upstream&, const Upstream&) = default;
};

// nullopt for anything but http(s)://host[:port][/path] with a host process::parse_destination
// takes (no IPv6, no user info, query or fragment, no "." or ".." segment).
std::optional<Upstream> parse_upstream(std::string_view url);

// A run's bounds on its model calls; 0 is no bound.
struct Budget {
  std::uint64_t max_requests = 0;
  std::uint64_t max_usage = 0;  // the provider's total count: input plus output
  bool bounded() const { return max_requests != 0 || max_usage != 0; }
  nlohmann::json to_json() const;  // the bounds set, as parse_budget reads them
  // Each bound no higher than the ceiling's (a bound the ceiling sets and this does not, taken).
  Budget within(const Budget& ceiling) const;
};

// {"max_requests": N, "max_usage": N}: at least one, each an integer from 1 to 10^12, nothing
// else; nullopt for anything else.
std::optional<Budget> parse_budget(const nlohmann::json& value);

// A run's model calls so far.
struct Usage {
  std::uint64_t requests = 0;  // forwarded
  std::uint64_t input = 0;
  std::uint64_t output = 0;
  std::uint64_t total = 0;
  std::uint64_t unmetered = 0;  // forwarded calls whose answer stated no usage
  std::uint64_t refused = 0;    // calls the gateway answered itself
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  // {requests, input, output, total, unmetered, refused, bytes_up, bytes_down}: names the
  // secret-key rules pass (no "token" in them).
  nlohmann::json to_json() const;
  Usage& operator+=(const Usage& other);
};

// What to_json() writes, exactly those keys with non-negative integers; nullopt otherwise.
std::optional<Usage> parse_usage(const nlohmann::json& value);

// The usage counts one answer states: Chat Completions' usage {prompt_tokens,
// completion_tokens, total_tokens} or the Responses API's {input_tokens, output_tokens,
// total_tokens}, in a JSON answer or, for a text/event-stream, in its last event that holds one
// (the Responses API's under "response" in response.completed). Fed the body as it passes.
class UsageReader {
 public:
  explicit UsageReader(std::string_view content_type);
  void feed(std::string_view piece);
  struct Counts {
    std::uint64_t input = 0;
    std::uint64_t output = 0;
    std::uint64_t total = 0;
  };
  // After the last piece: the counts, or nullopt when the answer stated none.
  std::optional<Counts> finish();

 private:
  void read_event(std::string_view data);
  bool stream_ = false;
  bool overflow_ = false;
  std::string kept_;  // the JSON answer, or the stream's unfinished line
  std::optional<Counts> counts_;
};

class Gateway {
 public:
  // `key` is the provider's; `placeholder` the run's stand-in, which the agent holds.
  // `log_fields` go into every log line (request and task ids). Throws TLS_CREDENTIALS_INVALID
  // when ca_file cannot be read.
  Gateway(Upstream upstream, std::string key, std::string placeholder, Budget budget,
          nlohmann::json log_fields);
  ~Gateway();  // ends every connection and waits for them
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Serves the connections to `listener` (made inside the sandbox), at most 16 at once, each on
  // a thread of its own with request bodies of at most 16 MiB (413 REQUEST_SIZE_INVALID), until
  // destroyed.
  void listen(process::Fd listener);

  Usage usage() const;
  // True once a call was refused for the budget.
  bool budget_exhausted() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace aios::gateway
