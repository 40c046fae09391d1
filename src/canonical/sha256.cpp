#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include "aios/canonical.hpp"
#include "aios/error.hpp"

namespace aios {

std::string hex_of(const unsigned char* data, std::size_t size) {
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) {
    hex += kHex[data[i] >> 4];
    hex += kHex[data[i] & 0x0F];
  }
  return hex;
}

namespace {

// Fetched once: EVP_sha256() has every digest look the implementation up in the provider store
// again (a lock, a reference count and a context allocated a call), which cost the scheduler
// more than the hashing of what it digests per request.
const EVP_MD* sha256_md() {
  static EVP_MD* const md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (fetched == nullptr) throw Error(ErrorCode::INTERNAL_ERROR, "EVP_MD_fetch(SHA256) failed");
    return fetched;
  }();
  return md;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  // One context a thread, set up again by each digest.
  thread_local const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(
      EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (context == nullptr || EVP_DigestInit_ex2(context.get(), sha256_md(), nullptr) != 1 ||
      EVP_DigestUpdate(context.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(context.get(), md, &length) != 1) {
    throw Error(ErrorCode::INTERNAL_ERROR, "sha256 failed");
  }
  return hex_of(md, length);
}

struct Sha256::Context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  if (context_->md == nullptr || EVP_DigestInit_ex2(context_->md, sha256_md(), nullptr) != 1) {
    throw Error(ErrorCode::INTERNAL_ERROR, "EVP_DigestInit_ex(sha256) failed");
  }
}

Sha256::~Sha256() = default;

void Sha256::update(std::string_view data) {
  if (EVP_DigestUpdate(context_->md, data.data(), data.size()) != 1) {
    throw Error(ErrorCode::INTERNAL_ERROR, "EVP_DigestUpdate(sha256) failed");
  }
}

std::string Sha256::finish() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_->md, md, &length) != 1) {
    throw Error(ErrorCode::INTERNAL_ERROR, "EVP_DigestFinal_ex(sha256) failed");
  }
  return hex_of(md, length);
}

bool is_sha256_hex(std::string_view value) {
  return value.size() == 64 && std::all_of(value.begin(), value.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace aios
