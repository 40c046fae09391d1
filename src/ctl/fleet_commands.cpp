// aiosctl's fleet subcommands: the workers, the whole fleet, and the agents (create, revoke,
// rotate, bind a client certificate).
#include <memory>

#include "aios/ctl.hpp"
#include "ctl/commands.hpp"
#include "ctl/render.hpp"

namespace aios::ctl {
namespace {

using Json = nlohmann::json;

struct AgentOptions {
  std::string id;
  std::vector<std::string> capabilities;
  std::vector<std::string> tenants;
  std::string certificate_uri;
  std::string certificate_sha256;
};
using SharedAgentOptions = std::shared_ptr<AgentOptions>;

Json binding_of(const AgentOptions& o) {
  Json binding = Json::object();
  if (!o.certificate_uri.empty()) binding["uri"] = o.certificate_uri;
  if (!o.certificate_sha256.empty()) binding["sha256"] = o.certificate_sha256;
  return binding;
}

void add_agents(CLI::App& app, Action& action, const SharedAgentOptions& o) {
  auto* agents = app.add_subcommand("agents", "Agents: list, create, revoke, rotate, certificate");
  agents->require_subcommand(1);
  agents->add_subcommand("list", "Every agent: its grant, workers, certificate, revoked or not")
      ->callback([&action] {
        action = [](Context& c) {
          const auto answer = c.client.get(Service::kApi, "/v1/agents");
          c.show(answer, [&] { return agents_view(answer); });
          return kDone;
        };
      });
  const auto with_certificate = [o](CLI::App* command) {
    command->add_option("--certificate-uri", o->certificate_uri,
                        "The client certificate its workers present: a subjectAltName URI");
    command->add_option("--certificate-sha256", o->certificate_sha256,
                        "... or the certificate's SHA-256 fingerprint");
  };
  auto* create = agents->add_subcommand("create", "Issue an agent and its token (shown once)");
  create->add_option("id", o->id, "The agent id")->required();
  create->add_option("--capability", o->capabilities, "A granted capability (repeat)")->required();
  create->add_option("--tenant", o->tenants, "A granted tenant (repeat; none: every tenant)");
  with_certificate(create);
  create->callback([&action, o] {
    action = [o](Context& c) {
      Json body = {{"agent_id", o->id}, {"granted_capabilities", o->capabilities}};
      if (!o->tenants.empty()) body["granted_tenants"] = o->tenants;
      if (const auto binding = binding_of(*o); !binding.empty()) {
        body["client_certificate"] = binding;
      }
      const auto answer = c.client.post(Service::kApi, "/v1/agents", body);
      c.show(answer, [&] {
        return "agent " + o->id + " token " + cell(answer.value("token", Json())) +
               "\n(shown this once: store it now, e.g. with systemd-creds encrypt)\n";
      });
      return kDone;
    };
  });
  for (const char* verb : {"revoke", "rotate"}) {
    auto* command = agents->add_subcommand(
        verb, std::string(verb) == "revoke"
                  ? "Refuse the agent's token from now on; its claims go back to the queue"
                  : "Issue the agent a new token (shown once); its claims go back to the queue");
    command->add_option("id", o->id, "The agent id")->required();
    command->callback([&action, o, verb] {
      action = [o, verb](Context& c) {
        const auto answer =
            c.client.post(Service::kApi, "/v1/agents/" + o->id + "/" + verb, Json::object());
        c.show(answer, [&] {
          std::string text = "agent " + o->id + " " + verb + "d, released " +
                             cell(answer.value("released_tasks", Json::array())) + "\n";
          if (answer.contains("token")) text += "new token " + cell(answer["token"]) + "\n";
          return text;
        });
        return kDone;
      };
    });
  }
  auto* certificate = agents->add_subcommand(
      "certificate", "Record the client certificate the agent must present (none: neither)");
  certificate->add_option("id", o->id, "The agent id")->required();
  with_certificate(certificate);
  certificate->callback([&action, o] {
    action = [o](Context& c) {
      const auto answer = c.client.post(
          Service::kApi, "/v1/agents/" + o->id + "/client-certificate", binding_of(*o));
      c.show(answer, [&] {
        return "agent " + o->id + " certificate " +
               cell(answer.value("client_certificate", Json())) + "\n";
      });
      return kDone;
    };
  });
}

}  // namespace

// What `fleet worker` changes of one worker (PUT /v1/fleet/workers/{id}).
struct WorkerChange {
  std::string worker_id;
  int slots = 1;
};

// fleet worker quarantine|release|reset-circuit|slots: each one field of the worker's PUT.
void add_worker_changes(CLI::App& fleet, Action& action) {
  auto* worker = fleet.add_subcommand(
      "worker", "Change one worker: quarantine, release, reset-circuit, slots");
  worker->require_subcommand(1);
  const auto o = std::make_shared<WorkerChange>();
  const auto change = [&action, o](CLI::App* command, std::function<Json()> body) {
    command->add_option("worker_id", o->worker_id, "The worker")->required();
    command->callback([&action, o, body] {
      action = [o, body](Context& c) {
        const auto answer =
            c.client.put(Service::kApi, "/v1/fleet/workers/" + encoded(o->worker_id), body());
        c.show(answer, [&] {
          return o->worker_id + " slots " + cell(answer.value("max_slots", Json())) +
                 (answer.value("quarantined", false) ? ", quarantined" : "") + "\n";
        });
        return kDone;
      };
    });
    return command;
  };
  change(worker->add_subcommand("quarantine", "Take no new claims (running ones finish)"), [] {
    return Json{{"quarantined", true}};
  });
  change(worker->add_subcommand("release", "Lift the quarantine"), [] {
    return Json{{"quarantined", false}};
  });
  change(worker->add_subcommand("reset-circuit", "Close an open circuit (its failures forgotten)"),
         [] {
           return Json{{"reset_circuit", true}};
         });
  change(worker->add_subcommand("slots", "How many tasks it may hold at once (1..256)"),
         [o] {
           return Json{{"max_slots", o->slots}};
         })
      ->add_option("slots", o->slots, "The new slot count")
      ->required()
      ->check(CLI::Range(1, 256));
}

void add_fleet_commands(CLI::App& app, Action& action) {
  auto* fleet = app.add_subcommand(
      "fleet",
      "The workers, the task quarantines and the scopes served; `fleet worker` changes one");
  fleet->require_subcommand(0, 1);
  add_worker_changes(*fleet, action);
  fleet->callback([&action, fleet] {
    if (!fleet->get_subcommands().empty()) return;  // `fleet worker …` set its own action
    action = [](Context& c) {
      const auto answer = c.client.get(Service::kApi, "/v1/fleet");
      c.show(answer, [&] { return fleet_view(answer); });
      return kDone;
    };
  });
  app.add_subcommand("workers", "The workers: slots in use, circuit, quarantine, last seen")
      ->callback([&action] {
        action = [](Context& c) {
          const auto answer = c.client.get(Service::kApi, "/v1/fleet");
          c.show(answer.value("workers", Json::array()), [&] { return workers_view(answer); });
          return kDone;
        };
      });
  add_agents(app, action, std::make_shared<AgentOptions>());
}

}  // namespace aios::ctl
