// Runs a fuzz target (safetensors_fuzzer.cc, torch_zip_fuzzer.cc) over its
// checked-in corpus with the normal toolchain, so the target keeps compiling
// and the corpus keeps passing its invariants in every `tools/bazel test`
// (libFuzzer itself needs clang: tests/io/run_fuzzer.sh).
//
//   fuzzer_replay_test MIN_INPUTS SUFFIX DIR...
//
// replays every file of the DIRs whose name contains SUFFIX and fails when
// fewer than MIN_INPUTS were found.
#include <dirent.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MIN_INPUTS SUFFIX DIR...\n", argv[0]);
    return 2;
  }
  const int min_inputs = std::atoi(argv[1]);
  const std::string suffix = argv[2];
  int inputs = 0;
  for (int arg = 3; arg < argc; ++arg) {
    const char* dir = argv[arg];
    DIR* listing = ::opendir(dir);
    if (listing == nullptr) {
      std::fprintf(stderr, "cannot open %s\n", dir);
      return 1;
    }
    while (dirent* entry = ::readdir(listing)) {
      const std::string name = entry->d_name;
      if (name.find(suffix) == std::string::npos) continue;
      std::ifstream in(std::string(dir) + "/" + name, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), {});
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                             bytes.size());
      ++inputs;
    }
    ::closedir(listing);
  }
  std::printf("replayed %d inputs\n", inputs);
  return inputs >= min_inputs ? 0 : 1;
}
