#pragma once
// Field-level rules shared by the binding, envelope and task projections. Each check throws
// aios::Error with the code it is given, so every caller keeps its own wire codes.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "aios/error.hpp"

namespace aios::envelope {

[[noreturn]] void fail(ErrorCode code);

// `value` when it is a JSON string, else `code`.
const std::string& require_string(const nlohmann::json& value, ErrorCode code);

// Python's _string: a string that is not blank after str.strip(); returns the stripped text.
std::string require_text(const nlohmann::json& value, ErrorCode code);

// A JSON integer (never a bool or a float) within [min, max].
std::int64_t require_int(const nlohmann::json& value, std::int64_t min, std::int64_t max,
                         ErrorCode code);

// `object` is a JSON object whose keys are exactly `keys`.
void require_exact_keys(const nlohmann::json& object, std::initializer_list<std::string_view> keys,
                        ErrorCode code);

// `object` is a JSON object whose keys all appear in `keys`.
void require_known_keys(const nlohmann::json& object, std::initializer_list<std::string_view> keys,
                        ErrorCode code);

// `key` of `object`, or `fallback` when absent or null (Python's `get(key) or default` for the
// null case only: an explicit wrong type is still refused by the caller).
const nlohmann::json& get_or(const nlohmann::json& object, std::string_view key,
                             const nlohmann::json& fallback);
// The result may be the fallback itself, so a temporary fallback would dangle.
const nlohmann::json& get_or(const nlohmann::json& object, std::string_view key,
                             const nlohmann::json&& fallback) = delete;

// The seed's identifier shape: an ASCII letter or digit, then `min_rest`..`max_rest` characters
// that are letters, digits or one of `extra`.
bool is_identifier(std::string_view text, std::string_view extra, std::size_t min_rest,
                   std::size_t max_rest);

// TASK_RE ^[A-Za-z0-9][A-Za-z0-9._:-]{2,179}$ and KEY_RE ^[A-Za-z0-9][A-Za-z0-9._:-]{7,159}$.
bool is_task_id(std::string_view text);
bool is_idempotency_key(std::string_view text);

// A relative path inside a worktree: no leading '/', no '\', no NUL or control character, no
// empty, '.' or '..' component (a lone "." is allowed only when `allow_dot`), at most 1024 bytes.
bool is_safe_relative_path(std::string_view path, bool allow_dot);

// True when a field name looks like it carries a secret (token, secret, password, credential,
// authorization, api_key, apikey), after Python-compatible lower-casing.
bool is_secret_field_name(std::string_view name);

// True when `value` holds an object key anywhere (at any depth) that is_secret_field_name.
bool has_secret_field(const nlohmann::json& value);

// UTF-8 size of the canonical form.
std::size_t canonical_size(const nlohmann::json& value);

}  // namespace aios::envelope
