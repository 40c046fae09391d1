#pragma once
// Canonical execution-envelope resolution (the seed's CanonicalBridgeExecutionResolver
// contract), one concrete module that the task plane's claims, the scheduler's create check and
// the Bridge's resolve route all call: a registered plan wins; a read-only envelope is replayed
// exactly as persisted; a task projected as deterministic is its own registered plan; anything
// else is refused. It reads the task's plan in the caller's transaction and writes only its
// audit row, so a claim is read in one place: fleet calls resolution, never the other way round.

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "aios/store.hpp"

namespace aios::resolution {

// A resolved envelope and where it came from: "registered_plan", "persisted_replay" or
// "task_plan".
struct Resolved {
  nlohmann::json envelope;
  std::string source;
};

// The task's registered plan: the deterministic execution request it was projected from.
struct Plan {
  std::string plan_sha256;
  nlohmann::json request;
  std::string execution_digest;
};
std::optional<Plan> load_plan(store::Transaction& tx, const std::string& task_id);

// VERIFICATION_EXECUTABLE_NOT_ALLOWED unless every command of the envelope starts an
// executable on the deployment's allowlist.
void check_verification_allowed(const nlohmann::json& envelope,
                                const std::set<std::string>& allowed);

// Required capabilities as a worker's resolve sends them, normalised
// (REQUIRED_CAPABILITIES_INVALID).
nlohmann::json required_of(const nlohmann::json& capabilities);

class Resolver {
 public:
  // `verification_executables`: the absolute executables verification commands may start.
  explicit Resolver(std::set<std::string> verification_executables);

  const std::set<std::string>& verification_executables() const {
    return verification_executables_;
  }

  // The envelope a claim of `row` answers with: what the worker's own resolve would ask for
  // (the task's required capabilities and, unless it is deterministic, its persisted
  // `execution` to replay). `granted`: the claimant agent's grant, which must cover the
  // envelope (TASK_NOT_FOUND); nullptr: the owner asking why a task waits. Throws the code a
  // claim-next passes the task over with, TASK_ENVELOPE_DRIFT when it resolves to another digest
  // than the task's (a plan registered since, awaiting the owner's rebind).
  Resolved for_claim(store::Transaction& tx, const store::TaskRow& row,
                     const nlohmann::json& execution, const store::Names* granted) const;

  // The Bridge's route: the envelope for `required` capabilities, replaying `execution` when
  // given. `persisted`: the task's execution as stored.
  Resolved resolve(store::Transaction& tx, const store::TaskRow& row,
                   const nlohmann::json& persisted, const nlohmann::json& required,
                   const nlohmann::json* execution, const store::Names* granted) const;

  // At create, before anything is stored: `execution` is the projection just validated, so
  // only what resolution asks beyond validation is checked (every projected envelope resolves
  // without a plan: replayed, or a deterministic task's own plan). Throws the resolution's own
  // code when no claim could ever resolve it under this configuration.
  void check_resolvable(const store::TaskRow& row, const nlohmann::json& execution) const;

  // Writes BRIDGE_ENVELOPE_RESOLVED for `resolution`, once per task, attempt, worker and
  // digest.
  static void record(store::Transaction& tx, const store::Resolution& resolution,
                     const Resolved& resolved, const std::string& now_iso);

 private:
  Resolved resolve_unplanned(const nlohmann::json& persisted, const nlohmann::json& required,
                             const nlohmann::json* execution) const;

  std::set<std::string> verification_executables_;
};

}  // namespace aios::resolution
