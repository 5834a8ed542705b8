// The front end's stop check (see front_end_stop.hpp).
#include "msl/errors/front_end_stop.hpp"

#include "metalcall/interrupt.hpp"

namespace metalcall::msl {

namespace {

struct StopState {
  bool (*check)() = nullptr;
  unsigned calls = 0;
};
thread_local StopState t_stop;

}  // namespace

FrontEndStopScope::FrontEndStopScope(bool (*check)()) : previous_(t_stop.check) { t_stop.check = check; }

FrontEndStopScope::~FrontEndStopScope() { t_stop.check = previous_; }

void poll_front_end_stop() {
  StopState& s = t_stop;
  if (!s.check || (++s.calls & 1023u) != 0) return;
  if (s.check()) throw Interrupted();
}

}  // namespace metalcall::msl
