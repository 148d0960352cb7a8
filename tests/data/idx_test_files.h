// Helpers for the data tests: build IDX bytes by hand and write them to
// files, plain or gzip-compressed, under the test's temporary directory.
#ifndef KINDLING_TESTS_DATA_IDX_TEST_FILES_H_
#define KINDLING_TESTS_DATA_IDX_TEST_FILES_H_

#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <string>

#include "gtest/gtest.h"

namespace kindling::data::testing {

// IdxHeader() is the big-endian header: two zero bytes, the type byte, the
// rank byte, then each dimension as a big-endian u32.
inline std::string IdxHeader(uint8_t type, std::initializer_list<uint32_t> dims,
                             int rank = -1) {
  std::string header = {0, 0, static_cast<char>(type),
                        static_cast<char>(rank < 0 ? dims.size() : rank)};
  for (uint32_t dim : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      header.push_back(static_cast<char>((dim >> shift) & 0xFF));
    }
  }
  return header;
}

// U8Idx() is a complete u8 IDX file whose elements are 0, 1, 2, ...
inline std::string U8Idx(std::initializer_list<uint32_t> dims) {
  std::string bytes = IdxHeader(0x08, dims);
  int64_t count = 1;
  for (uint32_t dim : dims) count *= dim;
  for (int64_t i = 0; i < count; ++i) bytes.push_back(static_cast<char>(i));
  return bytes;
}

// TestPath() is a fresh path in the test's temporary directory.
inline std::string TestPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

inline std::string WriteFile(const std::string& name,
                             const std::string& bytes) {
  const std::string path = TestPath(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(out.good()) << "cannot write " << path;
  return path;
}

// Gzip() is `bytes` as a complete gzip stream (header, deflate data, CRC and
// length trailer).
inline std::string Gzip(const std::string& bytes) {
  z_stream stream{};
  EXPECT_EQ(Z_OK, deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED,
                               /*windowBits=*/15 + 16, /*memLevel=*/8,
                               Z_DEFAULT_STRATEGY));
  std::string out(deflateBound(&stream, bytes.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(Z_STREAM_END, deflate(&stream, Z_FINISH));
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

}  // namespace kindling::data::testing

#endif  // KINDLING_TESTS_DATA_IDX_TEST_FILES_H_
