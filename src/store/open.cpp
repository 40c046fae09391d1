// Which backend a daemon's --db names.
#include <cstdlib>
#include <string_view>
#include <utility>
#include <variant>

#include "aios/error.hpp"
#include "aios/store.hpp"
#include "store/location.hpp"

namespace aios::store {
namespace {

constexpr std::string_view kSqliteScheme = "sqlite://";
// The systemd credential (LoadCredential=) that holds the PostgreSQL password.
constexpr const char* kPasswordCredential = "aios-task-db-password";

std::filesystem::path password_file(const StoreLocation& location) {
  if (!location.password_file.empty()) return location.password_file;
  const char* credentials = std::getenv("CREDENTIALS_DIRECTORY");
  if (credentials == nullptr || *credentials == '\0') return {};
  const auto file = std::filesystem::path(credentials) / kPasswordCredential;
  std::error_code error;
  return std::filesystem::exists(file, error) ? file : std::filesystem::path();
}

}  // namespace

std::variant<SqliteOptions, PostgresOptions> resolve_location(const StoreLocation& location) {
  const std::string_view url = location.url;
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    return PostgresOptions{.url = location.url,
                           .password_file = password_file(location),
                           .connections = location.connections,
                           .migrate = location.migrate};
  }
  std::filesystem::path path(location.url);
  if (url.starts_with(kSqliteScheme)) {
    // sqlite:///var/lib/x.sqlite3: the path after the scheme, which must be absolute.
    path = std::string(url.substr(kSqliteScheme.size()));
    if (!path.is_absolute()) {
      throw Error(ErrorCode::STORE_URL_INVALID, "a sqlite:// URL takes an absolute path");
    }
  } else if (url.empty() || url.find("://") != std::string_view::npos) {
    throw Error(ErrorCode::STORE_URL_INVALID);
  }
  return SqliteOptions{
      .path = path, .connections = location.connections, .migrate = location.migrate};
}

std::unique_ptr<Store> open_store(const StoreLocation& location, const Clock& clock) {
  auto options = resolve_location(location);
  if (auto* postgres = std::get_if<PostgresOptions>(&options)) {
    return open_postgres_store(std::move(*postgres), clock);
  }
  return open_sqlite_store(std::move(std::get<SqliteOptions>(options)), clock);
}

}  // namespace aios::store
