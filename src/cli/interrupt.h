// Ctrl-C and SIGTERM during a long run: the first ends the work cleanly (what was found is kept, the summary is
// printed), a second ends the process at once (the handler is reset after the first).
#pragma once

#include <csignal>

namespace grist::cli {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the handlers for SIGINT and SIGTERM
  ~InterruptGuard();  // restores the previous ones
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  static bool requested();       // a signal arrived
  static int signal_number();    // which one (0: none)
};

// Holds SIGINT and SIGTERM back while it lives (they are delivered when it ends), for a step that must
// finish whole or not at all: publishing a file, so a Ctrl-C cannot leave its temporary copy behind.
class SignalsDeferred {
 public:
  SignalsDeferred();
  ~SignalsDeferred();
  SignalsDeferred(const SignalsDeferred&) = delete;
  SignalsDeferred& operator=(const SignalsDeferred&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace grist::cli
