#pragma once
// What a daemon's --db (a StoreLocation) names: the options of one backend, for the code that
// opens it (open_store) and the code that copies between backends (migrate.cpp).

#include <variant>

#include "aios/store.hpp"

namespace aios::store {

// STORE_URL_INVALID for anything that is neither a path, a sqlite:/// URL nor a postgresql://
// URL; the PostgreSQL password file is the location's own, else the systemd credential.
std::variant<SqliteOptions, PostgresOptions> resolve_location(const StoreLocation& location);

}  // namespace aios::store
