// A keep-alive HTTP load driver: N client threads, one aios::http::Connection each, send the
// same request (or `count` numbered requests) to a loopback daemon and report requests/s.
//
//   aios-bench-http --port P --method POST --path /v1/tasks/poll --token-file F
//                   --body '{"worker_id":"w"}' --threads 4 --seconds 3
//   aios-bench-http ... --count 10000 --rotate a,b   (in each body @I@ becomes the request's
//   index, @T@ the index % 3 and @R@ the index's turn in the --rotate list)
//   aios-bench-http ... --requests-file F   (one request per line, PATH<TAB>BODY, each sent
//   once: requests that each need their own target, such as rebinds of fresh tasks)
//   aios-bench-http ... --tls-ca-file CA [--tls-certificate-file C --tls-key-file K]   (over
//   TLS, mutual with a client certificate; every thread keeps its connection, and the threads
//   share one session cache, so only the first handshake is a full one)
//
// Prints one JSON object: requests, seconds, per_second, errors, first_error. A request is an
// error when its status is not --expect (default: any 2xx). scripts/bench runs it against the
// daemons beside their floor (GET /health of the same server).
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "aios/http.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> opt = {
      {"host", "127.0.0.1"}, {"method", "GET"}, {"path", "/health"}, {"threads", "1"},
      {"seconds", "2"},      {"count", "0"},    {"expect", "0"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (!key.starts_with("--")) {
      std::cerr << "usage: aios-bench-http --port P [--method M --path P --token-file F --body B "
                   "| --body-file F --threads N --seconds S | --count C | --requests-file F "
                   "--expect STATUS]\n";
      return 2;
    }
    opt[key.substr(2)] = argv[i + 1];
  }
  try {
    const auto port = static_cast<std::uint16_t>(std::stoi(opt.at("port")));
    const std::string token = opt.contains("token-file") ? read_file(opt["token-file"]) : "";
    const std::string body = opt.contains("body-file") ? read_file(opt["body-file"]) : opt["body"];
    const auto threads = std::max<std::size_t>(1, std::stoul(opt["threads"]));
    const auto count = std::stoul(opt["count"]);
    const int expect = std::stoi(opt["expect"]);
    const auto duration = std::chrono::duration<double>(std::stod(opt["seconds"]));
    std::vector<std::pair<std::string, std::string>> listed;  // --requests-file: path, body
    if (opt.contains("requests-file")) {
      std::ifstream in(opt["requests-file"]);
      if (!in) throw std::runtime_error("cannot read " + opt["requests-file"]);
      for (std::string line; std::getline(in, line);) {
        const auto tab = line.find('\t');
        if (tab == std::string::npos) throw std::runtime_error("a request line without a tab");
        listed.emplace_back(line.substr(0, tab), line.substr(tab + 1));
      }
    }
    std::vector<std::string> rotate;
    for (std::stringstream list(opt["rotate"]); list.good();) {
      std::string item;
      std::getline(list, item, ',');
      rotate.push_back(item);
    }

    std::shared_ptr<aios::http::TlsClientCredentials> tls;
    if (opt.contains("tls-ca-file")) {
      tls = std::make_shared<aios::http::TlsClientCredentials>(aios::http::TlsClientFiles{
          opt["tls-ca-file"], opt["tls-certificate-file"], opt["tls-key-file"]});
    }
    std::atomic<std::size_t> next{0}, done{0}, errors{0};
    std::mutex error_mutex;
    std::string first_error;
    const auto note_error = [&](const std::string& what) {
      ++errors;
      const std::lock_guard lock(error_mutex);
      if (first_error.empty()) first_error = what;
    };
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(duration);
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        aios::http::Connection connection(opt["host"], port, std::chrono::seconds(60), tls);
        while (true) {
          std::string request_body = body;
          std::string path = opt["path"];
          if (!listed.empty()) {
            const auto index = next++;
            if (index >= listed.size()) break;
            path = listed[index].first;
            request_body = listed[index].second;
          } else if (count > 0) {
            const auto index = next++;
            if (index >= count) break;
            request_body = replace_all(body, "@I@", std::to_string(index));
            request_body = replace_all(request_body, "@T@", std::to_string(index % 3));
            request_body = replace_all(request_body, "@R@", rotate[index % rotate.size()]);
          } else if (Clock::now() >= deadline) {
            break;
          }
          try {
            const auto response = connection.request(opt["method"], path, token, request_body);
            const bool ok = expect != 0 ? response.status == expect
                                        : response.status >= 200 && response.status < 300;
            if (!ok)
              note_error(std::to_string(response.status) + " " + response.body.substr(0, 300));
          } catch (const std::exception& error) {
            note_error(error.what());
          }
          ++done;
        }
      });
    }
    for (auto& thread : pool) thread.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::cout << nlohmann::json{{"requests", done.load()},
                                {"seconds", seconds},
                                {"per_second", static_cast<double>(done.load()) / seconds},
                                {"errors", errors.load()},
                                {"first_error", first_error}}
                     .dump()
              << '\n';
    return errors.load() == 0 ? 0 : 1;
  } catch (const std::exception& error) {
    std::cerr << "aios-bench-http: " << error.what() << '\n';
    return 2;
  }
}
