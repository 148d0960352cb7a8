// kindling-inspect: validate a safetensors checkpoint and print its contents.
// See inspect.h for the usage and exit codes.
#include <iostream>
#include <string>
#include <vector>

#include "kindling/io/inspect.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return kindling::io::RunInspect(args, std::cout, std::cerr);
}
