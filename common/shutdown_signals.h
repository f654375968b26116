// How the daemons stop: SIGINT and SIGTERM are taken synchronously (sigwait) by the main
// thread instead of in a signal handler, so shutdown code may lock, log and join freely.
#ifndef PARATUNE_COMMON_SHUTDOWN_SIGNALS_H_
#define PARATUNE_COMMON_SHUTDOWN_SIGNALS_H_

#include <signal.h>

namespace paratune {

// Blocks SIGINT and SIGTERM in the calling thread and returns that set for sigwait or
// sigtimedwait. Call it in main before any thread starts: threads inherit the mask (gRPC's
// included), so no other thread ever receives them.
sigset_t BlockShutdownSignals();

}  // namespace paratune

#endif  // PARATUNE_COMMON_SHUTDOWN_SIGNALS_H_
