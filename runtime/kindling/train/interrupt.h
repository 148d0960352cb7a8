// Ctrl-C for training loops: the first SIGINT only sets a flag, which the
// loop checks between steps to save a checkpoint and stop cleanly; a second
// SIGINT gets the default action (the process ends at once).
//
//   kindling::train::InstallInterruptHandler();
//   while (...) {
//     Step();
//     if (kindling::train::InterruptRequested()) { Save(); break; }
//   }
//
// A flag rather than work in the handler: saving allocates and writes files,
// which a signal handler must not do.
#ifndef KINDLING_TRAIN_INTERRUPT_H_
#define KINDLING_TRAIN_INTERRUPT_H_

namespace kindling::train {

// InstallInterruptHandler() routes SIGINT to the flag (idempotent).
void InstallInterruptHandler();

// InterruptRequested() is true once SIGINT arrived (or RequestInterrupt()).
bool InterruptRequested();

// RequestInterrupt() sets the flag as SIGINT does (tests; a UI's stop button).
void RequestInterrupt();

// ClearInterrupt() resets the flag and re-arms the handler.
void ClearInterrupt();

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_INTERRUPT_H_
