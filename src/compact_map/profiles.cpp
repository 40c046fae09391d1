#include "compact_map/profiles.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>

#include "aios/canonical.hpp"
#include "aios/compact_map.hpp"
#include "aios/error.hpp"

namespace aios::compact_map {
namespace {

// The seed shows the last two lines of DEFAULT_TERMS (from "backoff" on); the lines above are
// rebuilt from the fleet contract terms and the failure-window words.
const std::set<std::string, std::less<>> kDefaultTerms = {
    "agent",      "worker",   "fleet",       "scheduler", "capacity",   "slot",
    "queue",      "fair",     "priority",    "lease",     "heartbeat",  "claim",
    "retry",      "reassign", "quarantine",  "backoff",   "circuit",    "health",
    "liveness",   "scope",    "tenant",      "project",   "trace",      "message",
    "checkpoint", "recovery", "idempotency", "dispatch",  "assignment",
};

// Words every signal sentence has and no contract is about.
const std::set<std::string, std::less<>> kStopWords = {
    "the", "and", "for", "with", "from", "into", "that", "this", "are", "not",
};

const std::set<std::string, std::less<>> kModelProfileMarkers = {
    "model", "provider", "llm",      "inference",  "routing", "router",   "budget",  "token",
    "cost",  "quota",    "fallback", "evaluation", "eval",    "approval", "version", "pinning",
};

const std::vector<ContractTerms> kFleetContracts = {
    {"FLEET_AGENT_REGISTRATION", {"agent", "register", "worker", "capability", "version"}},
    {"FLEET_CAPACITY_SCHEDULING", {"capacity", "slot", "concurrency", "scheduler", "queue"}},
    {"FLEET_FAIRNESS", {"fair", "priority", "queue", "tenant", "project", "starvation"}},
    // The seed's hunks skip the three lines between FLEET_FAIRNESS and
    // FLEET_IDEMPOTENT_DISPATCH; these three are rebuilt from its failure windows and
    // invariants.
    {"FLEET_HEALTH_CIRCUIT", {"health", "heartbeat", "liveness", "circuit", "backoff"}},
    {"FLEET_WORKER_REASSIGNMENT", {"reassign", "assignment", "lease", "expiry", "quarantine"}},
    {"FLEET_SCOPE_LINEAGE", {"scope", "tenant", "project", "trace", "message"}},
    {"FLEET_IDEMPOTENT_DISPATCH", {"idempot", "dispatch", "claim", "lease", "result", "attempt"}},
    {"FLEET_FAILURE_RECOVERY", {"checkpoint", "resume", "recover", "retry", "cleanup", "receipt"}},
};

const std::vector<ContractTerms> kModelGovernanceContracts = {
    {"MODEL_PROVIDER_REGISTRY", {"model", "provider", "registry", "endpoint", "capability"}},
    {"MODEL_SELECTION_POLICY", {"model", "select", "route", "policy", "capability"}},
    {"MODEL_VERSION_PINNING", {"model", "version", "pin", "revision", "snapshot"}},
    {"MODEL_BUDGET_ACCOUNTING", {"budget", "token", "cost", "quota", "usage"}},
    {"MODEL_FALLBACK_POLICY", {"fallback", "retry", "route", "provider", "model"}},
    {"MODEL_SCOPE_ISOLATION", {"tenant", "project", "scope", "policy", "model"}},
    {"MODEL_CREDENTIAL_BOUNDARY", {"credential", "secret", "provider", "tool", "token"}},
    {"MODEL_TRACE_AUDIT", {"trace", "audit", "model", "provider", "request"}},
    {"MODEL_EVALUATION_GATE", {"eval", "evaluation", "approval", "quality", "gate"}},
    {"MODEL_ROUTING_RESILIENCE", {"route", "retry", "fallback", "timeout", "health"}},
};

bool is_ascii_letter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

bool is_token_char(char c) {
  return is_ascii_letter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace

const std::vector<ContractTerms>& contract_terms(std::string_view profile) {
  if (profile == kProfileModelGovernance) return kModelGovernanceContracts;
  if (profile == kProfileFleet) return kFleetContracts;
  throw Error(ErrorCode::INTERFACE_MAP_PROFILE_INVALID);
}

std::string_view classification_for(std::string_view profile) {
  if (profile == kProfileModelGovernance) return kClassificationModelGovernance;
  if (profile == kProfileFleet) return kClassificationFleet;
  throw Error(ErrorCode::INTERFACE_MAP_PROFILE_INVALID);
}

std::vector<std::string> signal_tokens(const std::vector<std::string>& source_signals) {
  std::vector<std::string> tokens;
  for (const std::string& signal : source_signals) {
    std::size_t i = 0;
    while (i < signal.size()) {
      if (!is_ascii_letter(signal[i])) {
        ++i;
        continue;
      }
      std::size_t end = i + 1;
      while (end < signal.size() && end - i < 64 && is_token_char(signal[end])) ++end;
      if (end - i < 3) {
        ++i;
        continue;
      }
      tokens.push_back(ascii_lower(std::string_view(signal).substr(i, end - i)));
      i = end;
    }
  }
  return tokens;
}

std::string select_profile(const std::vector<std::string>& source_signals) {
  std::set<std::string, std::less<>> markers;
  for (std::string& token : signal_tokens(source_signals)) {
    if (kModelProfileMarkers.contains(token)) markers.insert(std::move(token));
  }
  return std::string(markers.size() >= 2 ? kProfileModelGovernance : kProfileFleet);
}

std::vector<std::string> signal_terms(const std::vector<std::string>& source_signals) {
  std::set<std::string, std::less<>> terms(kDefaultTerms.begin(), kDefaultTerms.end());
  const auto add = [&](std::string_view term) {
    if (term.size() >= 3 && !kStopWords.contains(term)) terms.emplace(term);
  };
  for (const std::string& token : signal_tokens(source_signals)) {
    add(token);
    // "model-router.py" should also find "router": code names join words with these.
    std::size_t start = 0;
    for (std::size_t i = 0; i <= token.size(); ++i) {
      if (i == token.size() || token[i] == '.' || token[i] == '_' || token[i] == '-') {
        if (start != 0 || i != token.size()) add(std::string_view(token).substr(start, i - start));
        start = i + 1;
      }
    }
  }
  std::vector<std::string> sorted(terms.begin(), terms.end());
  if (sorted.size() > 96) sorted.resize(96);
  return sorted;
}

GapEvidence gap_evidence(const std::vector<Symbol>& symbols, std::string_view profile) {
  std::string haystack;
  for (const Symbol& symbol : symbols) {
    if (!haystack.empty()) haystack += '\n';
    haystack += ascii_lower(surface_ref(symbol));
  }
  const auto has = [&](std::string_view word) { return contains(haystack, word); };

  GapEvidence evidence;
  std::vector<std::pair<std::string_view, std::string_view>> desired;
  if (profile == kProfileModelGovernance) {
    evidence.invariants = {
        "Online Task claim/heartbeat remains the authoritative worker ownership boundary.",
        "Provider/model credentials remain outside uncredentialed planner/executor processes.",
        "P0-A tenant/project scope and P0-C trace/audit lineage must constrain model routing.",
        "P1 retry/checkpoint semantics remain authoritative for model-call execution recovery.",
    };
    if (!has("provider") && !has("model")) {
      evidence.failure_windows.emplace_back(
          "No first-class model/provider registry surface detected.");
    }
    if (!has("budget") && !has("cost") && !has("quota")) {
      evidence.failure_windows.emplace_back(
          "No explicit durable model budget/cost/quota accounting surface detected.");
    }
    if (!has("fallback") && !has("route")) {
      evidence.failure_windows.emplace_back(
          "No explicit model fallback/routing policy surface detected.");
    }
    if (!has("eval") && !has("approval")) {
      evidence.failure_windows.emplace_back(
          "No explicit evaluation/approval gate surface detected for model changes.");
    }
    if (!has("version") && !has("pin")) {
      evidence.failure_windows.emplace_back("No explicit model-version pinning surface detected.");
    }
    desired = {
        {"trace", "P0-C trace/audit lineage"},
        {"scope", "P0-A tenant/project scope isolation"},
        {"credential", "P0-C credential governance"},
        {"checkpoint", "P1 durable execution recovery"},
        {"message", "P0-B MessageEnvelope/handoff"},
        {"retry", "P1 retry/idempotency"},
    };
  } else if (profile == kProfileFleet) {
    evidence.invariants = {
        "Online Task claim/heartbeat remains the authoritative worker ownership boundary.",
        "Governed mutation remains separated from read-only analysis and requires WriterLease.",
        "P1 attempt-aware result idempotency and durable checkpoint recovery are reusable fleet "
        "primitives.",
        "Scope/trace/message lineage must remain attached when work is scheduled or reassigned.",
    };
    if (!has("scheduler")) {
      evidence.failure_windows.emplace_back(
          "No first-class durable fleet scheduler symbol detected; worker-local polling may "
          "still be the scheduling mechanism.");
    }
    if (!has("capacity") && !has("slot")) {
      evidence.failure_windows.emplace_back(
          "No explicit durable worker-capacity/slot primitive detected.");
    }
    if (!has("fair") && !has("starvation")) {
      evidence.failure_windows.emplace_back(
          "No explicit fairness/starvation policy symbol detected.");
    }
    if (!has("circuit")) {
      evidence.failure_windows.emplace_back(
          "No explicit circuit-breaker primitive detected for repeated worker/task failures.");
    }
    if (!has("reassign")) {
      evidence.failure_windows.emplace_back(
          "No explicit worker-reassignment primitive detected beyond lease expiry/retry "
          "semantics.");
    }
    desired = {
        {"checkpoint", "P1 durable checkpoint/resume"},
        {"message", "P0-B MessageEnvelope/handoff"},
        {"trace", "P0-C trace correlation"},
        {"scope", "P0-A scope isolation"},
        {"lease", "claim/WriterLease ownership"},
        {"heartbeat", "worker liveness"},
        {"idempot", "retry-safe dispatch/result"},
    };
  } else {
    throw Error(ErrorCode::INTERFACE_MAP_PROFILE_INVALID);
  }

  for (const auto& [token, label] : desired) {
    // An explicit capture: clang before 16 cannot capture a structured binding implicitly.
    const auto match =
        std::find_if(symbols.begin(), symbols.end(), [&wanted = token](const Symbol& symbol) {
          return contains(ascii_lower(surface_ref(symbol)), wanted);
        });
    if (match != symbols.end()) {
      evidence.reuse_points.push_back(std::string(label) + ": " + surface_ref(*match));
    }
  }
  return evidence;
}

}  // namespace aios::compact_map
