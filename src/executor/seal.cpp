// The exchange's seal: HMAC-SHA256 under the root-provisioned exchange key, so only the executor
// can write an answer the worker (or the executor after a restart) takes as done.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>

#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "aios/files.hpp"
#include "aios/sys.hpp"
#include "executor/exchange_core.hpp"

namespace aios::executor {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMinKeyBytes = 32;
// Versioned, so a later change of what is sealed cannot be confused with this one.
constexpr std::string_view kSealContext = "aios.external-agent-exchange.answer.v1";

fs::path sidecar_of(const fs::path& answer) {
  return answer.parent_path() / (answer.filename().string() + ".mac");
}

std::string seal_of(const ExchangeKey& key, const fs::path& answer, std::string_view content) {
  return key.seal(answer.parent_path().filename().string(), answer.filename().string(), content);
}

}  // namespace

ExchangeKey ExchangeKey::from_file(const fs::path& file) {
  ExchangeKey key;
  key.bytes_ = read_secret_file(file, kMinKeyBytes, ErrorCode::EXTERNAL_AGENT_EXCHANGE_KEY_INVALID,
                                ErrorCode::EXTERNAL_AGENT_EXCHANGE_KEY_INVALID);
  return key;
}

std::string ExchangeKey::seal(std::string_view directory, std::string_view name,
                              std::string_view content) const {
  if (empty()) throw Error(ErrorCode::EXTERNAL_AGENT_EXCHANGE_KEY_INVALID);
  // Directory and name are length-prefixed, so no two (directory, name, content) triples give
  // one message.
  std::string message(kSealContext);
  for (const std::string_view part : {directory, name}) {
    message += '\0';
    message += std::to_string(part.size());
    message += ':';
    message += part;
  }
  message += '\0';
  message += content;
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), bytes_.data(), static_cast<int>(bytes_.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac.data(),
           &length) == nullptr) {
    throw Error(ErrorCode::INTERNAL_ERROR, "HMAC failed");
  }
  return hex_of(mac.data(), length);
}

void write_answer(const fs::path& path, std::string_view content, const ExchangeKey& key) {
  // The seal first: an answer that exists is sealed, and a crash between the two leaves only
  // a sidecar, which answers nothing.
  files::write_atomic(sidecar_of(path), seal_of(key, path, content) + "\n");
  files::write_atomic(path, content);
}

std::optional<std::string> read_answer(const fs::path& path, std::size_t max_bytes,
                                       const ExchangeKey& key) {
  if (!files::exists(path)) return std::nullopt;
  const auto answer = files::read_file(path, max_bytes);
  const auto sidecar = files::read_file(sidecar_of(path), 256);
  if (answer.status != files::ReadStatus::ok || sidecar.status != files::ReadStatus::ok ||
      !constant_time_equal(sidecar.content, seal_of(key, path, answer.content) + "\n")) {
    throw Error(ErrorCode::EXTERNAL_AGENT_RESULT_MAC_INVALID, path.filename().string());
  }
  return answer.content;
}

}  // namespace aios::executor
