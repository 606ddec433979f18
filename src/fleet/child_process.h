// A supervised engine process: started through /bin/sh in a process group of
// its own (so stopping it stops whatever it spawned), with stdout and stderr
// on one pipe for the supervisor to log.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

#include "common/result.h"

namespace switchyard::fleet {

class ChildProcess {
 public:
  // Runs `command` with `/bin/sh -c`, the current environment plus `env`.
  static Result<ChildProcess> spawn(const std::string& command,
                                    const std::map<std::string, std::string>& env);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();  // closes the pipe; does not stop the process

  pid_t pid() const { return pid_; }
  // Read end of the child's combined stdout/stderr; owned by this object.
  int output_fd() const { return output_fd_; }
  // Hands the pipe to the caller, who then closes it.
  int release_output_fd();

  // Signals the whole process group.
  void signal(int sig) const;
  // Non-blocking reap: true (and the exit status) once the process has ended.
  bool try_wait(int& status);

 private:
  ChildProcess(pid_t pid, int fd) : pid_(pid), output_fd_(fd) {}
  pid_t pid_ = -1;
  int output_fd_ = -1;
};

// A readable description of a wait status: "exited with status 1",
// "killed by signal 9 (Killed)".
std::string describe_exit(int status);

}  // namespace switchyard::fleet
