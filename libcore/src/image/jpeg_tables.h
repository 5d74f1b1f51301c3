#pragma once
// A check stb cannot be trusted to make on the JPEG files users bring.
#include <cstddef>
#include <string>

namespace tandem::image {

// Why the JPEG in `bytes` must not reach stb, or "" when it may (also for
// files that are not JPEG, and for damage stb itself refuses). Debian 12's
// stb (2022-09) builds a Huffman table from a DHT segment whose 16 code
// counts sum past 256 by writing past its 257-entry array; upstream refused
// such tables from 2.28 on. Found by tests/fuzz (fuzz_image).
std::string unsafe_jpeg_reason(const unsigned char* bytes, size_t size);

}  // namespace tandem::image
