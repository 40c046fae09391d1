// project_execution_envelope / validate_execution_envelope for the deterministic and
// source_capture actions (agent_runtime has its own suite), digests and tampering.

#include "aios/envelope.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "test_fixtures.hpp"

namespace aios::envelope_test {
namespace {

// The seed's two rebind-test envelopes written out field by field. Their digests were computed
// by Python: sha256(json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)).
Json literal_old_envelope() {
  return Json::parse(R"({
    "schema": "aios.online-agent.execution.v1",
    "task_id": "task-rebind-a", "job_id": "job-rebind-a", "repository": "aios/aios",
    "base_oid": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "expected_branch_oid": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "target_branch": "agent/task-rebind-a", "branch_mode": "CREATE_NEW", "generation": 1,
    "idempotency_key": "task-rebind-a-binding-v1",
    "action": "source_capture", "adapter": "compact_interface_map",
    "capability_scope": ["git.read", "git.test", "governed.write.branch", "governed.write.file"],
    "change_set": [], "verification": [], "source_signals": [], "runtime_input": {},
    "governance": {"writer_lease": false},
    "workspace": {"authority_git_dir": "/data/aios-gitops/repo.git"},
    "execution_digest": "42fa8ab4b00f2bc30277d0711e7d2708721cfcece8c7db22b980cf677dab449e"
  })");
}

Json literal_new_envelope() {
  return Json::parse(R"({
    "schema": "aios.online-agent.execution.v1",
    "task_id": "task-rebind-a", "job_id": "job-rebind-a", "repository": "aios/aios",
    "base_oid": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "expected_branch_oid": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "target_branch": "agent/task-rebind-a", "branch_mode": "CREATE_NEW", "generation": 1,
    "idempotency_key": "task-rebind-a-binding-v1",
    "action": "deterministic", "adapter": "deterministic",
    "capability_scope": ["git.read", "git.test", "governed.write.branch", "governed.write.file"],
    "change_set": [
      {"path": "active-runtime/app/example.py", "operation": "write_file", "content": "VALUE=1\\n"}
    ],
    "verification": [
      {"label": "unit", "argv": ["/usr/bin/python3", "-m", "pytest", "-q"], "cwd": ".",
       "timeout_seconds": 120}
    ],
    "source_signals": [], "runtime_input": {},
    "governance": {"commit_idempotency_key": "task-rebind-a-commit-v1", "writer_lease": true},
    "workspace": {"authority_git_dir": "/data/aios-gitops/repo.git"},
    "execution_digest": "01e08a589825523bdea1568616f93df0ac7e6162112d8b58bc2448b24e369e00"
  })");
}

std::string project_code(const Json& request, const Json& required = Json::array()) {
  return code_of([&] { project_execution_envelope(rebind_binding(), request, required); });
}

std::string validate_code(const Json& envelope, const EnvelopeChecks& checks = {}) {
  return code_of([&] { validate_execution_envelope(envelope, checks); });
}

Json without(Json value, const std::string& key) {
  value.erase(key);
  return value;
}

Json delete_file(const std::string& path) {
  return {{"path", path}, {"operation", "delete_file"}};
}

Json command(const Json& argv) {
  return {{"label", "unit"}, {"argv", argv}, {"cwd", "."}, {"timeout_seconds", 120}};
}

const Json kPytest = Json::array({"/usr/bin/python3", "-m", "pytest", "-q"});

TEST(EnvelopeTest, SeedOldEnvelopeProjectsAndValidates) {
  // Given the seed's source_capture request, we should project exactly the literal envelope
  // (digest included) and validate it against its binding.
  const Json envelope = old_envelope();
  EXPECT_EQ(envelope, literal_old_envelope());
  EXPECT_EQ(envelope.size(), 20U);
  EXPECT_EQ(validate_execution_envelope(envelope, {.binding = nullptr}), envelope);
  const GovernedBinding binding = rebind_binding();
  EXPECT_EQ(validate_code(envelope, {.binding = &binding}), kOk);
}

TEST(EnvelopeTest, SeedNewEnvelopeProjectsAndValidates) {
  // Given the seed's deterministic plan, we should project exactly the literal envelope with
  // its change set, verification and commit key, and validate it against its binding.
  const Json envelope = new_envelope();
  EXPECT_EQ(envelope, literal_new_envelope());
  const GovernedBinding binding = rebind_binding();
  EXPECT_EQ(validate_code(envelope, {.binding = &binding}), kOk);
  EXPECT_EQ(validate_code(literal_new_envelope()), kOk);
}

TEST(EnvelopeTest, DigestIsSha256OfCanonicalFormWithoutTheDigest) {
  // Given projected envelopes, we should find execution_digest = sha256(canonical(envelope
  // without execution_digest)), computed here independently.
  for (const Json& envelope : {old_envelope(), new_envelope(), drift_envelope(),
                               project_execution_envelope(replay_binding(), replay_request())}) {
    SCOPED_TRACE(envelope["action"].dump());
    Json body = envelope;
    body.erase("execution_digest");
    const std::string expected = sha256_hex(canonical_json(body));
    EXPECT_EQ(envelope["execution_digest"], expected);
    EXPECT_EQ(aios::digest(body), expected);
    EXPECT_EQ(execution_digest_of(envelope), expected);
    EXPECT_TRUE(is_sha256_hex(expected));
  }
}

TEST(EnvelopeTest, ExecutionDigestOfIgnoresTheDeclaredDigest) {
  // Given an envelope whose declared digest is wrong, we should still compute the body's digest.
  const Json envelope = new_envelope();
  const Json wrong = with(envelope, "/execution_digest", std::string(64, '0'));
  EXPECT_EQ(execution_digest_of(wrong), envelope["execution_digest"]);
  EXPECT_EQ(execution_digest_of(without(envelope, "execution_digest")),
            envelope["execution_digest"]);
}

TEST(EnvelopeTest, ProjectionIsDeterministic) {
  // Given the same binding and request twice, we should project the same envelope and digest.
  EXPECT_EQ(new_envelope(), new_envelope());
  EXPECT_EQ(old_envelope()["execution_digest"], old_envelope()["execution_digest"]);
}

