#pragma once
// The Task API's readers of path segments and query parameters.

#include <cstdint>
#include <string>
#include <string_view>

#include "aios/http.hpp"

namespace aios::taskapi {

// The task id a path segment or parameter names; TASK_NOT_FOUND for text outside the task-id
// pattern, which can name no task.
std::string task_id_of(std::string_view text);

// The integer query parameter `name` in [min, max] (`fallback` when absent); LIMIT_INVALID.
std::int64_t query_int(const http::Request& request, const char* name, std::int64_t fallback,
                       std::int64_t min, std::int64_t max);

}  // namespace aios::taskapi
