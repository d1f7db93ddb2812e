#include "cli/interrupt.h"

#include <csignal>

namespace grist::cli {

namespace {

volatile std::sig_atomic_t g_signal = 0;
struct sigaction g_previous_int, g_previous_term;

void on_signal(int sig) { g_signal = sig; }

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // the second signal takes the default action: the process ends at once
  sigaction(SIGINT, &sa, &g_previous_int);
  sigaction(SIGTERM, &sa, &g_previous_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

bool InterruptGuard::requested() { return g_signal != 0; }
int InterruptGuard::signal_number() { return g_signal; }

SignalsDeferred::SignalsDeferred() {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, &previous_);
}

SignalsDeferred::~SignalsDeferred() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

}  // namespace grist::cli
