// `nvidia-smi topo -m`, NVIDIA's own view of which GPUs can reach each other
// how (NV#, PIX, PXB, PHB, NODE, SYS). Doctor shows it verbatim when the
// command exists; it is optional and never run by the tests.
#pragma once

#include <optional>
#include <string>

namespace switchyard::doctor {

// True when an executable `nvidia-smi` is on PATH.
bool nvidia_smi_available();

// The matrix, or a line saying why it could not be produced.
std::string nvidia_smi_topology();

// `nvidia-smi ARGS` run through the shell (stderr with stdout): its exit
// status and output; nullopt when it could not be started.
struct NvidiaSmiRun {
  int status = 0;  // the exit status; -1 when it did not exit
  std::string output;
};
std::optional<NvidiaSmiRun> run_nvidia_smi(const std::string& args);

}  // namespace switchyard::doctor
