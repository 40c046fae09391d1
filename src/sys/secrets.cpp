#include <openssl/rand.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/sys.hpp"

namespace aios {

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> buffer(bytes);
  if (RAND_bytes(buffer.data(), static_cast<int>(buffer.size())) != 1) {
    throw Error(ErrorCode::INTERNAL_ERROR, "RAND_bytes failed");
  }
  return hex_of(buffer.data(), buffer.size());
}

std::string credential_file(std::string_view name) {
  const char* directory = std::getenv("CREDENTIALS_DIRECTORY");
  return std::string(directory != nullptr ? directory : "/run/credentials") + "/" +
         std::string(name);
}

std::string read_secret_file(const std::filesystem::path& path, std::size_t min_length,
                             ErrorCode unavailable, ErrorCode invalid) {
  struct stat info {};
  // lstat, not stat: a symlink could point the daemon at a file the operator never meant.
  if (lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) throw Error(unavailable);
  // A secret another user could read (or replace) is no longer the owner's alone.
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    throw Error(ErrorCode::SECRET_FILE_MODE_INVALID,
                path.string() + " is readable or writable by others");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(unavailable);
  const std::string raw{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  const std::string value(python_strip(raw));
  if (value.size() < min_length) throw Error(invalid);
  return value;
}

}  // namespace aios
