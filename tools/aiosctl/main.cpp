// aiosctl: the operator's command line for the running suite (see aios/ctl.hpp).
#include <iostream>

#include "aios/ctl.hpp"

int main(int argc, char** argv) {
  return aios::ctl::run(argc, argv, std::cout, std::cerr);
}
