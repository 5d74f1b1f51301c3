#pragma once
// The layout the users' data comes in: data_split/{train,val}/user{N}/ with
// the images of person N (1-based) inside. The number of users is the
// highest N, so a user missing from val keeps its label; anything else in
// the split folder, or a user folder without images, is refused, since a
// silently skipped person would shift what every later stage learns.
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/config/settings.h"

namespace vavae {

// The data.* keys, each declared once (tandem/config/settings.h).
struct DataKeys {
  std::string root = "data_split";
  int64_t image_size = 256;
  bool hflip = false;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("data.root", k.root,
          "folder with train/ and val/, each holding user1, user2, ... folders of .png/.jpg/.jpeg images",
          tandem::a_name());
    visit("data.image_size", k.image_size, "images are resized to this many pixels square", tandem::at_least(1));
    visit("data.hflip", k.hflip,
          "flip training images horizontally at random (off: a flipped spectrogram reverses time)", tandem::any());
  }
};

struct ImageItem {
  std::string path;
  int64_t user_id = 0;  // 1-based, as in the folder name; the label is user_id - 1
};

struct ImageSplit {
  std::string folder;
  std::vector<ImageItem> items;  // by user, then by file name
  int64_t num_users = 0;         // the highest user id found
};

// True for names ending in .png, .jpg or .jpeg (any case).
bool is_image_name(const std::string& name);

// Scans `root`/`split`. Throws tandem::UsageError naming the folder for a
// missing folder, a sub-folder not named user<N> with N >= 1, a file beside
// the user folders, or a user folder without images; `key` (data.root) is
// named in the message.
ImageSplit scan_split(const std::string& root, const std::string& split, const std::string& key);

// data.root's train/ and val/, each scanned as above.
struct TrainVal {
  ImageSplit train, val;
};
TrainVal scan_train_val(const DataKeys& data);

}  // namespace vavae
