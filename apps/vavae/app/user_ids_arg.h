#pragma once
// The users' sample script took `--user-ids 1 2 3`, several values after one
// flag, which the shared command line (one value per flag) cannot take. The
// key sample.user_ids is a TOML list; this rewrites the arguments so that
// `--user-ids 1 2 3`, `--user-ids 1,2,3`, `--user-ids=1,2,3` and
// `--user-ids "[1, 2, 3]"` all become `--user-ids "[1, 2, 3]"`.
#include <set>
#include <string>
#include <vector>

namespace vavae {

// Values follow the flag up to the next argument starting with "--" or
// naming one of `commands`.
std::vector<std::string> join_user_ids(const std::vector<std::string>& args, const std::set<std::string>& commands);

}  // namespace vavae
