#include "doctor/nvidia_smi.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace switchyard::doctor {

bool nvidia_smi_available() {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/nvidia-smi").c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::optional<NvidiaSmiRun> run_nvidia_smi(const std::string& args) {
  FILE* pipe = ::popen(("nvidia-smi " + args + " 2>&1").c_str(), "r");
  if (!pipe) return std::nullopt;
  NvidiaSmiRun run;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) run.output.append(buffer, n);
  const int status = ::pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string nvidia_smi_topology() {
  const auto run = run_nvidia_smi("topo -m");
  if (!run) return "could not run nvidia-smi topo -m";
  if (run->status != 0)
    return "nvidia-smi topo -m failed (exit status " + std::to_string(run->status) +
           "): " + run->output;
  return run->output;
}

}  // namespace switchyard::doctor
