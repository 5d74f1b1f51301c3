#include "app/sample_keys.h"

#include <sstream>

namespace vavae {

std::vector<std::string> join_user_ids(const std::vector<std::string>& args, const std::set<std::string>& commands) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool inline_value = arg.rfind("--user-ids=", 0) == 0;
    if (arg != "--user-ids" && !inline_value) {
      out.push_back(arg);
      continue;
    }
    std::vector<std::string> values;
    if (inline_value)
      values.push_back(arg.substr(arg.find('=') + 1));
    else
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0 && !commands.count(args[i + 1]))
        values.push_back(args[++i]);
    std::string list;
    for (std::string v : values) {
      for (char& ch : v)
        if (ch == '[' || ch == ']' || ch == ',') ch = ' ';
      std::istringstream words(v);
      for (std::string w; words >> w;) list += (list.empty() ? "" : ", ") + w;
    }
    out.push_back("--user-ids");
    out.push_back("[" + list + "]");
  }
  return out;
}

SamplerOptions sampler_options(const SampleKeys& keys, int64_t null_class) {
  SamplerOptions o;
  o.num_steps = keys.num_steps;
  o.shift = keys.shift;
  o.guidance_scale = keys.guidance_scale;
  o.cfg_channels = keys.cfg_channels;
  o.cfg_interval_start = keys.cfg_interval_start;
  o.null_class = null_class;
  o.validate();
  return o;
}

}  // namespace vavae
