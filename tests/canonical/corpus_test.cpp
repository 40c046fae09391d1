// Replays tests/data/canonical/corpus.jsonl, written by generate.py from Python's json module.

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "aios/canonical.hpp"

namespace {

struct CorpusCase {
  std::string name;
  std::string input;
  std::string canonical;
  std::string sha256;
};

void PrintTo(const CorpusCase& c, std::ostream* os) {
  *os << c.name << " input=" << c.input;
}

std::string from_hex(const std::string& hex) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return bytes;
}

// Loaded at registration time so each case becomes its own test; an unreadable file leaves
// the list empty, which CorpusIsComplete reports.
std::vector<CorpusCase> load_corpus() {
  std::vector<CorpusCase> cases;
  std::ifstream in(AIOS_TEST_DATA_DIR "/canonical/corpus.jsonl", std::ios::binary);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    cases.push_back({record.at("name").get<std::string>(), record.at("input").get<std::string>(),
                     from_hex(record.at("canonical_hex").get<std::string>()),
                     record.at("sha256").get<std::string>()});
  }
  return cases;
}

const std::vector<CorpusCase>& corpus() {
  static const std::vector<CorpusCase> cases = load_corpus();
  return cases;
}

class CanonicalCorpus : public testing::TestWithParam<CorpusCase> {};

TEST_P(CanonicalCorpus, MatchesPythonJsonDumps) {
  const CorpusCase& c = GetParam();
  // Deep enough for the corpus's deepest case; parse_json keeps integers past 64 bits exactly.
  const nlohmann::json value = aios::parse_json(c.input, 1001);
  EXPECT_EQ(aios::canonical_json(value), c.canonical);
  EXPECT_EQ(aios::digest(value), c.sha256);
}

INSTANTIATE_TEST_SUITE_P(Python, CanonicalCorpus, testing::ValuesIn(corpus()),
                         [](const testing::TestParamInfo<CorpusCase>& param_info) {
                           std::string name = param_info.param.name;
                           for (char& ch : name) {
                             if (std::isalnum(static_cast<unsigned char>(ch)) == 0) ch = '_';
                           }
                           return name;
                         });

TEST(CanonicalCorpusFile, CorpusIsComplete) {
  std::set<std::string> names;
  for (const CorpusCase& c : corpus()) names.insert(c.name);
  EXPECT_EQ(names.size(), corpus().size()) << "case names must be unique";
  EXPECT_GE(corpus().size(), 600u);
  for (const char* required :
       {"control_00", "control_1f", "del", "max_code_point", "keys_non_bmp_vs_bmp", "keys_accents",
        "int64_min", "uint64_max", "float_neg_zero", "float_1e16", "text_duplicate_keys",
        "random_value_199", "int_2_64", "int_4300_digits", "random_big_int_49"}) {
    EXPECT_EQ(names.count(required), 1u) << required;
  }
}

}  // namespace
