#include "jpeg_tables.h"

namespace tandem::image {

std::string unsafe_jpeg_reason(const unsigned char* bytes, size_t size) {
  // stb takes any run of FF bytes before SOI's D8.
  size_t pos = 0;
  while (pos < size && bytes[pos] == 0xFF) ++pos;
  if (pos == 0 || pos >= size || bytes[pos] != 0xD8) return "";
  ++pos;
  // Walk the marker segments (each FF xx, then a big-endian length that counts
  // itself) after SOI, as stb's parser walks them. Entropy-coded data after a scan header is skipped up to
  // the next marker: FF followed by neither a stuffed 00 nor a restart D0-D7.
  // Progressive files define tables between scans, so the walk goes on to EOI.
  while (pos + 4 <= size) {
    // stb steps over bytes that start no marker, and over fill bytes (FF FF).
    if (bytes[pos] != 0xFF || bytes[pos + 1] == 0xFF) {
      ++pos;
      continue;
    }
    const unsigned char marker = bytes[pos + 1];
    if (marker == 0xD9) return "";
    const size_t length = (size_t{bytes[pos + 2]} << 8) | bytes[pos + 3];
    if (length < 2) return "";
    const size_t end = pos + 2 + length;
    if (marker == 0xC4) {
      // DHT: tables of a class/id byte, 16 counts, then that many symbols.
      // stb reads them as far as the segment's length says, whatever the
      // file's size (bytes past its end read as 0), and so does this.
      const auto byte_at = [&](size_t i) -> size_t { return i < size ? bytes[i] : 0; };
      for (size_t t = pos + 4; t < end;) {
        if ((byte_at(t) >> 4) > 1 || (byte_at(t) & 15) > 3) return "";  // stb refuses the table itself
        size_t symbols = 0;
        for (size_t i = 1; i <= 16; ++i) symbols += byte_at(t + i);
        if (symbols > 256)
          return "a Huffman table (DHT) with " + std::to_string(symbols) + " codes, more than the 256 a JPEG allows";
        t += 17 + symbols;
      }
    }
    if (end > size) return "";
    pos = end;
    if (marker == 0xDA) {
      while (pos + 1 < size && !(bytes[pos] == 0xFF && bytes[pos + 1] != 0 && (bytes[pos + 1] & 0xF8) != 0xD0)) ++pos;
    }
  }
  return "";
}

}  // namespace tandem::image
