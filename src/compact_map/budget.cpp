#include "compact_map/budget.hpp"

#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/error.hpp"

namespace aios::compact_map {
namespace {

// The bytes `,"result_bytes":<size>` adds to a canonical object of `size` bytes.
std::size_t result_bytes_field(std::size_t size) {
  return std::string(R"(,"result_bytes":)").size() + std::to_string(size).size();
}

// Keeps the canonical size of the map current without serializing it again per dropped
// entry: canonical JSON has no whitespace, so an array loses exactly the entry and its comma.
class Trimmer {
 public:
  Trimmer(const nlohmann::json& map, std::size_t budget)
      : budget_(budget), size_(canonical_json(map).size()) {}

  bool fits() const { return size_ + result_bytes_field(size_) <= budget_; }

  void drain(nlohmann::json& array) {
    while (!fits() && !array.empty()) {
      size_ -= canonical_json(array.back()).size() + (array.size() > 1 ? 1 : 0);
      array.erase(array.size() - 1);
    }
  }

 private:
  std::size_t budget_;
  std::size_t size_;
};

}  // namespace

void trim_to_budget(nlohmann::json& map, std::size_t budget) {
  map.erase("result_bytes");
  map["trimmed_to_budget"] = false;
  if (Trimmer(map, budget).fits()) {
    map["result_bytes"] = canonical_json(map).size();
    return;
  }
  map["trimmed_to_budget"] = true;
  Trimmer trimmer(map, budget);
  nlohmann::json& implementation = map["implementation_map"];
  std::vector<nlohmann::json*> order = {&map["bounded_excerpts"], &implementation["tests"],
                                        &implementation["functions"], &implementation["classes"]};
  nlohmann::json& contracts = map["contracts"];
  for (auto it = contracts.rbegin(); it != contracts.rend(); ++it) {
    order.push_back(&(*it)["surfaces"]);
    order.push_back(&(*it)["modules"]);
  }
  order.push_back(&implementation["modules"]);
  for (nlohmann::json* list : order) trimmer.drain(*list);
  if (!trimmer.fits()) throw Error(ErrorCode::INTERFACE_MAP_BUDGET_EXCEEDED);
  map["result_bytes"] = canonical_json(map).size();
}

}  // namespace aios::compact_map
