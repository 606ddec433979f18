// The log as a file or pipe receives it: lines collect in the C library's
// stdout buffer and go out in one write when it fills or on flush, instead
// of one write(2) per line (an access-log line per request was a measurable
// share of the gateway's cost, docs/performance.md). Warnings and errors are
// written at once. The owner flushes periodically so quiet periods show up.
#pragma once

namespace switchyard {

// Makes the default logger write to stdout this way, with the same line format.
void use_buffered_stdout_log();

}  // namespace switchyard
