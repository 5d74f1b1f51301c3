#include "jpeg_tables.h"

namespace tandem::image {

std::string unsafe_jpeg_reason(const unsigned char* bytes, size_t size) {
  if (size < 2 || bytes[0] != 0xFF || bytes[1] != 0xD8) return "";
  // Walk the marker segments (each FF xx, then a big-endian length that counts
  // itself) after SOI. Entropy-coded data after a scan header is skipped up to
  // the next marker: FF followed by neither a stuffed 00 nor a restart D0-D7.
  // Progressive files define tables between scans, so the walk goes on to EOI.
  size_t pos = 2;
  while (pos + 4 <= size) {
    if (bytes[pos] != 0xFF) return "";  // damage stb reports itself
    const unsigned char marker = bytes[pos + 1];
    if (marker == 0xFF) {  // fill byte before a marker
      ++pos;
      continue;
    }
    if (marker == 0xD9) return "";
    const size_t length = (size_t{bytes[pos + 2]} << 8) | bytes[pos + 3];
    if (length < 2 || pos + 2 + length > size) return "";
    const size_t end = pos + 2 + length;
    if (marker == 0xC4) {
      // DHT: tables of a class/id byte, 16 counts, then that many symbols.
      for (size_t t = pos + 4; t < end;) {
        if (t + 17 > end) return "";
        size_t symbols = 0;
        for (size_t i = 1; i <= 16; ++i) symbols += bytes[t + i];
        if (symbols > 256)
          return "a Huffman table (DHT) with " + std::to_string(symbols) + " codes, more than the 256 a JPEG allows";
        t += 17 + symbols;
      }
    }
    pos = end;
    if (marker == 0xDA) {
      while (pos + 1 < size && !(bytes[pos] == 0xFF && bytes[pos + 1] != 0 && (bytes[pos + 1] & 0xF8) != 0xD0)) ++pos;
    }
  }
  return "";
}

}  // namespace tandem::image
