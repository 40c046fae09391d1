// Assembles the compact interface map from the ranked files, their symbols and the profile.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/compact_map.hpp"
#include "aios/error.hpp"
#include "compact_map/budget.hpp"
#include "compact_map/excerpts.hpp"
#include "compact_map/profiles.hpp"
#include "compact_map/symbols.hpp"
#include "compact_map/tree.hpp"

namespace aios::compact_map {
namespace {

// How many symbol references and module paths one contract lists.
constexpr std::size_t kMaxContractEntries = 8;

bool is_source_commit(std::string_view value) {
  return value.size() == 40 && std::all_of(value.begin(), value.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

nlohmann::json symbol_json(const Symbol& symbol) {
  return {{"name", symbol.name},
          {"kind", symbol.kind},
          {"language", symbol.language},
          {"path", symbol.path},
          {"line", symbol.line}};
}

bool is_class_kind(std::string_view kind) {
  return kind != "function" && kind != "method";
}

// The seed's _contract_map: each contract's surfaces are the symbols holding the most of its
// terms (ties by reference), its modules the ranked files whose path holds one.
nlohmann::json contract_map(const std::vector<Symbol>& symbols,
                            const std::vector<std::string>& module_paths,
                            const std::vector<ContractTerms>& contracts) {
  std::vector<std::string> refs;
  refs.reserve(symbols.size());
  for (const Symbol& symbol : symbols) refs.push_back(surface_ref(symbol));
  nlohmann::json result = nlohmann::json::object();
  for (const ContractTerms& contract : contracts) {
    const auto score = [&](const std::string& text) {
      const std::string haystack = ascii_lower(text);
      return std::count_if(contract.terms.begin(), contract.terms.end(), [&](std::string_view t) {
        return haystack.find(t) != std::string::npos;
      });
    };
    std::vector<std::pair<std::ptrdiff_t, std::string>> scored;
    for (const std::string& ref : refs) {
      if (const auto hits = score(ref); hits > 0) scored.emplace_back(-hits, ref);
    }
    std::sort(scored.begin(), scored.end());
    scored.erase(std::unique(scored.begin(), scored.end()), scored.end());
    nlohmann::json surfaces = nlohmann::json::array();
    for (const auto& [negative_hits, ref] : scored) {
      if (surfaces.size() == kMaxContractEntries) break;
      surfaces.push_back(ref);
    }
    nlohmann::json modules = nlohmann::json::array();
    for (const std::string& path : module_paths) {
      if (modules.size() == kMaxContractEntries) break;
      if (score(path) > 0) modules.push_back(path);
    }
    const bool mapped = !surfaces.empty();
    result[std::string(contract.contract)] = {
        {"status", mapped ? "MAPPED" : "GAP"}, {"surfaces", surfaces}, {"modules", modules}};
  }
  return result;
}

}  // namespace

nlohmann::json build_compact_interface_map(const std::filesystem::path& worktree,
                                           const std::vector<std::string>& source_signals,
                                           std::string_view source_commit, const Options& options) {
  if (!is_source_commit(source_commit)) {
    throw Error(ErrorCode::INTERFACE_MAP_SOURCE_COMMIT_INVALID);
  }
  const std::string profile = options.profile ? *options.profile : select_profile(source_signals);
  const std::string_view classification = classification_for(profile);
  if (options.budget_bytes < kMinBudgetBytes || options.budget_bytes > kMaxResultBytes) {
    throw Error(ErrorCode::INTERFACE_MAP_BUDGET_INVALID);
  }
  const Limits& limits = options.limits;
  const std::vector<std::string> terms = signal_terms(source_signals);
  const RankedFiles ranked = rank_files(worktree, terms, limits);
  if (ranked.files.empty()) throw Error(ErrorCode::INTERFACE_MAP_CANDIDATES_EMPTY);

  nlohmann::json modules = nlohmann::json::array();
  nlohmann::json classes = nlohmann::json::array();
  nlohmann::json functions = nlohmann::json::array();
  nlohmann::json tests = nlohmann::json::array();
  nlohmann::json excerpts = nlohmann::json::array();
  std::vector<Symbol> all_symbols;
  std::vector<std::string> module_paths;
  for (const SourceFile& file : ranked.files) {
    const std::vector<Symbol> symbols = scan_symbols(file, limits.max_symbols_per_file);
    modules.push_back({{"path", file.path},
                       {"language", file.language},
                       {"score", file.score},
                       {"hits", file.hits},
                       {"lines", line_count(file.content)},
                       {"symbols", symbols.size()}});
    module_paths.push_back(file.path);
    const bool test_file = is_test_path(file.path);
    for (const Symbol& symbol : symbols) {
      nlohmann::json& list = test_file ? tests : is_class_kind(symbol.kind) ? classes : functions;
      list.push_back(symbol_json(symbol));
    }
    for (nlohmann::json& excerpt : file_excerpts(file, symbols, terms, limits)) {
      if (excerpts.size() == limits.max_excerpts) break;
      excerpts.push_back(std::move(excerpt));
    }
    all_symbols.insert(all_symbols.end(), symbols.begin(), symbols.end());
  }

  GapEvidence evidence = gap_evidence(all_symbols, profile);
  nlohmann::json map = {
      {"schema", kSchema},
      {"profile", profile},
      {"classification", classification},
      {"source_commit", source_commit},
      {"signal_terms", terms},
      {"tree_scan_truncated", ranked.truncated},
      {"implementation_map",
       {{"modules", std::move(modules)},
        {"classes", std::move(classes)},
        {"functions", std::move(functions)},
        {"tests", std::move(tests)}}},
      {"gap_evidence",
       {{"invariants", evidence.invariants},
        {"failure_windows", evidence.failure_windows},
        {"reuse_points", evidence.reuse_points}}},
      {"bounded_excerpts", std::move(excerpts)},
      {"contracts", contract_map(all_symbols, module_paths, contract_terms(profile))},
  };
  trim_to_budget(map, options.budget_bytes);
  return map;
}

}  // namespace aios::compact_map
