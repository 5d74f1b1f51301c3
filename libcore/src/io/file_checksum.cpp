#include "tandem/io/file_checksum.h"

#include <boost/crc.hpp>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "tandem/error.h"

namespace tandem {

std::string file_crc64(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(path + ": cannot open: " + std::strerror(errno));
  boost::crc_optimal<64, 0x42F0E1EBA9EA3693ULL, ~0ULL, ~0ULL, true, true> crc;
  std::vector<char> chunk(size_t{1} << 22);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    crc.process_bytes(chunk.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw UsageError(path + ": read failed: " + std::strerror(errno));
  char text[32];
  std::snprintf(text, sizeof text, "crc64:%016" PRIx64, static_cast<uint64_t>(crc.checksum()));
  return text;
}

}  // namespace tandem
