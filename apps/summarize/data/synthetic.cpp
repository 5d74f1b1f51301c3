#include "data/synthetic.h"

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/random.h"

namespace summarize {
namespace {

const std::vector<std::string> kNames = {"Anna",   "Ben",   "Carla", "David", "Emma", "Frank", "Grace",
                                         "Henry",  "Irene", "Jack",  "Kate",  "Liam", "Maria", "Nick",
                                         "Olivia", "Paul",  "Rosa",  "Sam",   "Tina", "Victor"};
const std::vector<std::string> kEvents = {"dinner",           "a movie",
                                          "the concert",      "football practice",
                                          "a job interview",  "the dentist appointment",
                                          "a birthday party", "the book club",
                                          "yoga class",       "a picnic",
                                          "the science fair", "a team meeting"};
const std::vector<std::string> kPlaces = {
    "the Italian restaurant", "the cinema", "the park",        "the library",       "the office", "the gym",
    "the train station",      "the museum", "the coffee shop", "the community hall"};
const std::vector<std::string> kDays = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
const std::vector<std::string> kTimes = {"9 am", "10 am", "noon", "2 pm", "4 pm", "6 pm", "7 pm", "8 pm"};

// The same corpus on every platform and library, unlike the standard
// distributions would give.
struct Rng {
  tandem::SplitMix64 engine;
  uint64_t below(uint64_t n) { return tandem::below(engine, n); }
  const std::string& pick(const std::vector<std::string>& v) { return v[below(v.size())]; }
};

Example make_example(Rng& rng, const std::string& id) {
  const std::string a = rng.pick(kNames);
  std::string b = rng.pick(kNames);
  while (b == a) b = rng.pick(kNames);
  const std::string event = rng.pick(kEvents), place = rng.pick(kPlaces);
  const std::string day = rng.pick(kDays), time = rng.pick(kTimes);
  std::string day2 = rng.pick(kDays);
  while (day2 == day) day2 = rng.pick(kDays);

  Example e;
  e.id = id;
  switch (rng.below(4)) {
    case 0:
      e.dialogue = "#Person1#: Hi " + b + ", are you free on " + day + "?\n" + "#Person2#: I think so. What's up, " +
                   a + "?\n" + "#Person1#: Would you like to come to " + event + " with me? It's at " + place +
                   ".\n#Person2#: Sure. What time?\n#Person1#: At " + time + ".\n#Person2#: Great, see you there.";
      e.summary = a + " invites " + b + " to " + event + " at " + place + " on " + day + " at " + time + ".";
      break;
    case 1:
      e.dialogue = "#Person1#: " + b + ", I'm sorry, but I can't make it to " + event + " on " + day +
                   ".\n#Person2#: Oh no. Can we move it?\n#Person1#: How about " + day2 + " at " + time + " at " +
                   place + "?\n#Person2#: That works for me, " + a + ".";
      e.summary = a + " cancels " + event + " on " + day + " and " + b + " agrees to meet at " + place + " on " + day2 +
                  " at " + time + ".";
      break;
    case 2:
      e.dialogue = "#Person1#: Excuse me, where is " + event + " this " + day + "?\n#Person2#: It's at " + place +
                   ", starting at " + time + ".\n#Person1#: Thank you. I'm " + a +
                   ", by the way.\n#Person2#: Nice to meet "
                   "you, " +
                   a + ". I'm " + b + ".";
      e.summary = b + " tells " + a + " that " + event + " is at " + place + " on " + day + " at " + time + ".";
      break;
    default:
      e.dialogue = "#Person1#: " + a + " here. Did you book " + place + " for " + event + "?\n#Person2#: Yes, " + b +
                   " booked it for " + day +
                   ".\n#Person1#: What "
                   "time does it start?\n#Person2#: It starts at " +
                   time + ".";
      e.summary = b + " booked " + place + " for " + event + " on " + day + ", starting at " + time + ".";
      break;
  }
  return e;
}

std::vector<Example> make_split(Rng& rng, const std::string& prefix, int n) {
  std::vector<Example> out;
  for (int i = 0; i < n; ++i) out.push_back(make_example(rng, prefix + std::to_string(i)));
  return out;
}

}  // namespace

Corpus synthetic_corpus(int train_size, int val_size, int test_size) {
  Rng rng{tandem::SplitMix64(20241121)};
  Corpus c;
  c.train = make_split(rng, "train_", train_size);
  c.val = make_split(rng, "val_", val_size);
  c.test = make_split(rng, "test_", test_size);
  for (auto& e : c.test) e.summary.clear();
  c.origin = "built-in demo";
  return c;
}

std::string first_line(const std::string& dialogue) { return dialogue.substr(0, dialogue.find('\n')); }

}  // namespace summarize