TEST(EnvelopeTest, DigestChangesWithEveryPart) {
  // Given one part of the request or binding changed, we should get a digest no other variant
  // has.
  struct Variant {
    std::string name;
    Json binding;
    Json request;
  };
  const Json b = rebind_binding_mapping();
  const Json r = new_request();
  Json update_mode = b;
  update_mode["branch_mode"] = "UPDATE_EXISTING";
  Json other_tip = update_mode;
  other_tip["expected_branch_oid"] = std::string(40, 'b');
  Json two_changes = r;
  two_changes["change_set"].push_back(write_file("docs/extra.md"));
  const std::vector<Variant> variants = {
      {"seed", b, r},
      {"content", b, with(r, "/change_set/0/content", "VALUE=2\\n")},
      {"path", b, with(r, "/change_set/0/path", "active-runtime/app/other.py")},
      {"delete", b, with(r, "/change_set/0", delete_file("active-runtime/app/example.py"))},
      {"two changes", b, two_changes},
      {"timeout", b, with(r, "/verification/0/timeout_seconds", 121)},
      {"label", b, with(r, "/verification/0/label", "unit-2")},
      {"argv", b, with(r, "/verification/0/argv/3", "-x")},
      {"cwd", b, with(r, "/verification/0/cwd", "active-runtime")},
      {"no verification", b, without(r, "verification")},
      {"scope", b, with(r, "/capability_scope", Json::array({"git.read", "git.test"}))},
      {"commit key", b, with(r, "/governance/commit_idempotency_key", "task-rebind-a-commit-v2")},
      {"default commit key", b, without(r, "governance")},
      {"task", with(b, "/task_id", "task-rebind-b"), r},
      {"job", with(b, "/job_id", "job-rebind-b"), r},
      {"repository", with(b, "/repository", "aios/other"), r},
      {"target", with(b, "/target_branch", "agent/task-rebind-b"), r},
      {"mode", update_mode, r},
      {"tip", other_tip, r},
      {"generation", with(b, "/generation", 2), r},
      {"binding key", with(b, "/idempotency_key", "task-rebind-a-binding-v2"), r},
  };
  std::set<std::string> digests;
  for (const Variant& variant : variants) {
    SCOPED_TRACE(variant.name);
    const Json envelope =
        project_execution_envelope(GovernedBinding::from_mapping(variant.binding), variant.request);
    EXPECT_TRUE(digests.insert(envelope["execution_digest"].get<std::string>()).second);
  }
  EXPECT_EQ(digests.size(), variants.size());
}

