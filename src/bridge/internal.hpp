#pragma once
// Shared pieces of the Bridge's implementation. Call only inside a store transaction.

#include <nlohmann/json.hpp>
#include <string>

#include "aios/envelope.hpp"
#include "aios/store.hpp"
#include "aios/task.hpp"

namespace aios::bridge {

// Who acted, for the audit trail: the agent's id, or "owner".
inline constexpr const char* kOwnerActor = "owner";

// The task's binding, read from its persisted envelope.
GovernedBinding binding_of(const store::TaskRow& row);

// WRITER_LEASE_INVALID unless `writer_lease_id` is an open writer lease taken by the task's
// current claim (the attempt that holds the task lease now).
void check_writer_lease(store::Transaction& tx, const store::TaskRow& row,
                        const std::string& writer_lease_id);

// The task id of a body, or REQUEST_FIELDS_INVALID / TASK_NOT_FOUND.
std::string task_id_of(const nlohmann::json& body);

}  // namespace aios::bridge
