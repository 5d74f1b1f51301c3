#pragma once
// The sample.* keys of `apps/vavae sample`, each declared once
// (tandem/config/settings.h), and the forms its --user-ids flag takes. What
// depends on the data (users in range, a DiT file that exists) is checked by
// the command.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "flow/sampler.h"
#include "tandem/config/settings.h"

namespace vavae {

struct SampleKeys {
  std::string dit_checkpoint;
  std::string output_dir;
  std::vector<int64_t> user_ids;
  int64_t num_samples_per_user = 4;
  int64_t seed = 42;
  double guidance_scale = 4.0;
  int64_t num_steps = 50;
  double shift = 0.3;
  int64_t cfg_channels = 0;
  double cfg_interval_start = 0.125;
  int64_t batch = 16;

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    using tandem::any, tandem::at_least;
    visit("sample.dit_checkpoint", k.dit_checkpoint,
          "the DiT model file; empty: OUT/dit/models/best_model.h5, else final_model.h5", any());
    visit("sample.output_dir", k.output_dir, "where the images go; empty: OUT/samples", any());
    visit("sample.user_ids", k.user_ids, "users (1-based) to generate for; empty: every user", at_least(1));
    visit("sample.num_samples_per_user", k.num_samples_per_user, "images per user", at_least(1));
    visit("sample.seed", k.seed, "seed of the starting noise (image i of user u gets the same on any ranks)", any());
    visit("sample.guidance_scale", k.guidance_scale, "classifier-free guidance scale; 1: no guidance", any());
    visit("sample.num_steps", k.num_steps, "Euler steps from noise to data", at_least(1));
    visit("sample.shift", k.shift, "timestep shift s: t' = s t / (1 + (s - 1) t)", tandem::above(0));
    visit("sample.cfg_channels", k.cfg_channels, "guide only the first N latent channels (upstream: 3); 0: all",
          at_least(0));
    visit("sample.cfg_interval_start", k.cfg_interval_start, "no guidance while t is below this",
          tandem::in_range(0, 1));
    visit("sample.batch", k.batch, "images per rank per sampler pass", at_least(1));
  }
};

// The sampler these keys describe, for a DiT whose unconditional label is
// `null_class`. Throws UsageError as SamplerOptions::validate.
SamplerOptions sampler_options(const SampleKeys& keys, int64_t null_class);

// The users' sample script took `--user-ids 1 2 3`, several values after one
// flag, which the shared command line (one value per flag) cannot take. The
// key sample.user_ids is a TOML list; this rewrites the arguments so that
// `--user-ids 1 2 3`, `--user-ids 1,2,3`, `--user-ids=1,2,3` and
// `--user-ids "[1, 2, 3]"` all become `--user-ids "[1, 2, 3]"`. Values
// follow the flag up to the next argument starting with "--" or naming one
// of `commands`.
std::vector<std::string> join_user_ids(const std::vector<std::string>& args, const std::set<std::string>& commands);

}  // namespace vavae
