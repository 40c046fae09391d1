#pragma once
// Certificates made at test time with OpenSSL: a certificate authority (EC P-256, self-signed)
// that issues server and client certificates into a directory, with the names, URIs and dates
// a test asks for (an expired one included). Nothing is kept between runs.
//
// Header-only: any test target that links OpenSSL::SSL may include it.

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "aios/canonical.hpp"

namespace aios::test {

// What to put in an issued certificate.
struct CertificateSpec {
  std::string common_name{};
  std::vector<std::string> dns{};   // subjectAltName DNS names
  std::vector<std::string> ips{};   // subjectAltName IP addresses
  std::vector<std::string> uris{};  // subjectAltName URIs, e.g. "aios:agent:agent-a"
  bool server = false;              // serverAuth; otherwise clientAuth
  long valid_from_days = -1;        // relative to now
  long valid_until_days = 30;
};

// PEM files of one issued certificate: the certificate (leaf) and its private key (0600), and
// the SHA-256 of its DER (lower-case hex), as a server reports it and an agent is bound by.
struct IssuedCertificate {
  std::filesystem::path certificate{};
  std::filesystem::path key{};
  std::string sha256{};
};

class CertificateAuthority {
 public:
  explicit CertificateAuthority(const std::string& name) : key_(new_key()) {
    certificate_.reset(X509_new());
    start(certificate_.get(), name, -1, 365);
    X509_set_issuer_name(certificate_.get(), X509_get_subject_name(certificate_.get()));
    X509_set_pubkey(certificate_.get(), key_.get());
    extend(certificate_.get(), NID_basic_constraints, "critical,CA:TRUE");
    extend(certificate_.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
    if (X509_sign(certificate_.get(), key_.get(), EVP_sha256()) == 0) fail("sign CA");
  }

  // The CA certificate as PEM at `path`.
  void write_certificate(const std::filesystem::path& path) const {
    write_pem(path, [&](FILE* file) { return PEM_write_X509(file, certificate_.get()); });
  }

  // Issues `spec` into `dir`/<name>.pem and `dir`/<name>.key.
  IssuedCertificate issue(const std::filesystem::path& dir, const std::string& name,
                          const CertificateSpec& spec) const {
    const Key key = new_key();
    const Certificate leaf(X509_new());
    start(leaf.get(), spec.common_name.empty() ? name : spec.common_name, spec.valid_from_days,
          spec.valid_until_days);
    X509_set_issuer_name(leaf.get(), X509_get_subject_name(certificate_.get()));
    X509_set_pubkey(leaf.get(), key.get());
    extend(leaf.get(), NID_basic_constraints, "critical,CA:FALSE");
    extend(leaf.get(), NID_key_usage, "critical,digitalSignature");
    extend(leaf.get(), NID_ext_key_usage, spec.server ? "serverAuth" : "clientAuth");
    std::string names;
    const auto add = [&names](const std::string& kind, const std::vector<std::string>& values) {
      for (const auto& value : values) names += (names.empty() ? "" : ",") + kind + ":" + value;
    };
    add("DNS", spec.dns);
    add("IP", spec.ips);
    add("URI", spec.uris);
    if (!names.empty()) extend(leaf.get(), NID_subject_alt_name, names, certificate_.get());
    if (X509_sign(leaf.get(), key_.get(), EVP_sha256()) == 0) fail("sign " + name);
    unsigned char* der = nullptr;
    const int length = i2d_X509(leaf.get(), &der);
    const std::string sha256 = sha256_hex(
        std::string_view(reinterpret_cast<const char*>(der), static_cast<std::size_t>(length)));
    OPENSSL_free(der);
    IssuedCertificate issued{dir / (name + ".pem"), dir / (name + ".key"), sha256};
    write_pem(issued.certificate, [&](FILE* file) { return PEM_write_X509(file, leaf.get()); });
    write_pem(issued.key, [&](FILE* file) {
      return PEM_write_PrivateKey(file, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    });
    std::filesystem::permissions(
        issued.key, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return issued;
  }

 private:
  struct KeyFree {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
  };
  struct CertificateFree {
    void operator()(X509* certificate) const { X509_free(certificate); }
  };
  using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
  using Certificate = std::unique_ptr<X509, CertificateFree>;

  [[noreturn]] static void fail(const std::string& what) {
    throw std::runtime_error("test certificates: " + what);
  }

  static Key new_key() {
    Key key(EVP_EC_gen("P-256"));
    if (!key) fail("EC key");
    return key;
  }

  static void start(X509* certificate, const std::string& common_name, long from_days,
                    long until_days) {
    X509_set_version(certificate, 2);
    unsigned char serial[16];
    RAND_bytes(serial, sizeof serial);
    serial[0] &= 0x7F;
    BIGNUM* number = BN_bin2bn(serial, sizeof serial, nullptr);
    BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate));
    BN_free(number);
    X509_gmtime_adj(X509_getm_notBefore(certificate), from_days * 86400);
    X509_gmtime_adj(X509_getm_notAfter(certificate), until_days * 86400);
    X509_NAME* subject = X509_get_subject_name(certificate);
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                               0);
  }

  static void extend(X509* certificate, int nid, const std::string& value, X509* issuer = nullptr) {
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, issuer != nullptr ? issuer : certificate, certificate, nullptr,
                   nullptr, 0);
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
    if (extension == nullptr) fail("extension " + value);
    X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
  }

  template <typename Write>
  static void write_pem(const std::filesystem::path& path, Write write) {
    FILE* file = std::fopen(path.c_str(), "w");
    if (file == nullptr) fail("open " + path.string());
    const int ok = write(file);
    std::fclose(file);
    if (ok == 0) fail("write " + path.string());
  }

  Key key_;
  Certificate certificate_;
};

}  // namespace aios::test