TEST(EnvelopeTest, DefaultCommitKeyFollowsThePlan) {
  // Given a deterministic request without a commit key, we should derive "commit-" + 32 hex
  // digits that stay the same for the same plan and change with the change set or verification.
  const auto key_of = [](const Json& request) {
    return project_execution_envelope(rebind_binding(),
                                      request)["governance"]["commit_idempotency_key"]
        .get<std::string>();
  };
  const Json request = without(new_request(), "governance");
  const std::string key = key_of(request);
  ASSERT_EQ(key.size(), 39U);
  EXPECT_EQ(key.substr(0, 7), "commit-");
  EXPECT_EQ(key.substr(7).find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(key_of(request), key);
  EXPECT_EQ(key_of(with(request, "/governance", Json())), key);
  EXPECT_EQ(key_of(with(request, "/governance", {{"commit_idempotency_key", nullptr}})), key);
  EXPECT_NE(key_of(with(request, "/change_set/0/content", "VALUE=2\\n")), key);
  EXPECT_NE(key_of(with(request, "/change_set/0/path", "active-runtime/app/b.py")), key);
  EXPECT_NE(key_of(with(request, "/verification/0/timeout_seconds", 60)), key);
  EXPECT_NE(key_of(without(request, "verification")), key);
  const Json envelope = project_execution_envelope(rebind_binding(), request);
  EXPECT_EQ(envelope["governance"]["writer_lease"], true);
  // Giving the derived key explicitly is the same plan.
  EXPECT_EQ(project_execution_envelope(rebind_binding(),
                                       with(request, "/governance",
                                            {{"commit_idempotency_key", key}}))["execution_digest"],
            envelope["execution_digest"]);
}

struct TamperCase {
  std::string pointer;
  Json value;
  std::string expected;
};

void expect_tampering(const Json& envelope, const std::vector<TamperCase>& cases) {
  for (const TamperCase& c : cases) {
    SCOPED_TRACE(c.pointer + " = " + c.value.dump());
    const Json tampered = with(envelope, c.pointer, c.value);
    EXPECT_EQ(validate_code(tampered), c.expected);
    if (c.expected == "EXECUTION_DIGEST_MISMATCH") {
      // Nothing but the digest stood in the way: the resealed envelope is valid.
      EXPECT_EQ(validate_code(reseal(tampered)), kOk);
    }
  }
}

TEST(EnvelopeTest, TamperingADeterministicEnvelopeIsRefused) {
  // Given the seed's deterministic envelope with one field changed after projection, we should
  // refuse it with the digest mismatch, or with the field's own code when a rule sees it first.
  const std::string mismatch = "EXECUTION_DIGEST_MISMATCH";
  const std::string digest = new_envelope()["execution_digest"].get<std::string>();
  std::string upper = digest;
  for (char& c : upper) c = (c >= 'a' && c <= 'f') ? static_cast<char>(c - 'a' + 'A') : c;
  expect_tampering(
      new_envelope(),
      {
          {"/schema", "aios.online-agent.execution.v2", "EXECUTION_SCHEMA_INVALID"},
          {"/task_id", "task-rebind-b", mismatch},
          {"/task_id", "x", "BINDING_TASK_ID_INVALID"},
          {"/job_id", "job-other", mismatch},
          {"/repository", "aios/other", mismatch},
          {"/base_oid", std::string(40, 'b'), "BINDING_EXPECTED_BRANCH_OID_INVALID"},
          {"/expected_branch_oid", std::string(40, 'b'), "BINDING_EXPECTED_BRANCH_OID_INVALID"},
          {"/target_branch", "agent/other-branch", mismatch},
          {"/target_branch", "main", "BINDING_TARGET_BRANCH_PROTECTED"},
          {"/branch_mode", "UPDATE_EXISTING", mismatch},
          {"/generation", 2, mismatch},
          {"/generation", true, "BINDING_GENERATION_INVALID"},
          {"/idempotency_key", "task-rebind-a-binding-v2", mismatch},
          {"/action", "source_capture", "SOURCE_CAPTURE_MUTATION_DENY"},
          {"/action", "agent_runtime", "AGENT_RUNTIME_MUTATION_DENY"},
          {"/action", "shell", "EXECUTION_ACTION_UNSUPPORTED"},
          {"/action", nullptr, "EXECUTION_ACTION_UNSUPPORTED"},
          {"/adapter", "compact_interface_map", "EXECUTION_ADAPTER_INVALID"},
          {"/adapter", 1, "EXECUTION_ADAPTER_INVALID"},
          {"/capability_scope", Json::array({"git.read"}), mismatch},
          {"/capability_scope", Json::array({"git.test", "git.read"}), "CAPABILITY_SCOPE_INVALID"},
          {"/capability_scope", Json::array({"GIT.READ"}), "CAPABILITY_SCOPE_INVALID"},
          {"/capability_scope", Json::array({"git.read", "git.read"}), "CAPABILITY_SCOPE_INVALID"},
          {"/capability_scope", Json::array(), "CAPABILITY_SCOPE_REQUIRED"},
          {"/capability_scope", Json::array({"root"}), "CAPABILITY_UNKNOWN"},
          {"/capability_scope", "git.read", "CAPABILITY_SCOPE_INVALID"},
          {"/change_set/0/content", "VALUE=2\\n", mismatch},
          {"/change_set/0/path", ".git/hooks/pre-commit", "CHANGE_PATH_GIT_DENY"},
          {"/change_set", Json::array(), "CHANGE_SET_INVALID"},
          {"/verification", Json::array(), mismatch},
          {"/verification/0/timeout_seconds", 121, mismatch},
          {"/verification/0/argv", Json::array({"/bin/sh", "-c", "true"}),
           "VERIFICATION_SHELL_DENY"},
          {"/source_signals", Json::array({"x"}), "DETERMINISTIC_SOURCE_SIGNALS_DENY"},
          {"/runtime_input", {{"goal", "x"}}, "DETERMINISTIC_RUNTIME_INPUT_DENY"},
          {"/governance/commit_idempotency_key", "task-rebind-a-commit-v2", mismatch},
          {"/governance/commit_idempotency_key", "bad", "GOVERNANCE_INVALID"},
          {"/governance/writer_lease", false, "GOVERNANCE_INVALID"},
          {"/governance", {{"writer_lease", false}}, "GOVERNANCE_INVALID"},
          {"/workspace/authority_git_dir", "/tmp/repo.git", "EXECUTION_WORKSPACE_INVALID"},
          {"/workspace", Json::object(), "EXECUTION_WORKSPACE_INVALID"},
          {"/execution_digest", std::string(64, '0'), mismatch},
          {"/execution_digest", upper, "EXECUTION_DIGEST_INVALID"},
          {"/execution_digest", digest.substr(1), "EXECUTION_DIGEST_INVALID"},
          {"/execution_digest", 5, "EXECUTION_DIGEST_INVALID"},
          {"/execution_digest", "", "EXECUTION_DIGEST_INVALID"},
      });
}

TEST(EnvelopeTest, TamperingASourceCaptureEnvelopeIsRefused) {
  // Given the seed's source_capture envelope with one field changed after projection, we should
  // refuse it with the digest mismatch or the read-only rule that sees it first.
  const std::string mismatch = "EXECUTION_DIGEST_MISMATCH";
  expect_tampering(
      old_envelope(),
      {
          {"/adapter", "deterministic", "EXECUTION_ADAPTER_INVALID"},
          {"/adapter", "hermes", "EXECUTION_ADAPTER_INVALID"},
          {"/adapter", "source_capture", mismatch},
          {"/action", "deterministic", "EXECUTION_ADAPTER_INVALID"},
          {"/source_signals", Json::array({"x"}), mismatch},
          {"/source_signals", Json::array({" x"}), "SOURCE_CAPTURE_SIGNALS_INVALID"},
          {"/source_signals", Json::array({"x", "x"}), "SOURCE_CAPTURE_SIGNALS_INVALID"},
          {"/runtime_input", {{"goal", "x"}}, "SOURCE_CAPTURE_RUNTIME_INPUT_DENY"},
          {"/change_set", Json::array({write_file("x.py")}), "SOURCE_CAPTURE_MUTATION_DENY"},
          {"/verification", Json::array({command(kPytest)}), "SOURCE_CAPTURE_MUTATION_DENY"},
          {"/governance", {{"writer_lease", true}}, "GOVERNANCE_INVALID"},
          {"/governance",
           {{"writer_lease", false}, {"commit_idempotency_key", "task-rebind-a-commit-v1"}},
           "GOVERNANCE_INVALID"},
          {"/capability_scope", Json::array({"git.read"}), mismatch},
      });
}

TEST(EnvelopeTest, ResealedBindingDriftIsCaughtByTheBindingCheck) {
  // Given an envelope whose binding field was changed and its digest recomputed, we should
  // refuse it with EXECUTION_BINDING_MISMATCH when validated against the task's binding.
  const GovernedBinding binding = rebind_binding();
  Json update = with(new_envelope(), "/branch_mode", "UPDATE_EXISTING");
  update["expected_branch_oid"] = std::string(40, 'b');
  const std::vector<std::pair<std::string, Json>> cases = {
      {"task_id", with(new_envelope(), "/task_id", "task-rebind-b")},
      {"job_id", with(new_envelope(), "/job_id", "job-other")},
      {"repository", with(new_envelope(), "/repository", "aios/other")},
      {"target_branch", with(new_envelope(), "/target_branch", "agent/other-branch")},
      {"branch_mode", update},
      {"generation", with(new_envelope(), "/generation", 2)},
      {"idempotency_key", with(new_envelope(), "/idempotency_key", "task-rebind-a-binding-v2")},
  };
  for (const auto& [name, tampered] : cases) {
    SCOPED_TRACE(name);
    EXPECT_EQ(validate_code(reseal(tampered)), kOk);
    EXPECT_EQ(validate_code(reseal(tampered), {.binding = &binding}), "EXECUTION_BINDING_MISMATCH");
  }
}

TEST(EnvelopeTest, EnvelopeFieldsMustBeExactlyTheSchema) {
  // Given an envelope with a field missing or an unknown field, we should refuse it with
  // EXECUTION_ENVELOPE_FIELDS_INVALID, resealed or not.
  const Json envelope = new_envelope();
  for (const auto& item : envelope.items()) {
    SCOPED_TRACE("missing " + item.key());
    const Json missing = without(envelope, item.key());
    EXPECT_EQ(validate_code(missing), "EXECUTION_ENVELOPE_FIELDS_INVALID");
    if (item.key() != "execution_digest") {
      EXPECT_EQ(validate_code(reseal(missing)), "EXECUTION_ENVELOPE_FIELDS_INVALID");
    }
  }
  for (const char* extra : {"extra", "required_capabilities", "metadata", "Schema"}) {
    SCOPED_TRACE(std::string("extra ") + extra);
    Json added = envelope;
    added[extra] = nullptr;
    EXPECT_EQ(validate_code(added), "EXECUTION_ENVELOPE_FIELDS_INVALID");
    EXPECT_EQ(validate_code(reseal(added)), "EXECUTION_ENVELOPE_FIELDS_INVALID");
  }
}

TEST(EnvelopeTest, NonObjectEnvelopeIsRefused) {
  // Given an envelope that is not a JSON object, we should refuse it with
  // EXECUTION_ENVELOPE_INVALID.
  for (const Json& value : {Json(), Json("envelope"), Json::array({new_envelope()}), Json(1)}) {
    SCOPED_TRACE(value.dump().substr(0, 40));
    EXPECT_EQ(validate_code(value), "EXECUTION_ENVELOPE_INVALID");
  }
}

TEST(EnvelopeTest, WrongSchemaIsRefused) {
  // Given an envelope of another schema, even resealed, we should refuse it by its schema.
  for (const Json& schema : {Json("aios.online-agent.execution.v0"), Json(""), Json(1), Json()}) {
    SCOPED_TRACE(schema.dump());
    EXPECT_EQ(validate_code(reseal(with(old_envelope(), "/schema", schema))),
              "EXECUTION_SCHEMA_INVALID");
  }
}

TEST(EnvelopeTest, SeedBindingDriftIsRefused) {
  // Given the seed's test_rebind_rejects_binding_drift envelope (another job_id), we should
  // accept it on its own and refuse it against the task's binding.
  const Json different = drift_envelope();
  const GovernedBinding task_binding = rebind_binding();
  const GovernedBinding drift_binding = GovernedBinding::from_mapping(drift_binding_mapping());
  EXPECT_EQ(different["job_id"], "job-other");
  EXPECT_EQ(different["adapter"], "deterministic");
  EXPECT_EQ(validate_code(different), kOk);
  EXPECT_EQ(validate_code(different, {.binding = &drift_binding}), kOk);
  EXPECT_EQ(validate_code(different, {.binding = &task_binding}), "EXECUTION_BINDING_MISMATCH");
}

TEST(EnvelopeTest, WorkerMustHoldTheCapabilityScope) {
  // Given a worker's capabilities, we should validate the envelope only when they cover the
  // whole capability scope.
  const Json envelope = new_envelope();
  const auto check = [&envelope](const Json& worker) {
    return validate_code(envelope, {.worker_capabilities = &worker});
  };
  EXPECT_EQ(check(rebind_scope()), kOk);
  EXPECT_EQ(check(Json::array({"repo.read", "test.execute", "governed.git.write.branch",
                               "governed.git.write.file"})),
            kOk);
  EXPECT_EQ(check(Json::array({" GIT.READ", "git.test", "governed.write.branch",
                               "governed.write.file", "agent.runtime.hermes"})),
            kOk);
  EXPECT_EQ(check(Json::array({"git.read", "git.test", "governed.write.branch"})),
            "EXECUTION_WORKER_CAPABILITY_DENY");
  EXPECT_EQ(check(Json::array({"git.read"})), "EXECUTION_WORKER_CAPABILITY_DENY");
  EXPECT_EQ(check(Json::array()), "EXECUTION_WORKER_CAPABILITY_DENY");
  EXPECT_EQ(check(Json::array({"*"})), "EXECUTION_WORKER_CAPABILITY_DENY");
  EXPECT_EQ(check(Json::array({"git.*", "governed.*"})), "EXECUTION_WORKER_CAPABILITY_DENY");
  EXPECT_EQ(check(Json("git.read")), "CAPABILITY_INVALID");
  // The worker check comes after the digest: a tampered envelope is refused as tampered.
  const Json worker = Json::array({"git.read"});
  EXPECT_EQ(validate_code(with(envelope, "/generation", 2), {.worker_capabilities = &worker}),
            "EXECUTION_DIGEST_MISMATCH");
}

TEST(EnvelopeTest, SeedSourceCaptureEnvelopeReplaysToTheSameDigest) {
  // Given the seed's persisted source_capture envelope (test_online_agent_source_capture_replay),
  // we should validate it from storage with its binding and worker, and re-projecting its parts
  // should give the same digest.
  const GovernedBinding binding = replay_binding();
  const Json execution = project_execution_envelope(binding, replay_request());
  EXPECT_EQ(execution["source_signals"], Json::array({"model provider registry version pinning"}));
  EXPECT_EQ(execution["adapter"], "compact_interface_map");
  EXPECT_EQ(execution["capability_scope"], Json::array({"git.read", "git.test"}));

  Json task = binding.to_public();
  task["required_capabilities"] = Json::array({"git.read", "git.test"});
  task["metadata"] = {{"execution", execution}};
  const Json stored = Json::parse(task.dump());

  const GovernedBinding task_binding = GovernedBinding::from_mapping(stored);
  EXPECT_EQ(task_binding, binding);
  const Json worker = Json::array({"git.read", "git.test"});
  const Json resolved = validate_execution_envelope(
      stored["metadata"]["execution"], {.binding = &task_binding, .worker_capabilities = &worker});
  EXPECT_EQ(resolved, execution);
  EXPECT_EQ(execution_digest_of(resolved), execution["execution_digest"]);

  Json replay = Json::object();
  for (const char* part : {"action", "adapter", "capability_scope", "change_set", "verification",
                           "source_signals", "runtime_input"}) {
    replay[part] = resolved[part];
  }
  EXPECT_EQ(project_execution_envelope(task_binding, replay, stored["required_capabilities"]),
            execution);
}

TEST(EnvelopeTest, SourceSignalsAreNormalized) {
  // Given source signals with padding and repeats, we should store them trimmed, de-duplicated,
  // in their first order.
  const auto signals_of = [](const Json& signals) {
    return project_execution_envelope(
        rebind_binding(), with(old_request(), "/source_signals", signals))["source_signals"];
  };
  EXPECT_EQ(signals_of(Json::array({"  b  ", "a", "b", "\ta\n"})), Json::array({"b", "a"}));
  EXPECT_EQ(signals_of(Json()), Json::array());
  EXPECT_EQ(signals_of(Json::array()), Json::array());
  Json many = Json::array();
  for (int i = 0; i < 32; ++i) many.push_back("signal-" + std::to_string(i));
  EXPECT_EQ(signals_of(many), many);
  const std::string longest = repeat("\xC3\xA9", 240);
  EXPECT_EQ(signals_of(Json::array({longest})), Json::array({longest}));
}

TEST(EnvelopeTest, MalformedSourceSignalsAreRefused) {
  // Given source signals that are not a short list of short non-blank strings, we should
  // refuse them with SOURCE_CAPTURE_SIGNALS_INVALID.
  Json too_many = Json::array();
  for (int i = 0; i < 33; ++i) too_many.push_back("signal-" + std::to_string(i));
  for (const Json& signals :
       {too_many, Json::array({""}), Json::array({"   "}), Json::array({5}), Json::array({Json()}),
        Json("signal"), Json::object(), Json::array({repeat("\xC3\xA9", 241)})}) {
    SCOPED_TRACE(signals.dump().substr(0, 60));
    EXPECT_EQ(project_code(with(old_request(), "/source_signals", signals)),
              "SOURCE_CAPTURE_SIGNALS_INVALID");
  }
}

TEST(EnvelopeTest, ReadOnlyActionsRefuseMutation) {
  // Given a source_capture or agent_runtime request with a change set or verification, we
  // should refuse it with the action's mutation code.
  const Json change = Json::array({write_file("x.py", "x=1\n")});
  const Json verify = Json::array({command(kPytest)});
  EXPECT_EQ(project_code(with(old_request(), "/change_set", change)),
            "SOURCE_CAPTURE_MUTATION_DENY");
  EXPECT_EQ(project_code(with(old_request(), "/verification", verify)),
            "SOURCE_CAPTURE_MUTATION_DENY");
  Json both = with(old_request(), "/change_set", change);
  both["verification"] = verify;
  EXPECT_EQ(project_code(both), "SOURCE_CAPTURE_MUTATION_DENY");
  const Json runtime = hermes_request({{"goal", "g"}});
  EXPECT_EQ(project_code(with(runtime, "/change_set", change)), "AGENT_RUNTIME_MUTATION_DENY");
  EXPECT_EQ(project_code(with(runtime, "/verification", verify)), "AGENT_RUNTIME_MUTATION_DENY");
  // Empty or null parts are no mutation.
  EXPECT_EQ(project_code(with(old_request(), "/change_set", Json::array())), kOk);
  EXPECT_EQ(project_code(with(old_request(), "/verification", Json())), kOk);
}

TEST(EnvelopeTest, PartsOfAnotherActionAreRefusedByName) {
  // Given source_signals or runtime_input on an action they do not belong to, we should refuse
  // the request with that action's code instead of dropping the part.
  EXPECT_EQ(project_code(with(new_request(), "/source_signals", Json::array({"x"}))),
            "DETERMINISTIC_SOURCE_SIGNALS_DENY");
  EXPECT_EQ(project_code(with(new_request(), "/runtime_input", {{"goal", "x"}})),
            "DETERMINISTIC_RUNTIME_INPUT_DENY");
  EXPECT_EQ(project_code(with(old_request(), "/runtime_input", {{"goal", "x"}})),
            "SOURCE_CAPTURE_RUNTIME_INPUT_DENY");
  EXPECT_EQ(
      project_code(with(hermes_request({{"goal", "g"}}), "/source_signals", Json::array({"x"}))),
      "AGENT_RUNTIME_SOURCE_SIGNALS_DENY");
  // Empty or null parts belong to every action.
  Json empty = new_request();
  empty["source_signals"] = Json::array();
  empty["runtime_input"] = Json();
  EXPECT_EQ(project_execution_envelope(rebind_binding(), empty), new_envelope());
}

struct PartCase {
  std::string name;
  Json value;
  std::string expected;
};

TEST(EnvelopeTest, ChangeSetRules) {
  // Given a deterministic request whose change set breaks one rule, we should refuse it with
  // that rule's code, and accept the well-formed neighbours.
  Json too_many = Json::array();
  for (int i = 0; i < 129; ++i) too_many.push_back(write_file("f" + std::to_string(i)));
  Json most = too_many;
  most.erase(most.size() - 1);
  const std::size_t limit = 2 * 1024 * 1024;
  Json extra = write_file("a.py");
  extra["mode"] = "0755";
  Json delete_with_content = delete_file("a.py");
  delete_with_content["content"] = "";
  const std::vector<PartCase> cases = {
      {"not a list", Json::object(), "CHANGE_SET_INVALID"},
      {"string", "a.py", "CHANGE_SET_INVALID"},
      {"empty", Json::array(), "CHANGE_SET_INVALID"},
      {"absolute", Json::array({write_file("/etc/passwd")}), "CHANGE_PATH_INVALID"},
      {"dotdot", Json::array({write_file("../x")}), "CHANGE_PATH_INVALID"},
      {"inner dotdot", Json::array({write_file("a/../b")}), "CHANGE_PATH_INVALID"},
      {"dot", Json::array({write_file(".")}), "CHANGE_PATH_INVALID"},
      {"dot part", Json::array({write_file("./a")}), "CHANGE_PATH_INVALID"},
      {"empty part", Json::array({write_file("a//b")}), "CHANGE_PATH_INVALID"},
      {"trailing slash", Json::array({write_file("a/")}), "CHANGE_PATH_INVALID"},
      {"empty path", Json::array({write_file("")}), "CHANGE_PATH_INVALID"},
      {"backslash", Json::array({write_file("a\\b")}), "CHANGE_PATH_INVALID"},
      {"control", Json::array({write_file(std::string("a\x01") + "b")}), "CHANGE_PATH_INVALID"},
      {"newline", Json::array({write_file("a\nb")}), "CHANGE_PATH_INVALID"},
      {"delete char", Json::array({write_file("a\x7f")}), "CHANGE_PATH_INVALID"},
      {"long", Json::array({write_file(std::string(1025, 'p'))}), "CHANGE_PATH_INVALID"},
      {"path number", Json::array({{{"path", 1}, {"operation", "delete_file"}}}),
       "CHANGE_PATH_INVALID"},
      {"git dir", Json::array({write_file(".git/config")}), "CHANGE_PATH_GIT_DENY"},
      {"git upper", Json::array({write_file("sub/.GIT/x")}), "CHANGE_PATH_GIT_DENY"},
      {"git itself", Json::array({delete_file(".git")}), "CHANGE_PATH_GIT_DENY"},
      {"git mixed", Json::array({write_file("a/.Git/hooks/pre-commit")}), "CHANGE_PATH_GIT_DENY"},
      {"duplicate", Json::array({write_file("a.py"), write_file("a.py", "y")}),
       "CHANGE_PATH_DUPLICATE"},
      {"write and delete", Json::array({write_file("a.py"), delete_file("a.py")}),
       "CHANGE_PATH_DUPLICATE"},
      {"file and dir", Json::array({write_file("a"), write_file("a/b")}), "CHANGE_PATH_CONFLICT"},
      {"dir and file", Json::array({write_file("a/b/c"), delete_file("a/b")}),
       "CHANGE_PATH_CONFLICT"},
      {"129 entries", too_many, "CHANGE_SET_TOO_LARGE"},
      {"content too large", Json::array({write_file("big", std::string(limit + 1, 'x'))}),
       "CHANGE_CONTENT_TOO_LARGE"},
      {"content number", Json::array({write_file("a.py", 5)}), "CHANGE_CONTENT_INVALID"},
      {"content null", Json::array({write_file("a.py", Json())}), "CHANGE_CONTENT_INVALID"},
      {"content list", Json::array({write_file("a.py", Json::array({"x"}))}),
       "CHANGE_CONTENT_INVALID"},
      {"unknown operation", Json::array({{{"path", "a"}, {"operation", "rename"}}}),
       "CHANGE_OPERATION_INVALID"},
      {"missing operation", Json::array({{{"path", "a"}, {"content", "x"}}}),
       "CHANGE_OPERATION_INVALID"},
      {"operation number", Json::array({{{"path", "a"}, {"operation", 1}}}),
       "CHANGE_OPERATION_INVALID"},
      {"extra field", Json::array({extra}), "CHANGE_FIELDS_INVALID"},
      {"delete with content", Json::array({delete_with_content}), "CHANGE_FIELDS_INVALID"},
      {"write without content", Json::array({{{"path", "a"}, {"operation", "write_file"}}}),
       "CHANGE_FIELDS_INVALID"},
      {"write without path", Json::array({{{"operation", "write_file"}, {"content", "x"}}}),
       "CHANGE_FIELDS_INVALID"},
      {"not an object", Json::array({"a.py"}), "CHANGE_FIELDS_INVALID"},
      {"128 entries", most, std::string(kOk)},
      {"content at limit", Json::array({write_file("big", std::string(limit, 'x'))}),
       std::string(kOk)},
      {"gitignore", Json::array({write_file(".gitignore"), write_file("a/.github/x.yml")}),
       std::string(kOk)},
      {"siblings",
       Json::array({write_file("a"), write_file("a.txt"), write_file("ab/c"), write_file("a-b/c")}),
       std::string(kOk)},
      {"non-ascii", Json::array({write_file("docs/\xE6\x96\x87\xE6\x9B\xB8.md", "")}),
       std::string(kOk)},
      {"delete", Json::array({delete_file("old/a.py")}), std::string(kOk)},
  };
  for (const PartCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(project_code(with(new_request(), "/change_set", c.value)), c.expected);
  }
}

TEST(EnvelopeTest, ChangeSetIsStoredAsGiven) {
  // Given a valid change set, we should store it unchanged and in its order.
  const Json change_set = Json::array({delete_file("z.py"), write_file("a.py", "\xE2\x82\xAC\n")});
  EXPECT_EQ(project_execution_envelope(
                rebind_binding(), with(new_request(), "/change_set", change_set))["change_set"],
            change_set);
}

TEST(EnvelopeTest, VerificationRules) {
  // Given a deterministic request whose one verification command breaks a rule, we should refuse
  // it with that rule's code, and accept the well-formed neighbours.
  const auto argv_case = [](const std::string& name, const Json& argv,
                            const std::string& expected) {
    return PartCase{name, command(argv), expected};
  };
  const auto field_case = [](const std::string& name, const std::string& field, const Json& value,
                             const std::string& expected) {
    return PartCase{name, with(command(kPytest), "/" + field, value), expected};
  };
  Json argv_65 = Json::array({"/usr/bin/python3", "-m", "pytest"});
  while (argv_65.size() < 65) argv_65.push_back("-q");
  Json argv_64 = argv_65;
  argv_64.erase(argv_64.size() - 1);
  const std::string ok(kOk);
  const std::string label_max = repeat("\xE2\x9C\x93", 120);
  const std::vector<PartCase> cases = {
      argv_case("sh -c", Json::array({"/bin/sh", "-c", "true"}), "VERIFICATION_SHELL_DENY"),
      argv_case("env", Json::array({"/usr/bin/env", "python3", "-m", "pytest"}),
                "VERIFICATION_SHELL_DENY"),
      argv_case("bash script", Json::array({"/bin/bash", "run.sh"}), "VERIFICATION_SHELL_DENY"),
      argv_case("busybox", Json::array({"/usr/bin/busybox", "sh"}), "VERIFICATION_SHELL_DENY"),
      argv_case("sudo", Json::array({"/usr/bin/sudo", "make"}), "VERIFICATION_SHELL_DENY"),
      argv_case("xargs", Json::array({"/usr/bin/xargs", "make"}), "VERIFICATION_SHELL_DENY"),
      argv_case("timeout sh", Json::array({"/usr/bin/timeout", "60", "/bin/sh", "-c", "id"}),
                "VERIFICATION_SHELL_DENY"),
      argv_case("nice", Json::array({"/usr/bin/nice", "make"}), "VERIFICATION_SHELL_DENY"),
      argv_case("setsid", Json::array({"/usr/bin/setsid", "make"}), "VERIFICATION_SHELL_DENY"),
      argv_case("find -exec", Json::array({"/usr/bin/find", ".", "-exec", "id", ";"}),
                "VERIFICATION_SHELL_DENY"),
      argv_case("rbash", Json::array({"/bin/rbash", "-c", "id"}), "VERIFICATION_SHELL_DENY"),
      argv_case("shell as operand", Json::array({"/usr/bin/make", "SHELL=x", "/bin/bash"}),
                "VERIFICATION_SHELL_DENY"),
      argv_case("awk program", Json::array({"/usr/bin/awk", "BEGIN{system(\"id\")}"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("gawk program", Json::array({"/usr/bin/gawk", "BEGIN{}"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("deno eval", Json::array({"/usr/bin/deno", "eval", "1"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("python -c", Json::array({"/usr/bin/python3", "-c", "print(1)"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("python -Ic", Json::array({"/usr/bin/python3", "-Ic", "print(1)"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("python -W -c", Json::array({"/usr/bin/python3", "-W", "error", "-c", "x"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("python3.11 -c", Json::array({"/usr/bin/python3.11", "-c", "x"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("pypy3 -c", Json::array({"/usr/bin/pypy3", "-c", "x"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("node -e", Json::array({"/usr/bin/node", "-e", "1"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("node --eval=", Json::array({"/usr/bin/node", "--eval=1"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("node --eval", Json::array({"/usr/bin/node", "--eval", "1"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("node -p", Json::array({"/usr/bin/node", "-p", "1"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("node --require=", Json::array({"/usr/bin/node", "--require=./x.js", "t.js"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("perl -e", Json::array({"/usr/bin/perl", "-e", "1"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("perl -E", Json::array({"/usr/bin/perl", "-E", "say 1"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("ruby -e", Json::array({"/usr/bin/ruby", "-e", "1"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("php -r", Json::array({"/usr/bin/php", "-r", "1;"}),
                "VERIFICATION_INLINE_CODE_DENY"),
      argv_case("relative", Json::array({"python3", "-m", "pytest"}),
                "VERIFICATION_EXECUTABLE_INVALID"),
      argv_case("dot relative", Json::array({"./run-tests"}), "VERIFICATION_EXECUTABLE_INVALID"),
      argv_case("dotdot", Json::array({"/usr/../bin/python3"}), "VERIFICATION_EXECUTABLE_INVALID"),
      argv_case("empty part", Json::array({"/usr//bin/python3"}),
                "VERIFICATION_EXECUTABLE_INVALID"),
      argv_case("root", Json::array({"/"}), "VERIFICATION_EXECUTABLE_INVALID"),
      argv_case("empty executable", Json::array({""}), "VERIFICATION_EXECUTABLE_INVALID"),
      argv_case("empty argv", Json::array(), "VERIFICATION_ARGV_INVALID"),
      argv_case("number", Json::array({5}), "VERIFICATION_ARGV_INVALID"),
      argv_case("number arg", Json::array({"/usr/bin/make", 5}), "VERIFICATION_ARGV_INVALID"),
      argv_case("string argv", "/usr/bin/python3", "VERIFICATION_ARGV_INVALID"),
      argv_case("65 args", argv_65, "VERIFICATION_ARGV_INVALID"),
      argv_case("long arg", Json::array({"/usr/bin/make", std::string(4097, 'a')}),
                "VERIFICATION_ARGV_INVALID"),
      argv_case("nul", Json::array({"/usr/bin/make", std::string("a\0b", 3)}),
                "VERIFICATION_ARGV_INVALID"),
      field_case("cwd dotdot", "cwd", "../x", "VERIFICATION_CWD_INVALID"),
      field_case("cwd absolute", "cwd", "/work", "VERIFICATION_CWD_INVALID"),
      field_case("cwd git", "cwd", ".git", "VERIFICATION_CWD_INVALID"),
      field_case("cwd in git", "cwd", "sub/.git/hooks", "VERIFICATION_CWD_INVALID"),
      field_case("cwd dot part", "cwd", "./sub", "VERIFICATION_CWD_INVALID"),
      field_case("cwd empty", "cwd", "", "VERIFICATION_CWD_INVALID"),
      field_case("cwd number", "cwd", 1, "VERIFICATION_CWD_INVALID"),
      field_case("timeout 0", "timeout_seconds", 0, "VERIFICATION_TIMEOUT_INVALID"),
      field_case("timeout 3601", "timeout_seconds", 3601, "VERIFICATION_TIMEOUT_INVALID"),
      field_case("timeout 1.5", "timeout_seconds", 1.5, "VERIFICATION_TIMEOUT_INVALID"),
      field_case("timeout 60.0", "timeout_seconds", 60.0, "VERIFICATION_TIMEOUT_INVALID"),
      field_case("timeout string", "timeout_seconds", "10", "VERIFICATION_TIMEOUT_INVALID"),
      field_case("timeout bool", "timeout_seconds", true, "VERIFICATION_TIMEOUT_INVALID"),
      field_case("timeout negative", "timeout_seconds", -1, "VERIFICATION_TIMEOUT_INVALID"),
      field_case("timeout null", "timeout_seconds", Json(), "VERIFICATION_TIMEOUT_INVALID"),
      field_case("label empty", "label", "", "VERIFICATION_LABEL_INVALID"),
      field_case("label blank", "label", "  \t", "VERIFICATION_LABEL_INVALID"),
      field_case("label number", "label", 5, "VERIFICATION_LABEL_INVALID"),
      field_case("label 121", "label", label_max + "x", "VERIFICATION_LABEL_INVALID"),
      {"missing cwd", without(command(kPytest), "cwd"), "VERIFICATION_FIELDS_INVALID"},
      {"missing timeout", without(command(kPytest), "timeout_seconds"),
       "VERIFICATION_FIELDS_INVALID"},
      {"extra env", with(command(kPytest), "/env", Json::object()), "VERIFICATION_FIELDS_INVALID"},
      {"not an object", "pytest", "VERIFICATION_FIELDS_INVALID"},
      argv_case("pytest", kPytest, ok),
      argv_case("python -W -m", Json::array({"/usr/bin/python3", "-W", "error", "-m", "pytest"}),
                ok),
      argv_case("python -bb -m", Json::array({"/usr/bin/python3", "-bb", "-m", "pytest"}), ok),
      argv_case("python script -c", Json::array({"/usr/bin/python3", "tests/run.py", "-c", "cfg"}),
                ok),
      argv_case("node test", Json::array({"/usr/bin/node", "--test", "test/"}), ok),
      argv_case("make", Json::array({"/usr/bin/make", "check"}), ok),
      argv_case("64 args", argv_64, ok),
      argv_case("4096 byte arg", Json::array({"/usr/bin/make", std::string(4096, 'a')}), ok),
      field_case("cwd sub", "cwd", "active-runtime/app", ok),
      field_case("timeout 1", "timeout_seconds", 1, ok),
      field_case("timeout 3600", "timeout_seconds", 3600, ok),
      field_case("label 120", "label", label_max, ok),
  };
  for (const PartCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(project_code(with(new_request(), "/verification", Json::array({c.value}))),
              c.expected);
  }
}

TEST(EnvelopeTest, VerificationListIsBounded) {
  // Given more than 32 commands or a verification that is not a list, we should refuse it with
  // VERIFICATION_INVALID; 32 commands are accepted.
  Json commands = Json::array();
  for (int i = 0; i < 32; ++i) commands.push_back(command(kPytest));
  EXPECT_EQ(project_code(with(new_request(), "/verification", commands)), kOk);
  commands.push_back(command(kPytest));
  EXPECT_EQ(project_code(with(new_request(), "/verification", commands)), "VERIFICATION_INVALID");
  EXPECT_EQ(project_code(with(new_request(), "/verification", command(kPytest))),
            "VERIFICATION_INVALID");
  EXPECT_EQ(project_code(with(new_request(), "/verification", "pytest")), "VERIFICATION_INVALID");
}

TEST(EnvelopeTest, CapabilityScopeRules) {
  // Given a capability scope that is unknown, malformed or empty, we should refuse it with the
  // matching code.
  const std::vector<PartCase> cases = {
      {"unknown", Json::array({"root.admin"}), "CAPABILITY_UNKNOWN"},
      {"wildcard", Json::array({"git.*"}), "CAPABILITY_UNKNOWN"},
      {"worker-only name", Json::array({"governed.git.write.branch"}), "CAPABILITY_UNKNOWN"},
      {"one unknown of two", Json::array({"git.read", "root.admin"}), "CAPABILITY_UNKNOWN"},
      {"number", Json::array({5}), "CAPABILITY_INVALID"},
      {"null item", Json::array({Json()}), "CAPABILITY_INVALID"},
      {"empty name", Json::array({""}), "CAPABILITY_INVALID"},
      {"blank name", Json::array({"  "}), "CAPABILITY_INVALID"},
      {"empty", Json::array(), "CAPABILITY_SCOPE_REQUIRED"},
      {"string", "git.read", "CAPABILITY_SCOPE_INVALID"},
      {"object", {{"git.read", true}}, "CAPABILITY_SCOPE_INVALID"},
      {"65 names", Json(std::vector<std::string>(65, "git.read")), "CAPABILITY_SCOPE_INVALID"},
      {"64 names", Json(std::vector<std::string>(64, "git.read")), std::string(kOk)},
  };
  for (const PartCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(project_code(with(old_request(), "/capability_scope", c.value)), c.expected);
  }
}

TEST(EnvelopeTest, CapabilityScopeIsNormalized) {
  // Given a scope with padding, upper case and repeats, we should store it trimmed, lower-cased,
  // sorted and de-duplicated.
  const Json envelope = project_execution_envelope(
      rebind_binding(), with(old_request(), "/capability_scope",
                             Json::array({" GIT.TEST ", "git.read", "Git.Read", "git.test"})));
  EXPECT_EQ(envelope["capability_scope"], Json::array({"git.read", "git.test"}));
}

TEST(EnvelopeTest, CapabilityScopeDefaultsToTheRequirements) {
  // Given no capability scope, we should take the required capabilities as the scope, and
  // refuse when there are none.
  const Json request = without(old_request(), "capability_scope");
  EXPECT_EQ(project_execution_envelope(rebind_binding(), request,
                                       Json::array({"git.test", "GIT.READ"}))["capability_scope"],
            Json::array({"git.read", "git.test"}));
  EXPECT_EQ(project_execution_envelope(rebind_binding(), with(request, "/capability_scope", Json()),
                                       Json::array({"git.read"}))["capability_scope"],
            Json::array({"git.read"}));
  EXPECT_EQ(project_code(request), "CAPABILITY_SCOPE_REQUIRED");
  EXPECT_EQ(project_code(request, Json::array({"root.admin"})), "CAPABILITY_UNKNOWN");
}

TEST(EnvelopeTest, RequiredCapabilitiesMustLieInsideTheScope) {
  // Given required capabilities, we should accept them when the scope covers them (through
  // aliases too) and refuse them otherwise.
  const Json scoped = with(old_request(), "/capability_scope", Json::array({"git.read"}));
  EXPECT_EQ(project_code(scoped, Json::array({"git.read"})), kOk);
  EXPECT_EQ(project_code(scoped, Json::array({"repo.read", "repository_read"})), kOk);
  EXPECT_EQ(project_code(scoped, Json::array({"git.test"})), "EXECUTION_CAPABILITY_SCOPE_MISMATCH");
  EXPECT_EQ(project_code(scoped, Json::array({"git.read", "agent.runtime.hermes"})),
            "EXECUTION_CAPABILITY_SCOPE_MISMATCH");
  EXPECT_EQ(project_code(scoped, Json::array({"root.admin"})),
            "EXECUTION_CAPABILITY_SCOPE_MISMATCH");
  EXPECT_EQ(project_code(old_request(), Json::array({"governed_git_write", "git.test"})), kOk);
  EXPECT_EQ(project_code(scoped, Json("git.read")), "REQUIRED_CAPABILITIES_INVALID");
  EXPECT_EQ(project_code(scoped, Json()), "REQUIRED_CAPABILITIES_INVALID");
}

TEST(EnvelopeTest, GovernanceRules) {
  // Given governance fields, we should accept only a valid commit key, and only for the
  // deterministic action.
  for (const Json& request : {old_request(), hermes_request({{"goal", "g"}})}) {
    SCOPED_TRACE(request["action"].dump());
    EXPECT_EQ(project_code(with(request, "/governance",
                                {{"commit_idempotency_key", "task-rebind-a-commit-v1"}})),
              "GOVERNANCE_FIELDS_INVALID");
    EXPECT_EQ(project_code(with(request, "/governance", {{"writer_lease", false}})),
              "GOVERNANCE_FIELDS_INVALID");
    EXPECT_EQ(project_code(with(request, "/governance", "none")), "GOVERNANCE_FIELDS_INVALID");
    EXPECT_EQ(project_code(with(request, "/governance", Json::object())), kOk);
    EXPECT_EQ(project_code(with(request, "/governance", Json())), kOk);
  }
  const std::vector<PartCase> cases = {
      {"writer lease", {{"writer_lease", true}}, "GOVERNANCE_FIELDS_INVALID"},
      {"extra",
       {{"commit_idempotency_key", "task-rebind-a-commit-v1"}, {"extra", 1}},
       "GOVERNANCE_FIELDS_INVALID"},
      {"string", "task-rebind-a-commit-v1", "GOVERNANCE_FIELDS_INVALID"},
      {"list", Json::array(), "GOVERNANCE_FIELDS_INVALID"},
      {"short key", {{"commit_idempotency_key", "commit1"}}, "GOVERNANCE_COMMIT_KEY_INVALID"},
      {"number key", {{"commit_idempotency_key", 12345678}}, "GOVERNANCE_COMMIT_KEY_INVALID"},
      {"empty key", {{"commit_idempotency_key", ""}}, "GOVERNANCE_COMMIT_KEY_INVALID"},
      {"dash first",
       {{"commit_idempotency_key", "-commit-key-1"}},
       "GOVERNANCE_COMMIT_KEY_INVALID"},
      {"space", {{"commit_idempotency_key", "commit key 1"}}, "GOVERNANCE_COMMIT_KEY_INVALID"},
      {"161 chars",
       {{"commit_idempotency_key", std::string(161, 'c')}},
       "GOVERNANCE_COMMIT_KEY_INVALID"},
      {"160 chars", {{"commit_idempotency_key", std::string(160, 'c')}}, std::string(kOk)},
      {"8 chars", {{"commit_idempotency_key", "commit:1"}}, std::string(kOk)},
  };
  for (const PartCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(project_code(with(new_request(), "/governance", c.value)), c.expected);
  }
}

TEST(EnvelopeTest, ExecutionRequestMustBeAnObjectOfKnownFields) {
  // Given a request that is not an object or has a field outside the request schema, we should
  // refuse it; the caller never chooses the workspace or the digest.
  for (const Json& request : {Json(), Json("source_capture"), Json::array(), Json(1)}) {
    SCOPED_TRACE(request.dump());
    EXPECT_EQ(project_code(request, Json::array({"git.read"})), "EXECUTION_REQUEST_INVALID");
  }
  for (const char* field : {"extra", "workspace", "execution_digest", "schema", "task_id",
                            "required_capabilities", "Action"}) {
    SCOPED_TRACE(field);
    EXPECT_EQ(project_code(with(old_request(), std::string("/") + field, nullptr)),
              "EXECUTION_REQUEST_FIELDS_INVALID");
  }
}

TEST(EnvelopeTest, ActionDefaultsToSourceCaptureAndMustBeSupported) {
  // Given no action, we should project source_capture; given an unknown action, we should
  // refuse it with EXECUTION_ACTION_UNSUPPORTED.
  const Json scope_only = {{"capability_scope", Json::array({"git.read"})}};
  for (const Json& action : {Json(), Json("")}) {
    SCOPED_TRACE(action.dump());
    const Json envelope =
        project_execution_envelope(rebind_binding(), with(scope_only, "/action", action));
    EXPECT_EQ(envelope["action"], "source_capture");
    EXPECT_EQ(envelope["adapter"], "source_capture");
  }
  EXPECT_EQ(project_execution_envelope(rebind_binding(), scope_only)["action"], "source_capture");
  for (const Json& action : {Json("delete"), Json("Deterministic"), Json("shell"), Json(5),
                             Json::array({"deterministic"})}) {
    SCOPED_TRACE(action.dump());
    EXPECT_EQ(project_code(with(scope_only, "/action", action)), "EXECUTION_ACTION_UNSUPPORTED");
  }
}

TEST(EnvelopeTest, AdapterDefaultsAndMustBelongToTheAction) {
  // Given no adapter, we should take the action's default; given another action's adapter, we
  // should refuse it with EXECUTION_ADAPTER_INVALID.
  EXPECT_EQ(
      project_execution_envelope(rebind_binding(), without(new_request(), "adapter"))["adapter"],
      "deterministic");
  EXPECT_EQ(
      project_execution_envelope(rebind_binding(), with(new_request(), "/adapter", ""))["adapter"],
      "deterministic");
  EXPECT_EQ(
      project_execution_envelope(rebind_binding(), without(old_request(), "adapter"))["adapter"],
      "source_capture");
  EXPECT_EQ(project_code(with(new_request(), "/adapter", "compact_interface_map")),
            "EXECUTION_ADAPTER_INVALID");
  EXPECT_EQ(project_code(with(new_request(), "/adapter", "hermes")), "EXECUTION_ADAPTER_INVALID");
  EXPECT_EQ(project_code(with(old_request(), "/adapter", "hermes")), "EXECUTION_ADAPTER_INVALID");
  EXPECT_EQ(project_code(with(old_request(), "/adapter", "deterministic")),
            "EXECUTION_ADAPTER_INVALID");
  EXPECT_EQ(project_code(with(old_request(), "/adapter", 5)), "EXECUTION_ADAPTER_INVALID");
}

TEST(EnvelopeTest, OversizedEnvelopeIsRefused) {
  // Given an envelope whose canonical form exceeds 16 MiB, we should refuse it before reading
  // its fields, on projection and on validation.
  Json change_set = Json::array();
  for (int i = 0; i < 9; ++i) {
    change_set.push_back(write_file("big-" + std::to_string(i), std::string(2 * 1024 * 1024, 'x')));
  }
  EXPECT_EQ(project_code(with(new_request(), "/change_set", change_set)),
            "EXECUTION_ENVELOPE_TOO_LARGE");
  Json huge = new_envelope();
  huge["unknown"] = std::string(16 * 1024 * 1024, 'x');
  EXPECT_EQ(validate_code(huge), "EXECUTION_ENVELOPE_TOO_LARGE");
}

}  // namespace
}  // namespace aios::envelope_test
