#include "kindling/tensor/philox_generator.h"

#include <limits>

#include "kindling/core/check.h"

namespace kindling {

uint64_t PhiloxGenerator::ReserveBlocks(uint64_t blocks) {
  const uint64_t start = state_.offset;
  KINDLING_CHECK(blocks <= std::numeric_limits<uint64_t>::max() - start,
                 "PhiloxGenerator: reserving %d blocks at offset %d passes "
                 "2^64",
                 blocks, start);
  state_.offset = start + blocks;
  return start;
}

}  // namespace kindling
