#include "tandem/obs/progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ostream>

namespace tandem {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A terminal redraw faster than this is flicker, not information.
constexpr double kRedrawEvery = 0.1;

}  // namespace

Progress::Progress(std::string label, int64_t total, std::ostream& out, bool redraw, double plain_every_s, Clock clock)
    : label_(std::move(label)),
      total_(total),
      out_(out),
      redraw_(redraw),
      every_s_(plain_every_s),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)),
      start_(clock_()) {}

std::string Progress::duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%lds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
  return buf;
}

std::string Progress::line(int64_t done, const std::string& extra) const {
  const double elapsed = clock_() - start_;
  const double rate = elapsed > 0 ? done / elapsed : 0;
  char buf[160];
  int n = std::snprintf(buf, sizeof buf, "%s %lld/%lld (%.1f%%) %.2f/s", label_.c_str(), static_cast<long long>(done),
                        static_cast<long long>(total_), total_ > 0 ? 100.0 * done / total_ : 0.0, rate);
  std::string out(buf, n);
  out += " elapsed " + duration(elapsed);
  if (rate > 0 && done < total_) out += " ETA " + duration((total_ - done) / rate);
  if (!extra.empty()) out += " | " + extra;
  return out;
}

void Progress::update(int64_t done, const std::string& extra) {
  done_ = done;
  extra_ = extra;
  const double now = clock_();
  const bool last = done >= total_;
  if (!last && now - last_print_ < (redraw_ ? kRedrawEvery : every_s_)) return;
  last_print_ = now;
  const std::string text = line(done, extra);
  if (redraw_) {
    // Pad over the previous, possibly longer, line.
    out_ << '\r' << text << std::string(last_width_ > text.size() ? last_width_ - text.size() : 0, ' ') << std::flush;
    last_width_ = text.size();
  } else {
    out_ << text << '\n' << std::flush;
  }
}

void Progress::finish() {
  if (redraw_) {
    out_ << '\r' << line(done_, extra_) << '\n' << std::flush;
  } else if (last_print_ < clock_() && done_ < total_) {
    out_ << line(done_, extra_) << '\n' << std::flush;
  }
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

bool console_redraws() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (std::getenv(var)) return false;
  return stderr_is_terminal();
}

}  // namespace tandem
