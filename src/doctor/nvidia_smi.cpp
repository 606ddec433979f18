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

std::string nvidia_smi_topology() {
  FILE* pipe = ::popen("nvidia-smi topo -m 2>&1", "r");
  if (!pipe) return "could not run nvidia-smi topo -m";
  std::string output;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    return "nvidia-smi topo -m failed (exit status " +
           std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : status) + "): " + output;
  }
  return output;
}

}  // namespace switchyard::doctor
