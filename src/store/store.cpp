// What every backend's store::Store shares: the two-step write over Transaction::attempt.
#include "aios/store.hpp"

namespace aios::store {

std::exception_ptr Store::write_then(const std::function<void(Transaction&)>& body,
                                     const std::function<void(Transaction&)>& then) {
  std::exception_ptr then_error;
  write([&](Transaction& tx) {
    then_error = nullptr;  // a re-run body starts over
    body(tx);
    then_error = tx.attempt(then);
  });
  return then_error;
}

}  // namespace aios::store
