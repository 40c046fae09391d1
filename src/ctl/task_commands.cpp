// aiosctl's task subcommands: list, show, events, why, cancel, verify, rebind, create, plans,
// the fleet-wide event feed, the store's status and pruning.
#include <algorithm>
#include <cctype>
#include <memory>

#include "aios/canonical.hpp"
#include "aios/ctl.hpp"
#include "aios/store.hpp"
#include "ctl/commands.hpp"
#include "ctl/render.hpp"

namespace aios::ctl {
namespace {

using Json = nlohmann::json;

std::string task_path(const std::string& id) {
  return "/v1/tasks/" + encoded(id);
}

// What the command line gives; shared by the options that fill it and the actions that read it.
struct TaskOptions {
  std::string id;
  std::string status;
  std::string tenant;
  std::string prefix;
  int limit = 100;
  long long after = 0;
  std::string decision;
  std::string reason;
  long long revision = -1;  // -1: the task's current one
  int additional_attempts = 1;
  // rebind
  std::string authorization_id;
  std::string new_digest;
  std::string idempotency_key;
  std::string file;
  std::string older_than;
  std::vector<std::string> exchange_roots;
  std::vector<std::string> workspace_roots;
};
using SharedTaskOptions = std::shared_ptr<TaskOptions>;

void add_list(CLI::App& app, Action& action, const SharedTaskOptions& o) {
  auto* tasks = app.add_subcommand("tasks", "List tasks in queue order");
  tasks
      ->add_option("--status", o->status,
                   "Only this status: QUEUED, CLAIMED, VERIFYING, SUCCEEDED, FAILED or\n"
                   "CANCELLED (any case)")
      ->transform([](const std::string& given) {
        const std::string status = ascii_upper(given);
        if (!store::is_task_status(status)) {
          throw CLI::ValidationError("unknown status '" + status + "'");
        }
        return status;
      });
  tasks->add_option("--tenant", o->tenant, "Only this tenant's tasks (its projects' too)");
  tasks->add_option("--prefix", o->prefix, "Only tasks whose id starts with this (case counts)");
  tasks->add_option("--limit", o->limit, "At most this many")->check(CLI::Range(1, 1000));
  tasks->add_option("--after", o->after, "After this queue position (a page's next_after)");
  tasks->callback([&action, o] {
    action = [o](Context& c) {
      std::string query =
          "?limit=" + std::to_string(o->limit) + "&after=" + std::to_string(o->after);
      if (!o->status.empty()) query += "&status=" + encoded(o->status);
      if (!o->tenant.empty()) query += "&tenant=" + encoded(o->tenant);
      if (!o->prefix.empty()) query += "&id_prefix=" + encoded(o->prefix);
      const auto answer = c.client.get(Service::kApi, "/v1/tasks" + query);
      c.show(answer, [&] { return tasks_view(answer) + more_line(answer, "tasks", o->limit); });
      return kDone;
    };
  });
}

// The current revision, unless the command line names one.
long long revision_of(Context& c, const TaskOptions& o) {
  if (o.revision >= 0) return o.revision;
  return c.client.get(Service::kApi, task_path(o.id)).at("revision").get<long long>();
}

void add_task(CLI::App& app, Action& action, const SharedTaskOptions& o) {
  auto* task =
      app.add_subcommand("task", "One task: show, events, why, cancel, requeue, verify, rebind");
  task->require_subcommand(1);
  const auto with_id = [o](CLI::App* command) {
    command->add_option("id", o->id, "The task id")->required();
    return command;
  };
  with_id(task->add_subcommand("show", "The task's fields"))->callback([&action, o] {
    action = [o](Context& c) {
      const auto answer = c.client.get(Service::kApi, task_path(o->id));
      c.show(answer, [&] { return task_view(answer); });
      return kDone;
    };
  });
  auto* events = with_id(task->add_subcommand("events", "The task's events, oldest first"));
  events->add_option("--limit", o->limit, "At most this many")->check(CLI::Range(1, 1000));
  events->add_option("--after", o->after, "After this event id");
  events->callback([&action, o] {
    action = [o](Context& c) {
      const auto answer = c.client.get(
          Service::kApi, task_path(o->id) + "/events?limit=" + std::to_string(o->limit) +
                             "&after=" + std::to_string(o->after));
      c.show(answer,
             [&] { return events_view(answer, false) + more_line(answer, "events", o->limit); });
      return kDone;
    };
  });
  with_id(task->add_subcommand("why", "Why a worker may or may not take the task now"))
      ->callback([&action, o] {
        action = [o](Context& c) {
          const auto answer = c.client.get(Service::kApi, task_path(o->id) + "/eligibility");
          c.show(answer, [&] { return eligibility_view(answer); });
          return kDone;
        };
      });
  auto* cancel = with_id(task->add_subcommand("cancel", "Cancel a task that has not ended"));
  cancel->add_option("--reason", o->reason, "Kept in the task's event");
  cancel->add_option("--revision", o->revision, "Only if the task is at this revision");
  cancel->callback([&action, o] {
    action = [o](Context& c) {
      Json body = Json::object();
      if (!o->reason.empty()) body["reason"] = o->reason;
      if (o->revision >= 0) body["expected_revision"] = o->revision;
      const auto answer = c.client.post(Service::kApi, task_path(o->id) + "/cancel", body);
      c.show(answer, [&] { return o->id + " " + cell(answer.value("status", Json())) + "\n"; });
      return kDone;
    };
  });
  auto* requeue = with_id(task->add_subcommand(
      "requeue", "Queue a FAILED or CANCELLED task again under the same envelope"));
  requeue->add_option("--attempts", o->additional_attempts, "Attempts it gets from here (1..10)")
      ->check(CLI::Range(1, 10))
      ->capture_default_str();
  requeue->add_option("--reason", o->reason, "Kept in the task's event");
  requeue->add_option("--revision", o->revision, "The revision requeued (default: the current)");
  requeue->add_option("--idempotency-key", o->idempotency_key,
                      "Default: one derived from the task and its revision, so the same\n"
                      "command repeated after a lost answer requeues once");
  requeue->callback([&action, o] {
    action = [o](Context& c) {
      const auto revision = revision_of(c, *o);
      const std::string key =
          !o->idempotency_key.empty()
              ? o->idempotency_key
              : "requeue-r" + std::to_string(revision) + "-" + sha256_hex(o->id).substr(0, 24);
      Json body = {{"expected_revision", revision},
                   {"idempotency_key", key},
                   {"additional_attempts", o->additional_attempts}};
      if (!o->reason.empty()) body["reason"] = o->reason;
      const auto answer = c.client.post(Service::kApi, task_path(o->id) + "/requeue", body);
      c.show(answer, [&] {
        return o->id + " " + cell(answer.value("status", Json())) + " (attempt " +
               cell(answer.value("attempt", Json())) + " of " +
               cell(answer.value("max_attempts", Json())) + ")\n";
      });
      return kDone;
    };
  });
  auto* verify = with_id(task->add_subcommand("verify", "The owner's verification of a result"));
  verify->add_option("decision", o->decision, "PASS, NEEDS_REWORK or FAIL")
      ->required()
      ->check(CLI::IsMember({"PASS", "NEEDS_REWORK", "FAIL"}));
  verify->add_option("--reason", o->reason, "Why (kept with the verification)")->required();
  verify->add_option("--revision", o->revision, "The revision verified (default: the current)");
  verify->callback([&action, o] {
    action = [o](Context& c) {
      const Json body = {{"expected_revision", revision_of(c, *o)},
                         {"decision", o->decision},
                         {"reason", o->reason}};
      const auto answer = c.client.post(Service::kApi, task_path(o->id) + "/verification", body);
      c.show(answer, [&] { return o->id + " " + cell(answer.value("status", Json())) + "\n"; });
      return kDone;
    };
  });
  auto* rebind = with_id(task->add_subcommand(
      "rebind", "Rebind a returned task to its registered plan (the rebind service)"));
  rebind
      ->add_option("--authorization-id", o->authorization_id,
                   "The rebind service's authorization id")
      ->envname("AIOS_AGENT_TASK_EXECUTION_REBIND_AUTHORIZATION_ID")
      ->required();
  rebind->add_option("--reason", o->reason, "Kept in the audit event")->required();
  rebind->add_option("--new-digest", o->new_digest,
                     "The plan's execution digest (default: what the Bridge resolves now)");
  rebind->add_option("--idempotency-key", o->idempotency_key,
                     "New for every distinct rebind (default rebind-<task>-r<revision>)");
  rebind->add_option("--revision", o->revision, "Expect this revision (default: the current)");
  rebind->callback([&action, o] {
    action = [o](Context& c) {
      // The compare-and-swap fields from the task as it is now, unless given.
      const auto view = c.client.get(Service::kApi, task_path(o->id));
      const auto revision = o->revision >= 0 ? o->revision : view.at("revision").get<long long>();
      std::string digest = o->new_digest;
      if (digest.empty()) {
        digest =
            c.client
                .post(
                    Service::kBridge, "/v2/execution-envelope",
                    {{"task_id", o->id},
                     {"required_capabilities", view.value("required_capabilities", Json::array())}})
                .at("execution_digest");
      }
      const Json body = {
          {"expected_status", view.at("status")},
          {"expected_revision", revision},
          {"expected_attempt", view.at("attempt")},
          {"previous_verification_sha256",
           sha256_hex(canonical_json(view.value("verification", Json())))},
          {"expected_old_execution_digest", view.at("execution_digest")},
          {"expected_new_execution_digest", digest},
          {"authorization_id", o->authorization_id},
          {"idempotency_key", o->idempotency_key.empty()
                                  ? "rebind-" + o->id + "-r" + std::to_string(revision)
                                  : o->idempotency_key},
          {"reason", o->reason}};
      const auto answer =
          c.client.post(Service::kRebind, task_path(o->id) + "/execution-rebind", body);
      c.show(answer, [&] {
        return o->id + " rebound to " + cell(answer.value("new_execution_digest", Json())) +
               (answer.value("idempotent", false) ? " (already)" : "") + "\n";
      });
      return kDone;
    };
  });
}

// POST /v1/tasks/batch for a list of tasks, a batch at a time: one line per task (its status, or
// "refused" and its code), and the exit class of the first refusal.
int create_many(Context& c, const Json& tasks) {
  constexpr std::size_t kBatch = 1000;  // the endpoint's bound
  Json answers = Json::array();
  for (std::size_t first = 0; first < tasks.size(); first += kBatch) {
    const auto last = std::min(tasks.size(), first + kBatch);
    const Json batch = {{"tasks", Json(tasks.begin() + static_cast<long>(first),
                                       tasks.begin() + static_cast<long>(last))}};
    // Kept whole: a range over a member of the temporary answer would dangle.
    auto answer = c.client.post(Service::kApi, "/v1/tasks/batch", batch);
    for (auto& item : answer.at("tasks")) answers.push_back(std::move(item));
  }
  int exit = kDone;
  for (const auto& answer : answers) {
    if (!answer.contains("error") || exit != kDone) continue;
    const auto* known = find_error(answer.value("error", std::string()));
    exit = known != nullptr ? exit_code_of(Error(known->code)) : kFailed;
  }
  c.show({{"tasks", answers}}, [&] {
    std::string text;
    for (const auto& answer : answers) {
      text += cell(answer.value("task_id", Json())) + " " +
              (answer.contains("error") ? "refused " + cell(answer.at("error"))
                                        : cell(answer.value("status", Json()))) +
              "\n";
    }
    return text;
  });
  return exit;
}

void add_create_and_plans(CLI::App& app, Action& action, const SharedTaskOptions& o) {
  auto* create = app.add_subcommand(
      "create", "Project a task from its JSON, or many from a JSON list (a file or -)");
  create
      ->add_option("file", o->file,
                   "The task's JSON object, or a list of them (sent in batches of 1,000), or - "
                   "for standard input")
      ->required();
  create->callback([&action, o] {
    action = [o](Context& c) -> int {
      const auto given = read_json_argument(o->file, /*list_allowed=*/true);
      if (given.is_object()) {
        const auto answer = c.client.post(Service::kApi, "/v1/tasks", given);
        c.show(answer, [&] {
          return cell(answer.value("task_id", Json())) + " " +
                 cell(answer.value("status", Json())) + "\n";
        });
        return kDone;
      }
      return create_many(c, given);
    };
  });
  auto* plans = app.add_subcommand("plans", "The Bridge's deterministic plans");
  plans->require_subcommand(1);
  auto* list = plans->add_subcommand("list", "Registered plans, by task id");
  list->add_option("--limit", o->limit, "At most this many")->check(CLI::Range(1, 1000));
  list->add_option("--after", o->id, "After this task id (a page's next_after)");
  list->callback([&action, o] {
    action = [o](Context& c) {
      std::string query = "?limit=" + std::to_string(o->limit);
      if (!o->id.empty()) query += "&after=" + encoded(o->id);
      const auto answer = c.client.get(Service::kBridge, "/v2/plans" + query);
      c.show(answer, [&] { return plans_view(answer) + more_line(answer, "plans", o->limit); });
      return kDone;
    };
  });
  auto* show = plans->add_subcommand("show", "One task's plan: its digest and change set");
  show->add_option("id", o->id, "The task id")->required();
  show->callback([&action, o] {
    action = [o](Context& c) {
      const auto answer = c.client.get(Service::kBridge, "/v2/plans/" + encoded(o->id));
      c.show(answer, [&] { return plan_view(answer); });
      return kDone;
    };
  });
  auto* reg = plans->add_subcommand("register", "Register a task's plan from JSON (a file or -)");
  reg->add_option("file", o->file, "The plan's JSON, or - for standard input")->required();
  reg->callback([&action, o] {
    action = [o](Context& c) {
      const auto answer = c.client.post(Service::kBridge, "/v2/plans", read_json_argument(o->file));
      c.show(answer, [&] {
        return cell(answer.value("task_id", Json())) + " plan " +
               cell(answer.value("execution_digest", Json())) + "\n";
      });
      return kDone;
    };
  });
}

void add_store_commands(CLI::App& app, Action& action, const SharedTaskOptions& o) {
  auto* events = app.add_subcommand("events", "Every task's events, oldest first");
  events->add_option("--limit", o->limit, "At most this many")->check(CLI::Range(1, 1000));
  events->add_option("--after", o->after, "After this event id (a page's next_after)");
  events->callback([&action, o] {
    action = [o](Context& c) {
      const auto answer =
          c.client.get(Service::kApi, "/v1/events?limit=" + std::to_string(o->limit) +
                                          "&after=" + std::to_string(o->after));
      c.show(answer,
             [&] { return events_view(answer, true) + more_line(answer, "events", o->limit); });
      return kDone;
    };
  });
  app.add_subcommand("status", "The scheduler and its store: schema, integrity, task counts")
      ->callback([&action] {
        action = [](Context& c) {
          const auto answer = c.client.get(Service::kApi, "/v1/status");
          c.show(answer, [&] { return status_view(answer); });
          return kDone;
        };
      });
  auto* prune = app.add_subcommand(
      "prune", "Delete the events and stored results of tasks that ended long enough ago");
  prune->add_option("--older-than", o->older_than, "e.g. 30d, 12h (at least 1h)")->required();
  prune->add_option("--exchange-root", o->exchange_roots,
                    "An executor's or broker's exchange on this host: answers of ended tasks "
                    "older than the age go too (repeat)");
  prune->add_option("--workspace-root", o->workspace_roots,
                    "A worker's workspaces on this host: ones left behind for ended tasks go "
                    "too (repeat)");
  prune->callback([&action, o] {
    action = [o](Context& c) {
      const auto age = seconds_of(o->older_than);
      auto answer = c.client.post(Service::kApi, "/v1/prune", {{"older_than_seconds", age}});
      const auto files =
          prune_files(c.client, o->exchange_roots, o->workspace_roots, std::chrono::seconds(age));
      answer["pruned_answers"] = files.answers;
      answer["pruned_workspaces"] = files.workspaces;
      c.show(answer, [&] {
        return "pruned " + cell(answer.value("pruned_tasks", Json())) +
               " ended tasks last updated before " + cell(answer.value("before", Json())) + ", " +
               std::to_string(files.answers) + " exchange answers, " +
               std::to_string(files.workspaces) + " workspaces\n";
      });
      return kDone;
    };
  });
}

}  // namespace

void add_task_commands(CLI::App& app, Action& action) {
  const auto options = std::make_shared<TaskOptions>();
  add_list(app, action, options);
  add_task(app, action, options);
  add_create_and_plans(app, action, options);
  add_store_commands(app, action, options);
}

}  // namespace aios::ctl
