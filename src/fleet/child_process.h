// A supervised engine process: started through /bin/sh in a process group of
// its own (so stopping it stops whatever it spawned), with stdout and stderr
// on one pipe for the supervisor to log. The gateway is made a child
// subreaper, so engines orphaned by their shell are still reaped here.
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
  // Reaps what has ended in the group, without blocking. True (and the
  // shell's exit status) once the shell itself has ended.
  bool try_wait(int& status);
  // Whether any process of the group is still running. The shell may exit
  // on SIGTERM while the engine it started runs on, so stopping waits for this.
  bool group_alive();

 private:
  ChildProcess(pid_t pid, int fd) : pid_(pid), pgid_(pid), output_fd_(fd) {}
  pid_t pid_ = -1;   // the shell; -1 once it has been reaped
  pid_t pgid_ = -1;  // the group, which outlives the shell while the engine runs
  int output_fd_ = -1;
};

// A readable description of a wait status: "exited with status 1",
// "killed by signal 9 (Killed)".
std::string describe_exit(int status);

}  // namespace switchyard::fleet
