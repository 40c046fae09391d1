// Source capture: the compact interface map over a generated tree of N source files, beside
// its floor measured in the same run: a bare walk of the same tree that reads every file.
// Reports files/s of each (median of the runs) and the peak resident memory of this process
// (VmHWM), which is the map's: generating the tree and the walk hold a few kilobytes.
// Prints one JSON object; scripts/bench turns it into docs/performance.md.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "aios/compact_map.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// VmHWM of this process in MiB.
double peak_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmHWM:")) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

// `files` small sources in directories of 100, four languages, each naming a few signal terms
// so that every file is a candidate the map has to rank.
void generate_tree(const fs::path& root, std::size_t files) {
  const char* terms[] = {"lease", "claim", "heartbeat", "worker", "scheduler", "dispatch"};
  for (std::size_t i = 0; i < files; ++i) {
    const fs::path dir = root / ("pkg" + std::to_string(i / 100));
    if (i % 100 == 0) fs::create_directories(dir);
    const std::string term = terms[i % 6];
    const std::string name = term + "_" + std::to_string(i);
    std::ostringstream text;
    switch (i % 4) {
      case 0:
        text << "class " << name << "Handler:\n    def renew_" << term << "(self, worker):\n"
             << "        return self." << term << "_state.get(worker)\n\n"
             << "def test_" << name << "():\n    assert " << name << "Handler() is not None\n";
        break;
      case 1:
        text << "#include <string>\nnamespace fleet {\nclass " << name << " {\n public:\n"
             << "  bool " << term << "(const std::string& worker);\n};\n"
             << "int dispatch_" << i << "(int slots) { return slots - 1; }\n}\n";
        break;
      case 2:
        text << "package fleet\n\ntype " << name << " struct{ Worker string }\n\n"
             << "func (s *" << name << ") Claim" << i << "(worker string) bool {\n"
             << "\treturn s.Worker == worker // " << term << "\n}\n";
        break;
      default:
        text << "export class " << name << " {\n  " << term << "(worker) {\n"
             << "    return worker.lease;\n  }\n}\nexport function schedule" << i
             << "(queue) { return queue.shift(); }\n";
    }
    for (int pad = 0; pad < 12; ++pad) {
      text << "// " << term << " note " << pad << ": the worker keeps its lease while it runs.\n";
    }
    std::ofstream(dir / (name + (i % 4 == 0   ? ".py"
                                 : i % 4 == 1 ? ".cpp"
                                 : i % 4 == 2 ? ".go"
                                              : ".ts")))
        << text.str();
  }
}

// The floor: walk the tree and read every file, nothing else.
std::size_t bare_walk(const fs::path& root) {
  std::size_t files = 0, bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes += content.size();
    ++files;
  }
  return bytes > 0 ? files : 0;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  // --smoke: a 200-file tree, one run, so CI keeps the driver working without measuring.
  const bool smoke = argc > 1 && std::string(argv[1]) == "--smoke";
  const std::size_t files = smoke ? 200 : 10000;
  const std::size_t runs = smoke ? 1 : 5;
  std::string pattern = (fs::temp_directory_path() / "aios-bench-tree-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    std::cerr << "mkdtemp failed\n";
    return 1;
  }
  const fs::path root = pattern;
  generate_tree(root, files);
  const double peak_before = peak_mib();
  const std::vector<std::string> signals = {"worker lease heartbeat", "claim dispatch scheduler"};
  const std::string commit(40, 'a');
  std::vector<double> floor, map;
  nlohmann::json last;
  for (std::size_t run = 0; run < runs; ++run) {
    auto start = Clock::now();
    const auto walked = bare_walk(root);
    floor.push_back(static_cast<double>(walked) / seconds_since(start));
    start = Clock::now();
    last = aios::compact_map::build_compact_interface_map(root, signals, commit);
    map.push_back(static_cast<double>(files) / seconds_since(start));
  }
  fs::remove_all(root);
  std::cout << nlohmann::json{{"files", files},
                              {"runs", runs},
                              {"bare_walk_files_per_second", median(floor)},
                              {"map_files_per_second", median(map)},
                              {"peak_mib_before_map", peak_before},
                              {"peak_mib", peak_mib()},
                              {"tree_scan_truncated", last["tree_scan_truncated"]},
                              {"modules_in_map", last["implementation_map"]["modules"].size()},
                              {"map_bytes", last["result_bytes"]}}
                   .dump(2)
            << '\n';
  return 0;
}
