#pragma once
// The profile rules shared by runtime profiles and the engineering broker's backend
// configurations: one place decides what a root-owned command configuration may say.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "aios/executor.hpp"

namespace aios::executor {

// Reads argv of `value` into `profile` by the seed's rules (allowlisted executable, no shell,
// no secret argument, node only with a script); then, after the caller's modes,
// load_profile_limits reads timeout_seconds, max_output_bytes, environment and credential_env.
// Both throw the EXTERNAL_AGENT_* code of the first rule that fails, taking object members in
// document order (parse_json_ordered), as the seed's dict iteration does.
void load_profile_argv(const nlohmann::ordered_json& value,
                       const std::vector<std::filesystem::path>& executable_roots,
                       RuntimeProfile& profile);
void load_profile_limits(const nlohmann::ordered_json& value, RuntimeProfile& profile);

}  // namespace aios::executor
