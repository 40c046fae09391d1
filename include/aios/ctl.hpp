#pragma once
// aiosctl, the operator's command line: a thin client of the Task API, the Bridge and the
// rebind service (never the database), as the owner. Human tables by default, the APIs' JSON
// with --json; `watch` redraws a live view on a terminal; `doctor` checks an installed host.
// docs/operations.md ("aiosctl") lists every subcommand.
//
// Exit codes (the API's error classes, so a script can branch on them):
//   0 done · 1 an unexpected failure · 2 usage · 3 not found (404) · 4 not allowed (401, 403)
//   5 conflict (409: a task moved on, a CAS that no longer holds) · 6 invalid (400, 413)
//   7 unavailable (a service unreachable, 5xx, a timeout) · 8 doctor found a problem

#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "aios/error.hpp"

namespace aios::ctl {

enum Exit : int {
  kDone = 0,
  kFailed = 1,
  kUsage = 2,
  kNotFound = 3,
  kNotAllowed = 4,
  kConflict = 5,
  kInvalid = 6,
  kUnavailable = 7,
  kFindings = 8,
};

// An argument aiosctl cannot use (a file that is not JSON, a duration it cannot read): exit 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The exit code of a refusal or failure, by the HTTP status its code carries.
int exit_code_of(const Error& error);

// Runs aiosctl on `argv` (argv[0] is the program), writing to `out` and `err`; the exit code.
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// A text table: the header, then each row, columns padded to their widest cell (cells over
// `max_cell` characters are cut with "…"), two spaces apart, no trailing blanks.
std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows, std::size_t max_cell = 48);

// "30d", "12h", "90m", "3600s" or plain seconds -> seconds. UsageError on anything else.
long long seconds_of(const std::string& duration);

}  // namespace aios::ctl
