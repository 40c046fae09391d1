#pragma once
// The seed's semantic tables: signal terms, the two profiles' contract terms, and the
// invariants, failure windows and reuse points each profile states about a set of symbols.

#include <string>
#include <string_view>
#include <vector>

#include "compact_map/model.hpp"

namespace aios::compact_map {

struct ContractTerms {
  std::string_view contract;
  std::vector<std::string_view> terms;
};

// The seed's FLEET_CONTRACT_TERMS or MODEL_GOVERNANCE_CONTRACT_TERMS, in the seed's order;
// INTERFACE_MAP_PROFILE_INVALID for another profile.
const std::vector<ContractTerms>& contract_terms(std::string_view profile);

// re.findall(r"[A-Za-z][A-Za-z0-9_.-]{2,63}", signal) over every signal, lower-cased.
std::vector<std::string> signal_tokens(const std::vector<std::string>& source_signals);

// The seed's _signal_terms: the signals' tokens (and their parts split at `._-`) with the
// default terms, sorted, at most 96.
std::vector<std::string> signal_terms(const std::vector<std::string>& source_signals);

struct GapEvidence {
  std::vector<std::string> invariants;
  std::vector<std::string> failure_windows;
  std::vector<std::string> reuse_points;
};

// The seed's _gap_evidence for `profile` over `symbols` (in map order).
GapEvidence gap_evidence(const std::vector<Symbol>& symbols, std::string_view profile);

}  // namespace aios::compact_map
