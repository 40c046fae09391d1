// The plan registry: the owner's deterministic plan for a task, projected against the task's
// binding so every rule of the envelope holds before anything is stored.
#include "aios/bridge.hpp"
#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "bridge/internal.hpp"

namespace aios {
namespace bridge {

using envelope::fail;

GovernedBinding binding_of(const store::TaskRow& row) {
  return GovernedBinding::from_mapping(task::execution_of(row));
}

std::string task_id_of(const nlohmann::json& body) {
  const auto it = body.find("task_id");
  if (it == body.end()) fail(ErrorCode::REQUEST_FIELDS_INVALID);
  if (!it->is_string() || !envelope::is_task_id(it->get_ref<const std::string&>())) {
    fail(ErrorCode::TASK_NOT_FOUND);
  }
  return *it;
}

namespace {

using envelope::kEmptyArray;
using envelope::kEmptyObject;

// A plan that names no scope may do what the task requires plus the governed write.
nlohmann::json default_scope(const store::TaskRow& row) {
  auto scope = task::parse_column(row.required_capabilities_json, nlohmann::json::array());
  scope.push_back("governed.write.branch");
  scope.push_back("governed.write.file");
  return scope;
}

}  // namespace
}  // namespace bridge

namespace {

nlohmann::json plan_summary(const store::PlanRecord& plan, const nlohmann::json& request) {
  return {{"task_id", plan.task_id},
          {"plan_sha256", plan.plan_sha256},
          {"execution_digest", plan.execution_digest},
          {"created_at", plan.created_at},
          {"changes", request.value("change_set", envelope::kEmptyArray).size()}};
}

}  // namespace

nlohmann::json Bridge::plans(const std::string& after_task_id, std::size_t limit) {
  std::vector<store::PlanRecord> found;
  store_.read([&](store::Transaction& tx) { found = tx.plans_after(after_task_id, limit); });
  nlohmann::json listed = nlohmann::json::array();
  for (const auto& plan : found) {
    listed.push_back(
        plan_summary(plan, task::parse_column(plan.plan_json, envelope::kEmptyObject)));
  }
  return {{"plans", std::move(listed)},
          {"next_after", found.empty() ? after_task_id : found.back().task_id}};
}

nlohmann::json Bridge::plan(const std::string& task_id) {
  std::optional<store::PlanRecord> found;
  store_.read([&](store::Transaction& tx) { found = tx.load_plan(task_id); });
  if (!found) envelope::fail(ErrorCode::TASK_NOT_FOUND);
  const auto request = task::parse_column(found->plan_json, envelope::kEmptyObject);
  auto view = plan_summary(*found, request);
  view["plan"] = request;
  return view;
}

std::pair<int, nlohmann::json> Bridge::register_plan(const nlohmann::json& body) {
  envelope::require_known_keys(
      body, {"task_id", "change_set", "verification", "governance", "capability_scope"},
      ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string task_id = bridge::task_id_of(body);
  if (!body.contains("change_set")) envelope::fail(ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string now = format_iso8601(store_.now());
  int status = 201;
  nlohmann::json response;
  store_.write([&](store::Transaction& tx) {
    const auto row = task::load(tx, task_id);
    if (store::is_terminal_status(row.status)) envelope::fail(ErrorCode::TASK_TERMINAL);
    const auto required = task::parse_column(row.required_capabilities_json, bridge::kEmptyArray);
    nlohmann::json request = {
        {"action", "deterministic"},
        {"adapter", "deterministic"},
        {"capability_scope",
         body.contains("capability_scope") ? body["capability_scope"] : bridge::default_scope(row)},
        {"change_set", body["change_set"]},
        {"verification", envelope::get_or(body, "verification", bridge::kEmptyArray)},
        {"governance", envelope::get_or(body, "governance", bridge::kEmptyObject)}};
    const auto envelope = project_execution_envelope(bridge::binding_of(row), request, required);
    resolution::check_verification_allowed(envelope, resolver_.verification_executables());
    // Stored in projected form, so the same plan sent twice is recognised whatever its spelling.
    request["capability_scope"] = envelope["capability_scope"];
    request["governance"] = {
        {"commit_idempotency_key", envelope["governance"]["commit_idempotency_key"]}};
    const std::string plan_sha = digest(request);
    const std::string& execution_digest =
        envelope["execution_digest"].get_ref<const std::string&>();
    response = {{"task_id", task_id},
                {"plan_sha256", plan_sha},
                {"execution_digest", execution_digest},
                {"target_branch", envelope["target_branch"]},
                {"commit_idempotency_key", envelope["governance"]["commit_idempotency_key"]},
                {"changes", envelope["change_set"].size()},
                {"idempotent", false}};
    if (const auto existing = resolution::load_plan(tx, task_id)) {
      if (existing->plan_sha256 != plan_sha) envelope::fail(ErrorCode::EXECUTION_PLAN_CONFLICT);
      status = 200;
      response["idempotent"] = true;
      return;
    }
    tx.insert_plan({task_id, plan_sha, canonical_json(request), execution_digest, now});
    tx.append_event(task_id, "BRIDGE_PLAN_REGISTERED", bridge::kOwnerActor,
                    {{"plan_sha256", plan_sha},
                     {"execution_digest", execution_digest},
                     {"changes", envelope["change_set"].size()},
                     {"verification_commands", envelope["verification"].size()}},
                    now);
  });
  return {status, response};
}

}  // namespace aios
