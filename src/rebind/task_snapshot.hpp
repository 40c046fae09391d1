#pragma once
// Checking a task against the owner's rebind request: the seed's _load_and_validate, run once
// for the snapshot before the Bridge is asked and again under the write lock. Works on the task
// plane's schema and on the seed's minimal one.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "aios/rebind.hpp"
#include "aios/store.hpp"

namespace aios::rebind {

struct TaskSnapshot {
  std::optional<std::string> claimed_by;  // NULL and "" differ in the CAS predicate
  nlohmann::json metadata;                // the whole metadata object
  nlohmann::json old_execution;           // metadata.execution, validated
  nlohmann::json required_capabilities;   // the resolver's argument: an array of strings
};

// Loads `task_id` through `transaction` and checks, in the seed's order: the schema, that the
// task exists, status, revision and attempt, no lease, the verification digest, the stored
// envelope (valid, the expected old digest, a source_capture action) and its projection's
// digest. Throws the codes ExecutionRebindStore::rebind lists for these steps.
TaskSnapshot load_and_validate(store::Transaction& transaction, const std::string& task_id,
                               const ExecutionRebindRequest& request);

}  // namespace aios::rebind
