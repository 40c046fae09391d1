#pragma once
// The egress relay of one sandboxed run: it accepts on the listeners made inside the sandbox's
// network namespace and connects each connection, from this process's network, to the one
// destination its listener stands for. Nothing else leaves the sandbox.

#include <memory>
#include <utility>
#include <vector>

#include "aios/process.hpp"

namespace aios::process {

class Relay {
 public:
  // Takes the listeners; relays on its own thread until destroyed.
  explicit Relay(std::vector<std::pair<Fd, Destination>> listeners);
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace aios::process
