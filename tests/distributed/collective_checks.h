// Checks of a Communicator through its abstract interface only, so that every
// engine (MPI, Gloo, ...) runs the same ones: each rank of a job calls
// RunCollectiveChecks() on its communicator, and the checks' collectives
// match across ranks.
//
//   int failures = kindling::distributed::RunCollectiveChecks(*comm);
//
// Each check prints one line, `PASS name` or `FAIL name: why`. They cover
// AllReduce (sum, average, max) for every reducible dtype at 0, 1, 7 and
// 1000003 elements (and 7000001 f32 elements, over 25 MiB), the tensor
// overloads and the InvalidArgument errors they must return without sending
// anything, Broadcast from the first and the last rank, AllGather and
// Barrier. Values are small integers that depend on rank and index, so the
// expected result is computed exactly on each rank (averages of floats to
// within rounding). 16-bit float sums stay exact up to about 10 ranks.
#ifndef KINDLING_TESTS_DISTRIBUTED_COLLECTIVE_CHECKS_H_
#define KINDLING_TESTS_DISTRIBUTED_COLLECTIVE_CHECKS_H_

#include "kindling/distributed/communicator.h"

namespace kindling::distributed {

// RunCollectiveChecks() runs every check, prints a line for each, and
// returns the number that failed. A check that fails in a collective breaks
// the communicator, so the later ones fail too (FailedPrecondition).
int RunCollectiveChecks(Communicator& comm);

}  // namespace kindling::distributed

#endif  // KINDLING_TESTS_DISTRIBUTED_COLLECTIVE_CHECKS_H_
