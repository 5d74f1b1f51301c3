// The one translation unit that compiles stb's decoder and PNG writer; every
// other file includes the headers for declarations only, so the library holds
// one copy of each.
#define STB_IMAGE_IMPLEMENTATION
// Only the formats tandem promises; the others would be untested attack surface
// for files users bring.
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#include "stb_image.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "stb_image_write.h"
