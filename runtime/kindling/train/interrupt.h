// Stopping training loops cleanly: Ctrl-C (SIGINT), and the preemption
// notices schedulers send before they kill a job — SIGTERM (Slurm,
// Kubernetes, torchrun, systemd) and SIGUSR1 (Slurm's `--signal` warning) —
// only set a flag, which the loop checks between steps to save a checkpoint
// and stop. A second SIGINT gets the default action (the process ends at
// once), for a loop stuck inside a long step.
//
//   kindling::train::InstallInterruptHandler();
//   while (...) {
//     Step();
//     if (kindling::train::InterruptRequested()) { Save(); break; }
//   }
//   return kindling::train::InterruptSignal() == SIGINT ? 130
//                                                       : kPreemptedExitCode;
//
// A flag rather than work in the handler: saving allocates and writes files,
// which a signal handler must not do.
#ifndef KINDLING_TRAIN_INTERRUPT_H_
#define KINDLING_TRAIN_INTERRUPT_H_

namespace kindling::train {

// kPreemptedExitCode: what the examples exit with after a SIGTERM or
// SIGUSR1 stop saved a checkpoint (EX_TEMPFAIL: "try again", so a job
// script can tell a preempted run, to requeue with --resume, from a failed
// one).
inline constexpr int kPreemptedExitCode = 75;

// InstallInterruptHandler() routes SIGINT, SIGTERM and SIGUSR1 to the flag
// (idempotent).
void InstallInterruptHandler();

// InterruptRequested() is true once one of them arrived (or
// RequestInterrupt()).
bool InterruptRequested();

// InterruptSignal() is the first signal that set the flag (SIGINT, SIGTERM,
// SIGUSR1), 0 when none did (RequestInterrupt() records SIGINT).
int InterruptSignal();

// RequestInterrupt() sets the flag as SIGINT does (tests; a UI's stop
// button).
void RequestInterrupt();

// ClearInterrupt() resets the flag and re-arms the handlers.
void ClearInterrupt();

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_INTERRUPT_H_
