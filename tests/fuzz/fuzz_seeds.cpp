// fuzz_seeds OUT [JOBS_DIR]: writes the seed inputs of every fuzz target into
// OUT/<target>/, each made by a writer users' files come from (tandem's own,
// libxlsxwriter, stb) or typed as users' tools write them, and valid unless
// its name says otherwise. JOBS_DIR's summarize job files seed the config
// target too. Mutating valid files reaches deeper than random bytes would.
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "app/latent_file.h"
#include "image_fixtures.h"
#include "stb_image_write.h"
#include "tandem/data/csv.h"
#include "tandem/image/write_png.h"
#include "tandem/io/checkpoint.h"
#include "tandem/io/safetensors.h"
#include "xlsx_fixture.h"

namespace {

namespace fs = std::filesystem;
fs::path out_dir;

fs::path seed_path(const std::string& target, const std::string& name) {
  fs::create_directories(out_dir / target);
  return out_dir / target / name;
}

void put(const std::string& target, const std::string& name, const std::string& bytes) {
  std::ofstream(seed_path(target, name), std::ios::binary | std::ios::trunc) << bytes;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void csv_seeds() {
  put("csv", "plain.csv", "id,dialogue,summary\n1,hello there,greeting\n2,bye,farewell\n");
  put("csv", "quoted.csv", "id,dialogue\r\n1,\"a, b\"\r\n2,\"line one\nline \"\"two\"\"\"\r\n");
  put("csv", "bom_blank_lines.csv", "\xEF\xBB\xBFid,text\n\n1,x\n\n2,y");
  put("csv", "bad_field_count.csv", "a,b\n1,2,3\n4,5\n");
  put("csv", "bad_stray_quote.csv", "a,b\n1,x\"y\n");
  put("csv", "bad_open_quote.csv", "a,b\n1,\"never closed\n");
  tandem::write_csv(seed_path("csv", "written.csv").string(), {"id", "summary"},
                    {{"7", " leading space"}, {"8", "comma, inside"}, {"9", ""}});
}

void config_seeds(const std::string& jobs_dir) {
  if (!jobs_dir.empty())
    for (const auto& entry : fs::directory_iterator(jobs_dir))
      if (entry.path().filename().string().rfind("summarize", 0) == 0) put("config", entry.path().filename(), slurp(entry.path()));
  put("config", "tables.toml",
      "[train]\nlr = 3e-4\nbatch_size = 8\nprecision = \"bf16\"\n[model]\npreset = 'tiny'\n[dist]\ntimeout_s = 60\n");
  put("config", "dotted_and_args.toml",
      "train.epochs = 2\ntrain.warmup_steps = 10 # a comment\n#--args\n--set\ntrain.lr=1e-3\n--batch-size\n4\n--\ndata\n");
  put("config", "bad_type.toml", "[train]\nlr = \"fast\"\n");
  put("config", "bad_unknown_key.toml", "[train]\nlearning_rate = 1\n");
  put("config", "bad_syntax.toml", "[train\nlr = = 1\n");
}

void label_sheet_seeds() {
  using carotid::testing::Formula;
  using carotid::testing::XSheet;
  const fs::path xlsx = out_dir / "labels.xlsx";
  carotid::testing::write_xlsx(xlsx.string(), {XSheet{"labels", {{std::string("id"), std::string("label")},
                                                                   {1.0, 0.0},
                                                                   {2.0, 1.0},
                                                                   {std::string("007"), Formula{"=1", 1.0}}}},
                                               XSheet{"other", {{std::string("x")}}}});
  put("label_sheet", "shared_strings.xlsx", "\x01" + slurp(xlsx));
  carotid::testing::write_xlsx(xlsx.string(),
                               {XSheet{"Sheet1", {{std::string("person"), std::string("class")},
                                                  {std::string("12"), std::string("benign")},
                                                  {12.5, std::string("malignant")}}}},
                               /*inline_strings=*/true);
  put("label_sheet", "inline_strings.xlsx", "\x01" + slurp(xlsx));
  fs::remove(xlsx);
  put("label_sheet", "labels.csv", std::string("\x00", 1) + "id,label\n1,0\n2,1\n3,1\n");
  put("label_sheet", "bad_twice.csv", std::string("\x00", 1) + "id,label\n1,0\n1,1\n");
}

void safetensors_seeds() {
  tandem::NamedTensors tensors = {
      {"wte.weight", torch::arange(12, torch::kFloat).view({3, 4})},
      {"h.0.ln.bias", torch::ones({4}, torch::kHalf)},
      {"steps", torch::tensor({1, 2}, torch::kLong)},
      {"mask", torch::tensor({true, false, true})},
      {"scale", torch::tensor(0.5, torch::kBFloat16)},
  };
  tandem::write_safetensors(seed_path("safetensors", "model.safetensors").string(), tensors, {{"format", "pt"}});
  tandem::write_safetensors(seed_path("safetensors", "one.safetensors").string(),
                            {{"x", torch::tensor({1.5}, torch::kDouble)}});
}

void hf_config_seeds() {
  put("hf_config", "gpt2.json",
      R"({"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
  "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
  "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "vocab_size": 50257})");
  put("hf_config", "tiny.json",
      R"({"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1, "n_positions": 16, "n_inner": null,
  "vocab_size": 300, "tie_word_embeddings": true, "scale_attn_weights": true})");
  put("hf_config", "bad_model_type.json", R"({"model_type": "llama", "n_embd": 8})");
}

void bpe_seeds() {
  put("bpe", "dialogue.txt", "#Person1#: Hi, how're you doing? I'm fine.\n#Person2#: Great!  See you at 5:30.\n");
  put("bpe", "special.txt", "summary<|endoftext|>next <|endoftext");
  put("bpe", "unicode.txt", "na\xC3\xAFve caf\xC3\xA9 \xF0\x9F\x98\x80 \xE4\xB8\xAD\xE6\x96\x87   \t\r\n");
  put("bpe", "not_utf8.txt", "ok \xFF\xFE half \xE4\xB8 end \xC0\x80");
  put("bpe", "digits_and_spaces.txt", "1234567890 12,345.67          x's 'll 've");
}

void image_seeds() {
  using tandem::testing::interleaved;
  using tandem::testing::pattern;
  tandem::image::write_png(seed_path("image", "gray.png").string(), pattern(1, 6, 5));
  tandem::image::write_png(seed_path("image", "rgb.png").string(), pattern(3, 4, 7));
  const std::vector<uint8_t> rgba = interleaved(pattern(4, 3, 3)), gray_alpha = interleaved(pattern(2, 3, 2));
  stbi_write_png(seed_path("image", "rgba.png").c_str(), 3, 3, 4, rgba.data(), 12);
  stbi_write_png(seed_path("image", "gray_alpha.png").c_str(), 2, 3, 2, gray_alpha.data(), 4);
  const std::vector<uint8_t> rgb = interleaved(pattern(3, 8, 8));
  stbi_write_jpg(seed_path("image", "rgb.jpg").c_str(), 8, 8, 3, rgb.data(), 90);
  stbi_write_bmp(seed_path("image", "rgb.bmp").c_str(), 8, 8, 3, rgb.data());
  put("image", "gray16.png", tandem::testing::png16(3, 2, 1, {0, 1, 257, 12345, 65534, 65535}));
  put("image", "rgb16.png", tandem::testing::png16(2, 1, 3, {65535, 0, 0, 1000, 2000, 3000}));
}

void h5_seeds() {
  // The model fuzz_h5 restores into: fc, a Linear(3, 2).
  const tandem::NamedTensors model = {{"fc.weight", torch::arange(6, torch::kFloat).view({2, 3})},
                                      {"fc.bias", torch::zeros({2})}};
  tandem::save_checkpoint(seed_path("h5", "checkpoint.h5").string(),
                          {{"model", model}, {"optim", {{"fc.weight.exp_avg", torch::ones({2, 3})}}}},
                          {{"step", int64_t{7}}, {"loss_scale", 1024.0}, {"config", std::string("[vae]\nlr = 0.001\n")}});
  tandem::save_checkpoint(seed_path("h5", "model_without_config.h5").string(), {{"model", model}}, {});
  tandem::save_checkpoint(seed_path("h5", "bad_shape.h5").string(),
                          {{"model", {{"fc.weight", torch::zeros({3, 2})}, {"fc.bias", torch::zeros({2})}}}}, {});
  tandem::save_checkpoint(seed_path("h5", "bad_dtype_and_missing.h5").string(),
                          {{"model", {{"fc.weight", torch::zeros({2, 3}, torch::kLong)}}}},
                          {{"config", std::string("[vae]\nno_such_key = 1\n")}});
  vavae::LatentSet latents;
  latents.latents = torch::arange(2 * 2 * 2 * 2, torch::kFloat).view({2, 2, 2, 2});
  latents.user_ids = torch::tensor({1, 2}, torch::kLong);
  latents.num_users = 2;
  latents.image_size = 16;
  latents.vae_path = "vae.h5";
  latents.vae_hash = "0123456789abcdef";
  latents.vae_preset = "tiny";
  latents.mean = torch::zeros({2});
  latents.std = torch::ones({2});
  vavae::write_latents(seed_path("h5", "latents.h5").string(), latents);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: fuzz_seeds OUT [JOBS_DIR]\n";
    return 2;
  }
  out_dir = argv[1];
  fs::remove_all(out_dir);
  csv_seeds();
  config_seeds(argc > 2 ? argv[2] : "");
  label_sheet_seeds();
  safetensors_seeds();
  hf_config_seeds();
  bpe_seeds();
  image_seeds();
  h5_seeds();
  std::cout << "fuzz seeds written to " << out_dir.string() << "\n";
  return 0;
}
