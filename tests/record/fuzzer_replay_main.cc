// Runs the fuzz target (safetensors_fuzzer.cc) over the checked-in corpus
// with the normal toolchain, so the target keeps compiling and the corpus
// keeps passing its invariants in every `tools/bazel test` (libFuzzer itself
// needs clang: tests/record/run_fuzzer.sh).
#include <dirent.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main() {
  int inputs = 0;
  for (const char* dir : {"tests/record/malformed", "tests/data"}) {
    DIR* listing = ::opendir(dir);
    if (listing == nullptr) {
      std::fprintf(stderr, "cannot open %s\n", dir);
      return 1;
    }
    while (dirent* entry = ::readdir(listing)) {
      const std::string name = entry->d_name;
      if (name.find(".safetensors") == std::string::npos) continue;
      std::ifstream in(std::string(dir) + "/" + name, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), {});
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                             bytes.size());
      ++inputs;
    }
    ::closedir(listing);
  }
  std::printf("replayed %d inputs\n", inputs);
  return inputs >= 20 ? 0 : 1;
}
