#pragma once
// A file's fingerprint, for a run that keeps a reference to a large file
// rather than a copy of it: a LoRA checkpoint names the frozen base it was
// trained on by the checksum of the base's weights file, and a resume or an
// evaluation against any other base stops at the door.
#include <string>

namespace tandem {

// The CRC-64 of the file's bytes, as xz computes it (CRC-64/XZ: the ECMA-182
// polynomial, reflected, all ones in and out), as "crc64:" and 16 lowercase
// hex digits. A check against the wrong file, not against tampering. Reads
// the whole file, a byte at a time through Boost's table: 0.31 GB/s on the
// 2-core CI machine (gpt2-xl's 6.2 GB, about 20 s); throws UsageError naming
// the file when it cannot be read.
std::string file_crc64(const std::string& path);

}  // namespace tandem
